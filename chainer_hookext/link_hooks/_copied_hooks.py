"""A copied hook, added again by each holding link at its first call:
Chainer calls no ``added`` on a copied link's hooks (docs/debugging.md,
"Copies"); instance attributes stand over the class's methods until then.
"""

import weakref

from chainer_hookext import _observer


class Waiting:
    """``expected``: links still to call the copy; ``added``: those that
    added it (at a call or by ``add_hook``)."""

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
        hook = self.hook
        link = args.link
        if link not in self.added and not hook.in_thread:
            # Not in the thread: only a link holding the copy calls it.
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
        type(self.hook).added(self.hook, link)
        if link is not None:
            self.added.add(link)

    def delete(self, link):
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
        """``state`` for a copy of the copy: still expected links counted."""
        self._put_back(state)
        state['held_by_links'] = state.get('held_by_links', 0) + (
            self.expected)
        state['waiting'] = None
        return state

    def _put_back(self, attributes):
        # A method put there since (use_method: a timer's on a GPU) stays.
        for name in ('added', 'deleted'):
            attributes.pop(name, None)
        if attributes.get('forward_preprocess') == self.forward_preprocess:
            del attributes['forward_preprocess']
            if self._forward_preprocess is not None:
                attributes['forward_preprocess'] = self._forward_preprocess
