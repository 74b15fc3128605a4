class NonFiniteError(FloatingPointError):
    """A hooked link produced NaN or Inf (raised by
    :class:`~chainer_hookext.link_hooks.NonFiniteHook`).

    Attributes:
        link (str): Name of the link, e.g. ``'main/predictor/l1'``.
        iteration (int): The iteration, or ``None`` when unknown.
        phase (str): ``'forward'`` or ``'backward'``.
        output (str): Which value: ``'output'``, ``'output[0]'`` ... in
            forward; ``'gradient w.r.t. output 0 of LinearFunction'`` in
            backward.
        kind (str): ``'NaN'``, ``'Inf'`` or ``'NaN and Inf'``.
        hint (str): In backward, the backward step run just before.
    """

    def __init__(self, link, iteration, phase, output, kind, hint=''):
        self.link = link
        self.iteration = iteration
        self.phase = phase
        self.output = output
        self.kind = kind
        self.hint = hint
        at = '' if iteration is None else ' at iteration {}'.format(
            iteration)
        super().__init__('{} in the {} of link {!r}{}: {}{}'.format(
            kind, phase, link, at, output, '; ' + hint if hint else ''))

    def __reduce__(self):
        return type(self), (self.link, self.iteration, self.phase,
                            self.output, self.kind, self.hint)
