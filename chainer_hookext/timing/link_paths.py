"""The path of each timed link: ``/``, ``/predictor/l1``, ``/#2``
(docs/timing.md, "`TimerHook`: in place of `chainer.link_hooks.TimerHook`").
"""


class LinkPaths(dict):
    """Paths of links, ``{link: path}``, held only while a timer is
    registered."""

    def __init__(self):
        super().__init__()
        self._owners = {}  # {root path: root}

    def add_root(self, root, path='/', override=True):
        """Indexes ``root`` and its descendants, ``root`` at ``path`` (or
        ``path#2`` ... if another root has it); returns ``root``'s path.
        With ``override``, re-indexes links that already have a path."""
        if self.get(root) is not None and not override:
            return self[root]
        base, n = path, 1
        while self._owners.get(path, root) is not root:
            n += 1
            path = f'{base}#{n}'
        self._owners[path] = root
        parent = path.rstrip('/')
        for sub, link in root.namedlinks():
            if override or link not in self:
                self[link] = path if sub == '/' else parent + sub
        return path

    def refresh(self):
        """Indexes links added since: ``(link, parent, suffix)`` per new one.
        """
        added = []
        for path, root in list(self._owners.items()):
            parent = path.rstrip('/')
            at = {}  # {sub path: link}
            for sub, link in root.namedlinks():
                at[sub] = link
                if link not in self:
                    self[link] = parent + sub
                    up, name = sub.rsplit('/', 1)
                    added.append((link, at[up or '/'], '/' + name))
        return added

    def clear(self):
        super().clear()
        self._owners.clear()
