import typing


class NonFiniteError(FloatingPointError):
    """A hooked link produced NaN or Inf (raised by
    :class:`~chainer_hookext.link_hooks.NonFiniteHook`).

    Attributes:
        link (str): Name of the link, e.g. ``'main/predictor/l1'``.
        iteration (int): The iteration, or ``None`` when unknown.  In
            evaluation, the last update before it.
        phase (str): ``'forward'`` or ``'backward'``.
        output (str): Which value: ``'output[0]'``, ``'gradient w.r.t.
            output 0 of LinearFunction'``, ``'gradient w.r.t. parameter W'``.
        kind (str): ``'NaN'``, ``'Inf'`` or ``'NaN and Inf'``.
        hint (str): Where to look (docs/debugging.md, "`NonFiniteGuard`").
        param (str): Full name of the parameter involved, or ``None``.
        mode (str): ``'training'`` or ``'evaluation'``.

    >>> print(NonFiniteError('main/l1', 4, 'forward', 'output', 'NaN',
    ...                      mode='evaluation'))
    NaN in the forward of link 'main/l1' in evaluation after iteration 4: \
output
    """

    def __init__(self, link: str, iteration: typing.Optional[int],
                 phase: str, output: str, kind: str, hint: str = '',
                 param: typing.Optional[str] = None,
                 mode: str = 'training') -> None:
        self.link = link
        self.iteration = iteration
        self.phase = phase
        self.output = output
        self.kind = kind
        self.hint = hint
        self.param = param
        self.mode = mode
        if mode == 'evaluation':
            at = ' in evaluation' + ('' if iteration is None else
                                     f' after iteration {iteration}')
        else:
            at = '' if iteration is None else f' at iteration {iteration}'
        hint = '; ' + hint if hint else ''
        super().__init__(
            f'{kind} in the {phase} of link {link!r}{at}: {output}{hint}')

    def __reduce__(self):
        return type(self), (self.link, self.iteration, self.phase,
                            self.output, self.kind, self.hint, self.param,
                            self.mode)
