"""The links a picture names: at most :data:`TOP`, the rest drawn as one
``N others``."""

#: The most entries a legend names: past it, ``TOP - 1`` and one others.
TOP = 20
OTHERS_COLOUR = 'lightgray'


def largest(sizes, top=TOP):
    """Returns ``sizes``' names: all up to ``top``, else ``top - 1``."""
    if len(sizes) <= top:
        return list(sizes)
    kept = set(sorted(sizes, key=lambda name: -sizes[name])[:top - 1])
    return [name for name in sizes if name in kept]


def others(count):
    return f'{count} others'
