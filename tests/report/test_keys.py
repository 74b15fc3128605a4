import pytest

from chainer_hookext.report import keys
from chainer_hookext.timing import phases
from chainer_hookext.timing import records


def test_every_figure_is_a_field_of_an_entry():
    assert {f.field for f in keys.FIGURES} <= set(records.FIELDS)


def test_figures_of_a_report():
    entry = records.Entry(
        key='main/l1', parent='main', elapsed_time=4.0, self_time=3.0,
        occurrence=2, backward_time=2.0, backward_self_time=1.0)
    outside = records.empty_entry(keys.OUTSIDE)._replace(
        backward_time=0.5, backward_self_time=0.5)
    report = keys.Report('train', 2, [entry, outside])
    assert keys.figures(report, backward=True) == {
        'time/main/l1': 4.0, 'time/main/l1/self': 3.0,
        'time/main/l1/backward': 2.0, 'time/main/l1/backward/self': 1.0,
        'time/(outside)/backward': 0.5}
    assert keys.figures(report._replace(entries=[entry]), False) == {
        'time/main/l1': 4.0, 'time/main/l1/self': 3.0}
    assert keys.figures(keys.Report('eval', 1, [entry]), True) == {
        'validation/time/main/l1': 4.0, 'validation/time/main/l1/self': 3.0}


def test_phase_figures():
    assert keys.phase_figure(phases.DATA) == 'data'
    assert keys.phase_figure(
        phases.ExtensionPhase('validation')) == 'extension/validation'


@pytest.mark.parametrize('names, backward, spread, match', [
    (['main', 'main/self'], False, False,
     r"'main/self' would report `time/main/self`, the self time of 'main'; "
     r"rename the link or leave it out with `links=`\.$"),
    # The child first: still the child is named.
    (['main/backward', 'main'], True, False,
     r"'main/backward' would report `time/main/backward`, the backward time "
     r"of 'main'; .*pass `backward=False`"),
    (['main', 'main/slowest_rank'], False, True,
     r"`time/main/slowest_rank`, the slowest rank over workers of the "
     r"elapsed time of 'main'"),
])
def test_colliding_names_are_refused(names, backward, spread, match):
    with pytest.raises(ValueError, match=match):
        keys.check_link_names('TimedLinks', names, backward, spread)


@pytest.mark.parametrize('names, backward, spread', [
    (['main', 'main/backward'], False, True),
    (['main', 'main/max'], True, False),
    (['self', 'self/l1', 'max'], True, True),
])
def test_names_that_collide_with_nothing(names, backward, spread):
    keys.check_link_names('TimedLinks', names, backward, spread)
