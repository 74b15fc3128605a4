"""The links whose forward is running in a thread, with their names.

A link hook keeps the stack: ``enter(link, name)`` in its
``forward_preprocess``, ``leave(link)`` in its ``forward_postprocess``.
:attr:`ActiveLinks.names` is the tuple of their names, outermost first: an
immutable tuple shared by all function nodes tagged under the same links
(:mod:`~chainer_hookext._tagging`), so tagging allocates
nothing per node.
"""


class ActiveLinks(object):
    """Stack of the links whose forward is running, with their names.

    Attributes:
        names (tuple of str): Names of the entered links, outermost first;
            ``()`` when none is running.
    """

    def __init__(self):
        self._ids = []
        self.names = ()

    def enter(self, link, name=None):
        """Pushes ``link``; returns its name.

        Args:
            link (~chainer.Link): The link whose forward starts.
            name (str): Its name.  ``None`` derives one: the enclosing
                entered link's name, ``'/'`` and ``link.name``, or
                ``link.name`` / the class name when nothing encloses it
                (``'MLP'``, ``'MLP/l1'``).
        """
        if name is None:
            child = link.name
            if child is None:
                name = type(link).__name__
            elif self.names:
                name = self.names[-1] + '/' + child
            else:
                name = child
        self._ids.append(id(link))
        self.names = self.names + (name,)
        return name

    def leave(self, link):
        """Pops ``link``; returns its name, or ``None`` if it was not entered.

        Entries above ``link`` (links whose forward raised, so never left)
        are dropped with it.
        """
        ids = self._ids
        key = id(link)
        if ids and ids[-1] == key:
            ids.pop()
            name = self.names[-1]
            self.names = self.names[:-1]
            return name
        if key not in ids:
            return None
        depth = len(ids) - 1 - ids[::-1].index(key)
        name = self.names[depth]
        del ids[depth:]
        self.names = self.names[:depth]
        return name

    def reset(self):
        """Forgets every entered link."""
        del self._ids[:]
        self.names = ()
