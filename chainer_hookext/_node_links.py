"""Which link's forward created a function node.

A link hook sees links; a function hook sees :class:`~chainer.FunctionNode`
objects, in forward and again in backward.  To say in backward which link a
node belongs to, the two are joined here:

* :class:`ActiveLinks` is the stack of the links whose forward is running in
  a thread, kept by a link hook: ``enter(link, name)`` in its
  ``forward_preprocess``, ``leave(link)`` in its ``forward_postprocess``.
  :attr:`ActiveLinks.names` is the tuple of their names, outermost first.
* :class:`NodeTagger` is a :class:`chainer.FunctionHook` that, in each
  ``forward_preprocess``, tags the node with the current
  :attr:`ActiveLinks.names` (an immutable tuple shared by all nodes created
  under the same links: no allocation per node).  In backward,
  :meth:`NodeTagger.links_of` answers the tag; ``links_of(node)[-1]`` is the
  innermost link.

The tag is an attribute of the node itself, private to the tagger instance,
so it lives and dies with the node: the tagger keeps neither nodes nor links
alive, and has nothing to clear.  Links are held by ``id`` only while their
forward runs.

Use from a link hook (``added`` / ``deleted`` answer each other)::

    class MyTagger(_node_links.NodeTagger):
        def backward_preprocess(self, function, in_data, out_grad):
            names = self.links_of(function)   # () when created outside
            ...

    active = _node_links.ActiveLinks()
    tagger = MyTagger(active, name='MyHook')
    # LinkHook.added:   tagger.register()
    # forward_pre:      active.enter(link, name)
    # forward_post:     name = active.leave(link)
    # LinkHook.deleted: tagger.unregister(); active.reset()
"""

import itertools

import chainer

from chainer_hookext import _registry


_serial = itertools.count()


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


class NodeTagger(chainer.FunctionHook):
    """Function hook that tags nodes with the links entered in ``active``.

    Subclasses override ``backward_preprocess`` / ``backward_postprocess``
    and call :meth:`links_of` there; a subclass overriding
    ``forward_preprocess`` must call this one.

    Args:
        active (ActiveLinks): The stack kept by the link hook.
        name (str): Base of the name under which :meth:`register` puts the
            tagger among the thread's function hooks.
    """

    name = 'NodeTagger'

    def __init__(self, active, name=None):
        self.active = active
        if name is not None:
            self.name = name
        self._attr = '_hookext_links_{}'.format(next(_serial))
        self._count = 0
        self._registered = None  # (registry, key)

    def forward_preprocess(self, function, in_data):
        names = self.active.names
        if names:
            function.__dict__[self._attr] = names

    def links_of(self, function):
        """Returns the names of the links that created ``function``.

        Returns:
            tuple of str: Outermost first; ``()`` for a node created outside
            every entered link (or by another tagger).
        """
        return function.__dict__.get(self._attr, ())

    def register(self):
        """Registers the tagger in the calling thread's function hooks.

        Counted: each call needs one :meth:`unregister`.  The key is
        :attr:`name`, or ``name + '_1'`` ... when taken.
        """
        self._count += 1
        if self._registered is None:
            self._registered = _registry.add(
                chainer.get_function_hooks(), self)

    def unregister(self):
        """Answers one :meth:`register`; removes the tagger on the last one."""
        if self._count > 0:
            self._count -= 1
        if self._count or self._registered is None:
            return
        handle, self._registered = self._registered, None
        _registry.remove(handle, self)
