"""Chainer trainer extensions that own link hooks: per-link timing, graph
release and debugging hooks whose lifetime is exactly that of ``Trainer.run``
(docs/internals.md, "Layout").
"""

from chainer_hookext._version import __version__  # NOQA
from chainer_hookext.extensions.activation_statistics import ActivationStatistics  # NOQA
from chainer_hookext.extensions.capture_outputs import CaptureOutputs  # NOQA
from chainer_hookext.extensions.gradient_statistics import GradientStatistics  # NOQA
from chainer_hookext.extensions.link_memory import LinkMemory  # NOQA
from chainer_hookext.extensions.non_finite_guard import NonFiniteGuard  # NOQA
from chainer_hookext.extensions.profile_report import ProfileReport  # NOQA
from chainer_hookext.extensions.timed_links import TimedLinks  # NOQA
from chainer_hookext.extensions.timed_loop import TimedLoop  # NOQA
from chainer_hookext.extensions.timeline import Timeline  # NOQA
from chainer_hookext.extensions.unchain_variables import unchain_variables  # NOQA
from chainer_hookext.extensions.unchain_variables import UnchainVariables  # NOQA
from chainer_hookext.link_hooks.activation_statistics import ActivationStatisticsHook  # NOQA
from chainer_hookext.link_hooks.callback import CallbackHook  # NOQA
from chainer_hookext.link_hooks.capture_outputs import CaptureOutputsHook  # NOQA
from chainer_hookext.link_hooks.gradient_statistics import GradientStatisticsHook  # NOQA
from chainer_hookext.link_hooks.non_finite import NonFiniteHook  # NOQA
from chainer_hookext.link_hooks.non_finite_error import NonFiniteError  # NOQA
from chainer_hookext.link_hooks.scoped_link_hook import ScopedLinkHook  # NOQA
from chainer_hookext.link_hooks.timer import TimerHook  # NOQA
from chainer_hookext.run.link_hook_extension import LinkHookExtension  # NOQA
from chainer_hookext.run.priorities import PRIORITY_LAST  # NOQA


__all__ = [
    '__version__', 'ActivationStatistics', 'ActivationStatisticsHook',
    'CallbackHook', 'CaptureOutputs', 'CaptureOutputsHook',
    'GradientStatistics', 'GradientStatisticsHook', 'LinkHookExtension',
    'LinkMemory', 'NonFiniteError', 'NonFiniteGuard', 'NonFiniteHook',
    'PRIORITY_LAST', 'ProfileReport', 'ScopedLinkHook', 'TimedLinks',
    'TimedLoop', 'Timeline', 'TimerHook', 'UnchainVariables',
    'unchain_variables',
]
