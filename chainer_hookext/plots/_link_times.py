"""A TimedLinks' whole-run figures as JSON values."""


def link_times(timed):
    """Returns a :class:`~chainer_hookext.TimedLinks`' whole-run figures
    by link name as JSON values (``link_times.json``).

    Returns:
        dict: ``'links'``; with ``functions=True``, ``'functions'``; with
        ``flops=True``, ``'peaks'``, ``'roofline'`` (``{name: {'forward':
        point or None, 'backward': ...}}``) and ``'unknown_functions'``.
    """
    out = {'links': timed.summary(by='name')}
    if timed.functions:
        out['functions'] = timed.function_summary()
    if timed.flops:
        points = timed.roofline(by='name')  # sets the peaks if need be
        out['peaks'] = timed.roofline_.peaks._asdict()
        out['roofline'] = {
            name: {way: None if point is None else point._asdict()
                   for way, point in link._asdict().items()}
            for name, link in points.items()}
        out['unknown_functions'] = timed.unknown_functions(by='name')
    return out
