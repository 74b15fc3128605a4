"""The base of the package's link hooks: each filters links and modes
itself (docs/internals.md, "Why hooks are registered globally, and
filtered")."""

import typing

import chainer

from chainer_hookext import _chainer
from chainer_hookext import _checks
from chainer_hookext import _registry
from chainer_hookext.link_hooks import _copied_hooks


class ScopedLinkHook(chainer.LinkHook):
    """Base class of link hooks that filter links and modes themselves.

    It acts only on the links and in the modes of :meth:`set_scope`, which
    narrow its own ``train`` / ``eval``.  Subclasses read :attr:`link_names`
    and :attr:`config_train` or call :meth:`in_scope`, and call this class's
    ``added`` and ``deleted`` (docs/debugging.md, "Copies").

    Args:
        train (bool): Act while ``chainer.config.train`` is true.
        eval (bool): Act while ``chainer.config.train`` is false.

    Attributes:
        link_names (dict): ``{id(link): name}`` in scope, or ``None``: all.
        config_train: The modes it acts in, its own and the scope's
            combined: ``None`` (both), ``True`` (training) or ``False``.
        own_modes (Modes): Its own ``(train, eval)``; ``scope_modes``, the
            last :meth:`set_scope`'s.
        held_by_links (int): Links holding it; ``in_thread``, its
            registrations in the thread (``with hook:``, an extension).

    .. admonition:: Example

        >>> from chainer_hookext import CallbackHook
        >>> hook = CallbackHook(print, train=False)  # evaluation only
        >>> hook.set_scope(None, train=True, eval=True)
        >>> hook.config_train  # still evaluation only
        False
        >>> hook.set_scope(None, train=True, eval=False)
        Traceback (most recent call last):
        ...
        ValueError: `CallbackHook.set_scope(train=True, eval=False)` leaves \
no mode to act in: ...
    """

    name = 'ScopedLinkHook'
    link_names = None
    config_train = None
    own_modes = _checks.Modes(True, True)
    scope_modes = _checks.Modes(True, True)
    held_by_links = 0
    in_thread = 0
    #: A copy's :class:`~._copied_hooks.Waiting` for the links holding it.
    waiting = None

    def __init__(self, *, train: bool = True, eval: bool = True) -> None:
        self.own_modes = _checks.Modes(
            *_checks.check_modes(type(self).__name__, train, eval))
        self.config_train = _combined_mode(self.own_modes, self.scope_modes)

    def set_scope(self, link_names: typing.Optional[
                      typing.Mapping[int, str]] = None,
                  train: bool = True, eval: bool = True) -> None:
        """Sets the links and modes this hook acts on; the modes narrow the
        hook's own (a later call may widen them back).

        Args:
            link_names (dict): ``{id(link): name}`` of the links to act on,
                or ``None`` for every link.
            train (bool): Allow acting while ``chainer.config.train``.
            eval (bool): Allow acting while not ``chainer.config.train``;
                a ``ValueError`` when the two leave no mode of the hook's.
        """
        call = type(self).__name__ + '.set_scope'
        scope = _checks.check_modes(call, train, eval)
        mode = _combined_mode(self.own_modes, scope)
        if mode is _NO_MODE:
            own = self.own_modes
            raise ValueError(
                f'`{call}(train={train!r}, eval={eval!r})` leaves no mode '
                f'to act in: the hook itself acts only with '
                f'train={own.train!r}, eval={own.eval!r}, and a scope '
                'narrows those modes, never widens them.  Allow a mode the '
                'hook allows (e.g. in LinkHookExtension), or make the hook '
                'with the modes wanted.')
        self.link_names = None if link_names is None else dict(link_names)
        self.scope_modes = scope
        self.config_train = mode

    def added(self, link: typing.Optional[chainer.Link]) -> None:
        """Counts where the hook is registered: ``link`` or the thread."""
        if link is None:
            self.in_thread += 1
        else:
            self.held_by_links += 1

    def deleted(self, link: typing.Optional[chainer.Link]) -> None:
        """Counts where the hook is no longer registered."""
        if link is None:
            self.in_thread = max(self.in_thread - 1, 0)
        else:
            self.held_by_links = max(self.held_by_links - 1, 0)

    def __getstate__(self):
        # A copy is registered nowhere: links holding it add it again
        # (_copied_hooks), the thread never.
        state = dict(vars(self))
        state['in_thread'] = 0
        return state if self.waiting is None else self.waiting.state(state)

    def __setstate__(self, state):
        vars(self).update(state)
        if self.held_by_links:
            links, self.held_by_links = self.held_by_links, 0
            self.waiting = _copied_hooks.Waiting(self, links)

    _with = None  # the registration of ``with hook:``, while in it

    def __enter__(self):
        """Registers the hook in the thread as ``chainer_hookext.<name>``."""
        if self._with is not None:
            raise RuntimeError(
                f'{type(self).__name__}: `with hook:` entered again inside '
                'itself; a hook is registered once.')
        self._with = _registry.add(_chainer.link_hooks(), self)
        return self

    def __exit__(self, *exc_info):
        handle, self._with = self._with, None
        _registry.remove(handle, self)

    def in_scope(self, link: chainer.Link) -> bool:
        """Returns whether ``link`` is in scope in the current mode."""
        names = self.link_names
        if names is not None and id(link) not in names:
            return False
        mode = self.config_train
        return mode is None or mode == _chainer.is_train()


_NO_MODE = object()


def _combined_mode(own, scope):
    # config_train: the modes both allow.
    train = own.train and scope.train
    eval = own.eval and scope.eval
    if train and eval:
        return None
    if train or eval:
        return train
    return _NO_MODE
