"""The base of the extensions that own a link hook for the length of
training (docs/internals.md, "The lifecycle of `LinkHookExtension`")."""

import itertools
import typing
import warnings
import weakref

import chainer
from chainer.link_hooks import spectral_normalization
from chainer.link_hooks import weight_standardization
from chainer.training import extension

from chainer_hookext import _chainer
from chainer_hookext import _checks
from chainer_hookext import _registry
from chainer_hookext import _state
from chainer_hookext.link_hooks import scoped_link_hook
from chainer_hookext.report import link_names
from chainer_hookext.run import scope_filter
from chainer_hookext.run import training_loop


# {hook: extension} registered or waiting, to refuse a second owner.
_owners = weakref.WeakKeyDictionary()


class LinkHookExtension(extension.Extension):
    """Trainer extension that owns a link hook for the length of training.

    The hook is registered when ``Trainer.run`` enters its loop, acts on
    the model's links (or ``links``) only, and is removed on every way out
    (docs/internals.md, "The lifecycle of `LinkHookExtension`").

    Args:
        hook (chainer.LinkHook): The hook to own.
        links (~chainer.Link or list of ~chainer.Link): Sub-trees to hook;
            each must be a link of one of the updater's optimizers' targets.
            ``None`` (default) hooks the ``main`` optimizer's target.
        train (bool): Fire the hook while ``chainer.config.train`` is true.
        eval (bool): Fire the hook while ``chainer.config.train`` is false,
            e.g. inside :class:`~chainer.training.extensions.Evaluator`.

    .. admonition:: Example

        >>> from chainer_hookext import CallbackHook, LinkHookExtension
        >>> calls = []
        >>> hook = CallbackHook(
        ...     posthook=lambda link, args, kwargs, out: calls.append(link))
        >>> trainer.extend(LinkHookExtension(hook, train=True, eval=False))
    """

    trigger = 1, 'iteration'
    priority = extension.PRIORITY_READER

    def __init__(self, hook: chainer.LinkHook, links: typing.Union[
                     None, chainer.Link, typing.Sequence[chainer.Link]] = None,
                 *, train: bool = True, eval: bool = True) -> None:
        call = type(self).__name__
        if not isinstance(hook, chainer.LinkHook):
            raise TypeError(
                f'`{call}(hook={hook!r})` needs a chainer.LinkHook '
                'instance, e.g. chainer.link_hooks.TimerHook() or '
                'chainer_hookext.CallbackHook(...).')
        if isinstance(hook, _PER_LINK_HOOKS):
            raise TypeError(
                f'`{call}(hook={hook!r})`: {type(hook).__name__} changes '
                'the weights of the link it is added to and needs that link '
                f'in `added(link)`, while {call} registers its hook for the '
                'whole thread (Chainer then calls `added(None)`), for the '
                'length of training only.  It is part of the model: add it '
                'with `link.add_hook(hook)`.')
        self.train, self.eval = _checks.check_modes(call, train, eval)
        self.hook = hook
        self.links = as_links(call, links)
        self._entry = None  # the TrainingLoop, from initialize to the end
        self._pending = None  # the hook to register when the loop starts
        self._registered = None  # (handle, registered hook)
        self._iteration = None

    @property
    def default_name(self) -> str:
        return f'LinkHookExtension_{self.hook.name}'

    @property
    def registered_name(self) -> typing.Optional[str]:
        """The key of the hook in the thread's registry while registered."""
        return None if self._registered is None else self._registered[0][1]

    def initialize(self, trainer: chainer.training.Trainer) -> None:
        training_loop.end_loops_left_running()
        self.release()
        call = type(self).__name__
        owner = _owners.get(self.hook)
        if owner is not None and owner._holds(trainer):
            raise ValueError(
                f'{call}: hook {self.hook!r} is already owned by the trainer '
                f'extension {owner.name or owner!r}; give each extension its '
                'own hook instance.')
        registry = _chainer.link_hooks()
        if any(h is self.hook for h in itertools.chain(
                registry.values(), _registry.registered(registry).values())):
            raise ValueError(
                f'{call}: hook {self.hook!r} is already registered globally '
                '(a `with hook:` block?); let the extension register it, or '
                'do not wrap it.')
        names = self.scope_link_names(trainer)
        hook = self.hook
        if not isinstance(hook, scoped_link_hook.ScopedLinkHook):
            hook = scope_filter.ScopeFilter(hook, hook.name)
        hook.set_scope(names, train=self.train, eval=self.eval)
        _owners[self.hook] = self
        self._pending = hook
        self._iteration = trainer.updater.iteration
        self._entry = training_loop.TrainingLoop.install(
            trainer, self._register, self.release)

    def scope_link_names(self, trainer: chainer.training.Trainer
                         ) -> typing.Dict[int, str]:
        """``{id(link): name}`` of the links this extension hooks."""
        return scope_link_names(type(self).__name__, self.links, trainer)

    def _holds(self, trainer):
        return self._registered is not None or (
            self._entry is not None and self._entry.trainer is trainer)

    def _register(self):
        hook, self._pending = self._pending, None
        if hook is None:
            return
        try:
            handle = _registry.add(_chainer.link_hooks(), hook)
        except BaseException:
            _owners.pop(self.hook, None)
            raise
        self._registered = handle, hook

    def registered_hook(self) -> typing.Optional[chainer.LinkHook]:
        """The hook while it is registered, else ``None``."""
        return None if self._registered is None else self._registered[1]

    def release(self) -> None:
        """Unregisters the hook, forgets the loop; safe to call many times."""
        entry, self._entry = self._entry, None
        self._pending = None
        if entry is not None:
            entry.discard(self._register)
        registered, self._registered = self._registered, None
        if _owners.get(self.hook) is self:
            del _owners[self.hook]
        if registered is not None:
            _registry.remove(*registered)

    def __call__(self, trainer: chainer.training.Trainer) -> None:
        pass

    def on_error(self, trainer: chainer.training.Trainer,
                 exc: BaseException, tb: typing.Any) -> None:
        self.release()

    def finalize(self) -> None:
        entry = self._entry
        try:
            if entry is not None:
                trainer = entry.trainer
                if entry.waiting and trainer is not None and (
                        trainer.updater.iteration != self._iteration):
                    warnings.warn(
                        f'{self.name or type(self).__name__}: the training '
                        f'loop ran, but its hook {self.hook.name!r} was '
                        "never registered: Trainer.run's first call of "
                        'trainer.stop_trigger was not seen (was '
                        'trainer.stop_trigger replaced after this '
                        "extension's initialize?).",
                        RuntimeWarning)
                entry.end()  # every release, should one raise
        finally:
            self.release()

    def serialize(self, serializer: chainer.AbstractSerializer) -> None:
        """Saves or restores the hook's state (``hook.serialize``, when it
        has one) under the key ``hook``; a snapshot without it warns."""
        serialize = getattr(self.hook, 'serialize', None)
        if serialize is None:
            return
        if not _state.is_loading(serializer):
            serialize(serializer['hook'])
            return
        try:
            serialize(_state.child(serializer, 'hook'))
        except KeyError as e:  # _state.MissingState, or the hook's own
            warnings.warn(
                f'{self.name or self.default_name}: the snapshot has no '
                f'state for hook {self.hook.name!r} ({e}); it was probably '
                'taken before this extension was added.  Starting the hook '
                'fresh.',
                RuntimeWarning)


