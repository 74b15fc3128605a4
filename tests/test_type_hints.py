"""The public classes' own methods carry type hints (issue 46, item 4)."""

import inspect
import pathlib

import pytest

import chainer_hookext
from chainer_hookext.run import link_hook_extension

CLASSES = [
    chainer_hookext.TimedLinks,
    chainer_hookext.TimedLoop,
    chainer_hookext.ProfileReport,
    chainer_hookext.ScopedLinkHook,
    link_hook_extension.LinkHookExtension,
    chainer_hookext.NonFiniteHook,
    chainer_hookext.TimerHook,
]

#: Modules written with f-strings only and no ``(object)`` base.
MODERN = [
    'extensions/timed_links.py', 'extensions/timed_loop.py',
    'run/loop_phases.py', 'report/tables.py', 'report/units.py',
    'report/link_names.py', 'costs/flops/_generic.py',
    'costs/flops/_loss.py', 'costs/flops/_registry.py',
    'link_hooks/timer.py',
]


def _public_methods(cls):
    for name, value in vars(cls).items():
        if name == '__init__' or not name.startswith('_'):
            if inspect.isfunction(value):
                yield name, value


@pytest.mark.parametrize('cls', CLASSES, ids=lambda c: c.__name__)
def test_public_methods_are_annotated(cls):
    missing = []
    for name, method in _public_methods(cls):
        signature = inspect.signature(method)
        if signature.return_annotation is inspect.Signature.empty:
            missing.append(f'{name} -> ?')
        for parameter in list(signature.parameters.values())[1:]:
            if parameter.annotation is inspect.Parameter.empty:
                missing.append(f'{name}({parameter.name})')
    assert not missing


@pytest.mark.parametrize('path', MODERN)
def test_no_format_calls_or_object_bases(path):
    text = (pathlib.Path(chainer_hookext.__file__).parent / path).read_text()
    assert '.format(' not in text
    assert '(object):' not in text
    assert "' % " not in text
