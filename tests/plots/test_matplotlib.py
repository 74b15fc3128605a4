import builtins
import sys

import pytest

from chainer_hookext import plots


MESSAGE = ('chainer_hookext.plots needs matplotlib: '
           'pip install chainer-hookext[plot]')

CALLS = [
    ('link_time', ([], ['main'])),
    ('loop_time', ([],)),
    ('memory', ([], ['main'])),
    ('roofline', ({},)),
    ('functions', ({},)),
    ('timeline', ('missing.json.gz',)),
]


def without_modules(monkeypatch):
    # ``import matplotlib`` fails when its entry in sys.modules is None.
    for name in list(sys.modules):
        if name == 'matplotlib' or name.startswith('matplotlib.'):
            monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, 'matplotlib', None)


def without_import(monkeypatch):
    real = builtins.__import__

    def refuse(name, *args, **kwargs):
        if name == 'matplotlib' or name.startswith('matplotlib.'):
            raise ModuleNotFoundError('No module named {!r}'.format(name))
        return real(name, *args, **kwargs)
    monkeypatch.setattr(builtins, '__import__', refuse)


@pytest.mark.parametrize('missing', [without_modules, without_import])
@pytest.mark.parametrize('name,args', CALLS)
def test_without_matplotlib(monkeypatch, missing, name, args):
    missing(monkeypatch)
    with pytest.raises(ImportError) as info:
        getattr(plots, name)(*args)
    assert str(info.value) == MESSAGE
    assert isinstance(info.value.__cause__, ImportError)


def test_data_without_matplotlib(monkeypatch, tmp_path):
    # What needs no drawing works without it.
    without_modules(monkeypatch)
    assert plots.first_trace(str(tmp_path)) is None