def scope_link_names(call, links, trainer):
    """``{id(link): name}`` of ``links`` (``None``: the ``main`` target)
    and their descendants, named as the reporter does."""
    model = link_names.model_link_names(trainer)
    optimizers = trainer.updater.get_all_optimizers()
    if links is None:
        if 'main' not in optimizers:
            raise ValueError(
                f'{call}: the updater has no `main` optimizer (it has '
                f'{sorted(optimizers)!r}); name the links to hook with '
                '`links=`.')
        links = (optimizers['main'].target,)
    names = {}
    for root in links:
        if id(root) not in model:
            raise ValueError(
                f'{call}(links=...): {root!r} is not part of the model; pass '
                "links of the optimizers' targets "
                f"({', '.join(sorted(optimizers))}).")
        for _, link in root.namedlinks():
            names[id(link)] = model[id(link)][0]
    return names


# Chainer's hooks needing their link in added(link).
_PER_LINK_HOOKS = (spectral_normalization.SpectralNormalization,
                   weight_standardization.WeightStandardization)


def as_links(call, links):
    if links is None:
        return None
    if isinstance(links, chainer.Link):
        return (links,)
    try:
        as_tuple = tuple(links)
    except TypeError:
        as_tuple = ()
    if not as_tuple or not all(isinstance(x, chainer.Link) for x in as_tuple):
        raise TypeError(
            f'`{call}(links={links!r})` is not a link: pass a chainer.Link, '
            "a list of links of the model, or None for the `main` "
            "optimizer's target.")
    return as_tuple
