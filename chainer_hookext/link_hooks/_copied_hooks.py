"""A copy of a hook that links held: added again by each link, at its call.

The package's hooks set up their part of the thread in ``added`` (the
running links, the node tagger, the pauses' listeners) and let go of it in
``deleted``; a pickle or a copy holds none of it (:mod:`chainer_hookext.
_copies`).  A copy of a link (``copy.deepcopy``, ``pickle``,
``link.copy(mode='copy')``) holds copies of its hooks, and Chainer calls
no ``added`` on them.

So the copy of a hook that links held (``held_by_links``) waits for them
(:class:`Waiting`): the first call of each link holding it does what
Chainer's ``added(link)`` does, before the hook's own
``forward_preprocess``; ``deleted(link)`` of a link that never called it
does nothing.  The copy cannot be added at unpickling: it does not know
which links hold it.  A copy of part of the model holds it on fewer links
than the original; ``Chain.copy(mode='copy')`` copies each child twice,
and the first copy of a child's hook is held by no link.  Added at
unpickling, such a copy would stay in the thread's parts for good.

While it waits, the copy's ``forward_preprocess``, ``added`` and
``deleted`` are instance attributes over its class's; they are taken out
once every link expected has called it or was deleted.  The original's
methods are never touched.
"""

import weakref

from chainer_hookext import _observer

#: The hook's methods a waiting copy replaces, on the copy only.
METHODS = ('forward_preprocess', 'added', 'deleted')


class Waiting:
    """The links a copy of a hook waits for (see the module).

    Args:
        hook (~chainer_hookext.link_hooks.ScopedLinkHook): The copy.
        links (int): How many links are expected to hold it.

    Attributes:
        expected (int): The links still to call it.
        added (weakref.WeakSet): The links it was added by (at a call, or
            by Chainer's ``add_hook``), whose next calls add nothing.
    """

    def __init__(self, hook, links):
        self.hook = hook
        self.expected = links
        self.added = weakref.WeakSet()
        attributes = vars(hook)
        # a method already over the class's (a timer's on a GPU) stays
        self._forward_preprocess = attributes.get('forward_preprocess')
        attributes.update(forward_preprocess=self.forward_preprocess,
                          added=self.add, deleted=self.delete)

    def forward_preprocess(self, args):
        """The copy's ``forward_preprocess``: added by a link holding it at
        its first call, then the hook's own."""
        hook = self.hook
        link = args.link
        if link not in self.added and not hook.in_thread:
            # Not registered in the thread: only a link holding the copy
            # calls it.
            self.added.add(link)
            type(hook).added(hook, link)
            self.expected -= 1
            if self.expected <= 0:
                self.end()
        method = self._forward_preprocess
        if method is None:
            method = type(hook).forward_preprocess.__get__(hook)
        method(args)

    def add(self, link):
        """The copy's ``added``: Chainer's ``add_hook`` added it."""
        type(self.hook).added(self.hook, link)
        if link is not None:
            self.added.add(link)

    def delete(self, link):
        """The copy's ``deleted``: nothing for a link that never called
        it, the hook's own for one that added it."""
        hook = self.hook
        if link is None or link in self.added:
            self.added.discard(link)
            type(hook).deleted(hook, link)
            return
        self.expected -= 1
        if self.expected <= 0:
            self.end()

    def end(self):
        """Gives the copy its own methods back."""
        self._put_back(vars(self.hook))
        self.hook.waiting = None
        _observer.changed(self.hook)

    def state(self, state):
        """Returns ``state`` (the copy's attributes) as a copy of it holds
        them: the links still expected in its count, none of this
        object's methods."""
        self._put_back(state)
        state['held_by_links'] = state.get('held_by_links', 0) + (
            self.expected)
        state['waiting'] = None
        return state

    def _put_back(self, attributes):
        # The hook's own methods in its attributes (or a copy of them); a
        # method put there since (use_method: a timer's on a GPU) stays.
        for name in ('added', 'deleted'):
            attributes.pop(name, None)
        if attributes.get('forward_preprocess') == self.forward_preprocess:
            del attributes['forward_preprocess']
            if self._forward_preprocess is not None:
                attributes['forward_preprocess'] = self._forward_preprocess
