"""Link hooks of chainer_hookext, usable with or without a trainer."""

from chainer_hookext.link_hooks.activation_statistics import ActivationStatisticsHook  # NOQA
from chainer_hookext.link_hooks.callback import CallbackHook  # NOQA
from chainer_hookext.link_hooks.capture_outputs import CaptureOutputsHook  # NOQA
from chainer_hookext.link_hooks.gradient_statistics import GradientStatisticsHook  # NOQA
from chainer_hookext.link_hooks.non_finite import NonFiniteHook  # NOQA
from chainer_hookext.link_hooks.non_finite_error import NonFiniteError  # NOQA
from chainer_hookext.link_hooks.scoped_link_hook import ScopedLinkHook  # NOQA
from chainer_hookext.link_hooks.timer import TimerHook  # NOQA
