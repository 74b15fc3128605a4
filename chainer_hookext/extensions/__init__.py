"""Trainer extensions of chainer_hookext."""

from chainer_hookext.extensions.activation_statistics import ActivationStatistics  # NOQA
from chainer_hookext.extensions.capture_outputs import CaptureOutputs  # NOQA
from chainer_hookext.extensions.gradient_statistics import GradientStatistics  # NOQA
from chainer_hookext.extensions.non_finite_guard import NonFiniteGuard  # NOQA
from chainer_hookext.extensions.timed_links import TimedLinks  # NOQA
from chainer_hookext.extensions.timed_loop import TimedLoop  # NOQA
from chainer_hookext.extensions.timeline import Timeline  # NOQA
from chainer_hookext.extensions.unchain_variables import UnchainVariables  # NOQA
from chainer_hookext.run.link_hook_extension import LinkHookExtension  # NOQA
