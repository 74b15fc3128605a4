import os

import pytest

from chainer_hookext import _files
from chainer_hookext import plots
from tests.conftest import PNG_SIGNATURE


def small_figure():
    return plots.loop_time([{'epoch': 1, 'time/loop/iteration': 0.01,
                             'time/loop/data': 0.01}])


def test_png():
    data = plots.png(small_figure())
    assert data.startswith(PNG_SIGNATURE)
    # 7 x 4.2 inches at 100 dots per inch: IHDR's width and height.
    assert int.from_bytes(data[16:20], 'big') == 700
    assert int.from_bytes(data[20:24], 'big') == 420


def test_save(tmp_path):
    path = tmp_path / 'loop_time.png'
    figure = small_figure()
    plots.save(figure, str(path))
    assert path.read_bytes() == plots.png(figure)
    assert os.listdir(tmp_path) == ['loop_time.png']


class Broken(Exception):
    pass


def test_save_drawing_fails(tmp_path):
    # Nothing is written when the figure cannot be drawn.
    path = tmp_path / 'picture.png'
    path.write_bytes(b'old')
    figure = small_figure()
    figure.axes[0].text(0, 0, 'x').draw = raise_broken
    with pytest.raises(Broken):
        plots.save(figure, str(path))
    assert path.read_bytes() == b'old'
    assert os.listdir(tmp_path) == ['picture.png']


@pytest.mark.parametrize('where', ['write', 'replace'])
def test_save_writing_fails(tmp_path, monkeypatch, where):
    # A write or a rename that fails leaves the old file, and no other.
    path = tmp_path / 'picture.png'
    path.write_bytes(b'old')
    if where == 'replace':
        monkeypatch.setattr(os, 'replace', raise_broken)
    else:
        monkeypatch.setattr(_files, 'open', half_open, raising=False)
    with pytest.raises(Broken):
        plots.save(small_figure(), str(path))
    assert path.read_bytes() == b'old'
    assert os.listdir(tmp_path) == ['picture.png']


class HalfFile(object):
    """A file whose ``write`` writes half of the data, then fails."""

    def __init__(self, f):
        self.f = f

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.f.close()

    def write(self, data):
        self.f.write(data[:len(data) // 2])
        raise Broken


def half_open(path, mode):
    return HalfFile(open(path, mode))


def raise_broken(*args, **kwargs):
    raise Broken
