import json

import pytest

import chainer_hookext
from chainer_hookext import plots
from tests.conftest import make_trainer


# The peaks are given: nothing measured, nothing raised.
PEAKS = dict(peak_flops=1e15, peak_bandwidth=1e15)


@pytest.mark.parametrize('functions,flops', [
    (False, False), (True, False), (True, True)])
def test_link_times(tmp_path, functions, flops):
    trainer = make_trainer(tmp_path)
    timed = chainer_hookext.TimedLinks(functions=functions, flops=flops,
                                       **(PEAKS if flops else {}))
    trainer.extend(timed)
    trainer.run()
    out = json.loads(json.dumps(plots.link_times(timed)))
    expected = ['links'] + ['functions'] * functions + [
        'peaks', 'roofline', 'unknown_functions'] * flops
    assert sorted(out) == sorted(expected)
    assert out['links']['main/predictor/l1']['occurrence'] == 4
    if functions:
        assert out['functions']['LinearFunction']['occurrence'] == 8
    if flops:
        assert out['peaks'] == {'flops': 1e15, 'bandwidth': 1e15}
        assert out['roofline']['main/predictor/l1']['forward']['flops'] > 0
        assert plots.roofline(out) is not None
