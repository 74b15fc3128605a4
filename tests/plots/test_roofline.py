import json

from chainer_hookext import plots
from tests.conftest import assert_png


def point(flops, intensity, rate):
    return {'flops': flops, 'bytes': flops / intensity, 'seconds': 1.0,
            'rate': rate, 'intensity': intensity, 'percent': 10.0,
            'bound': 'memory'}


def link_times():
    """``link_times.json``'s shape, read back from JSON."""
    return json.loads(json.dumps({
        'links': {},
        'peaks': {'flops': 1e11, 'bandwidth': 2e10},
        'roofline': {
            '/': {'forward': point(100, 10.0, 1e9),
                  'backward': point(200, 12.0, 2e9)},
            '/predictor/l1': {'forward': point(50, 2.0, 5e8),
                              'backward': None},
            '/predictor/<Linear>': {'forward': point(0, 1.0, 0.0),
                                    'backward': None},
            '(outside)': {'forward': None,
                          'backward': point(10, 1.0, 1e8)}},
        'unknown_functions': {}}))


def test_points():
    figure = plots.roofline(link_times())
    ax, = figure.axes
    assert ax.get_xscale() == ax.get_yscale() == 'log'
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ['/ (forward)', '/ (backward)',
                      '/predictor/l1 (forward)']
    assert len(ax.collections) == 3
    ceiling = ax.lines[0].get_ydata()
    assert max(ceiling) == 1e11  # the compute peak
    assert_png(figure)


def test_no_roofline():
    assert plots.roofline({'links': {}}) is None
    data = link_times()
    data['roofline'] = {'/': {'forward': None, 'backward': None}}
    assert plots.roofline(data) is None
