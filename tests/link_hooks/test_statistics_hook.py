"""What the statistics hooks share: the choice of statistics, checked."""

import pytest

from chainer_hookext import ActivationStatistics
from chainer_hookext import ActivationStatisticsHook
from chainer_hookext import GradientStatistics
from chainer_hookext import GradientStatisticsHook


class MyActivations(ActivationStatisticsHook):
    pass


class MyGradients(GradientStatisticsHook):
    pass


@pytest.mark.parametrize('cls', [
    ActivationStatisticsHook, MyActivations, ActivationStatistics,
    GradientStatisticsHook, MyGradients, GradientStatistics])
@pytest.mark.parametrize('bad, error', [
    ('median', ValueError), ((), ValueError), (('mean', 'p99'), ValueError),
    (3, TypeError), (('mean', 3), TypeError)])
def test_bad_statistics_named_by_their_class(cls, bad, error):
    with pytest.raises(error, match=r'`{}\(statistics=.*pass a non-empty'
                                    .format(cls.__name__)):
        cls(statistics=bad)


@pytest.mark.parametrize('cls', [ActivationStatisticsHook,
                                 GradientStatisticsHook])
def test_every_statistic_by_default(cls):
    assert cls().statistics_names == cls.STATISTICS


@pytest.mark.parametrize('cls', [ActivationStatisticsHook, MyActivations,
                                 GradientStatisticsHook, MyGradients])
@pytest.mark.parametrize('flag', ['train', 'eval'])
def test_flags_need_true_or_false(cls, flag):
    with pytest.raises(TypeError, match=r"`{}\({}='yes'\)` is not a "
                                        'flag'.format(cls.__name__, flag)):
        cls(**{flag: 'yes'})
