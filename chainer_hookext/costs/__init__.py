"""What a function node costs: FLOPs and bytes (issue #22's counting)."""
