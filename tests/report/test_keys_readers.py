"""Readers ask report/keys.py for keys; one collective gathers figures."""

import pathlib
import re

import chainer_hookext
from chainer_hookext.profile import compare
from chainer_hookext.profile import findings
from chainer_hookext.profile import run as run_module
from chainer_hookext.report import gather
from chainer_hookext.report import keys
from chainer_hookext.timing import phases
from tests.conftest import FakeComm

PACKAGE = pathlib.Path(chainer_hookext.__file__).parent


def test_loop_key_of_each_figure():
    assert keys.loop_key(keys.ITERATION) == 'time/loop/iteration'
    assert keys.loop_key(keys.tail_figure('p90')) == 'time/loop/iteration/p90'
    assert keys.loop_key(keys.phase_figure(
        phases.ExtensionPhase('LogReport'))) == 'time/loop/extension/LogReport'


def test_spread_keys_need_every_statistic():
    entry = {'time/main': 2.0, 'time/main/max': 3.0,
             'time/main/min': 1.0, 'time/main/slowest_rank': 1,
             'time/x': 1.0, 'time/x/max': 5.0}
    assert keys.spread_keys(entry) == {
        'time/main/max', 'time/main/min', 'time/main/slowest_rank'}
    assert compare.figures(entry) == {
        'time/main': 2.0, 'time/x': 1.0, 'time/x/max': 5.0}


def test_loop_shares_are_figures_not_the_tail():
    run = run_module.Run('/result', [{
        'iteration': 10, 'time/loop/iteration': 0.5, 'time/loop/data': 0.25,
        'time/loop/iteration/max': 2.0, 'time/loop/slowest': 7}],
        {'config': {'trainer_extensions': []}}, [])
    assert findings.loop_shares(run) == {'iteration': 1.0, 'data': 0.5}


def test_spread_observation_keys_each_name():
    got = gather.spread_observation(
        [{'data': 1.0}, {'data': 3.0}], keys.loop_key)
    assert got == {'time/loop/data': 2.0, 'time/loop/data/min': 1.0,
                   'time/loop/data/max': 3.0,
                   'time/loop/data/slowest_rank': 1}


def test_collect_is_the_root_s_list():
    assert gather.collect(FakeComm(0, ['theirs']), 'mine') == [
        'mine', 'theirs']
    assert gather.collect(FakeComm(1, ['root']), 'mine') is None


def sources():
    for path in sorted(PACKAGE.rglob('*.py')):
        yield path.relative_to(PACKAGE).as_posix(), path.read_text()


def test_one_gather_across_ranks():
    callers = [name for name, text in sources() if 'gather_obj(' in text]
    assert callers == ['report/gather.py']


def test_loop_keys_built_in_keys_only():
    joined = re.compile(r'LOOP_PREFIX\s*\+|time/loop/\'\s*\+')
    builders = [name for name, text in sources() if joined.search(text)]
    assert builders == ['report/keys.py']
