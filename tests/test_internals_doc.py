"""docs/internals.md names only what the code has.

Every name written in backquotes there resolves: a module path exists, a
dotted name (``records.entries``, ``CallStack.paused``) resolves by import
and ``getattr``, a class or constant is defined, a snake_case name appears in
the code, and a test named there is defined.
"""

import builtins
import collections
import importlib
import inspect
import pathlib
import pkgutil
import re

import chainer
import chainer.function_hooks
import chainer.functions
import chainer.link_hooks
import chainer.training.extensions
import chainer.training.updaters
import pytest

import chainer_hookext


ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGE = ROOT / 'chainer_hookext'
CHAINER = pathlib.Path(chainer.__file__).parent
DOC = ROOT / 'docs' / 'internals.md'

# Chainer's names as the page writes them.
OUTSIDE = {
    'chainer': chainer,
    'F': chainer.functions,
    'cuda': chainer.backends.cuda,
    'extensions': chainer.training.extensions,
    'gc': importlib.import_module('gc'),
}
OUTSIDE_SCOPES = (
    builtins, collections, chainer, chainer.training,
    chainer.training.extensions, chainer.training.updaters,
    chainer.link_hooks, chainer.function_hooks)
# Values the page names by the variable holding them, not by an import.
INSTANCES = {'node', 'record', 'function', 'loss', 'trainer', 'optimizer',
             'link', 'updater', 'hook', 'self'}
# Names of entries in Chainer's hook registries, not Python names.
REGISTRY_NAMES = {'chainer_hookext.observer', 'chainer_hookext.TimedLinks_1'}


def _spans():
    text = re.sub(r'```.*?```', '', DOC.read_text(), flags=re.S)
    return sorted(set(re.findall(r'`([^`\n]+)`', text)))


def _modules():
    found = {}
    for info in pkgutil.walk_packages([str(PACKAGE)], 'chainer_hookext.'):
        if info.name.endswith('__main__'):
            continue
        found[info.name] = importlib.import_module(info.name)
    return found


MODULES = _modules()


def _defined():
    """Every module-level name of the package, with its values."""
    names = collections.defaultdict(list)
    for name, module in MODULES.items():
        names[name.rsplit('.', 1)[-1]].append(module)
        for attr, value in vars(module).items():
            if not attr.startswith('__'):
                names[attr].append(value)
    return names


DEFINED = _defined()


def _words(folder):
    words = set()
    for path in folder.rglob('*.py'):
        words.update(re.findall(r'\w+', path.read_text(errors='replace')))
    return words


def _has(value, attr):
    """Whether ``value`` has ``attr``, on a class or set on its instances."""
    if hasattr(value, attr):
        return True
    if inspect.isclass(value):
        for cls in value.__mro__:
            if attr in getattr(cls, '__slots__', ()):
                return True
            try:
                source = inspect.getsource(cls)
            except (OSError, TypeError):
                continue
            if re.search(rf'\bself\.{attr}\s*=', source):
                return True
    return False


def _resolves(dotted):
    head, *rest = dotted.split('.')
    candidates = list(DEFINED.get(head, []))
    if head in OUTSIDE:
        candidates.append(OUTSIDE[head])
    candidates += [getattr(scope, head) for scope in OUTSIDE_SCOPES
                   if hasattr(scope, head)]
    if head == 'timing' or head == 'chainer_hookext':
        candidates.append(importlib.import_module(
            'chainer_hookext' if head == 'chainer_hookext'
            else 'chainer_hookext.timing'))
    for value in candidates:
        for attr in rest:
            if inspect.ismodule(value) and not hasattr(value, attr):
                try:
                    value = importlib.import_module(
                        f'{value.__name__}.{attr}')
                    continue
                except ImportError:
                    pass
            if not _has(value, attr):
                break
            value = getattr(value, attr, None)
        else:
            return True
    return False


def _path_exists(path):
    if '<' in path:
        return True  # a key's layout (``extensions/<name>/hook/``)
    if path.startswith('chainer/'):
        return (CHAINER.parent / path).exists()
    for base in (ROOT, PACKAGE):
        if list(base.glob(path.rstrip('/'))):
            return True
    # A file named alone, inside a folder the sentence names.
    return '/' not in path and bool(list(PACKAGE.rglob(path)))


def _test_defined(name, tests):
    file_name, _, test = name.rpartition('::')
    if not file_name:
        return any(re.search(rf'^def {test}\b', text, re.M)
                   for text in tests.values())
    return any(path.endswith('/' + file_name)
               and re.search(rf'^def {test}\b', text, re.M)
               for path, text in tests.items())


def _problems():
    package_words = _words(PACKAGE) | _words(ROOT / 'tests')
    chainer_words = None
    tests = {str(p): p.read_text() for p in (ROOT / 'tests').rglob('*.py')}
    problems = []
    for span in _spans():
        if span.startswith('...') or ' ' in span.split('(')[0]:
            continue
        if re.fullmatch(r'[\w.]+\.(json|html|png|csv)', span):
            continue  # a file a run writes
        name = span.split('(')[0].split('[')[0].split('=')[0].strip()
        if re.fullmatch(r'[\w.*/-]+(\.py|/)', span):
            if not _path_exists(span):
                problems.append(f'{span}: no such file or folder')
        elif re.fullmatch(r'(\w+\.py::)?test_\w+', span):
            if not _test_defined(span, tests):
                problems.append(f'{span}: no such test')
        elif re.fullmatch(r'[A-Za-z_]\w*(\.\w+)+', name):
            if name.split('.')[0] in INSTANCES or span in REGISTRY_NAMES:
                continue
            if not _resolves(name):
                problems.append(f'{span}: does not resolve')
        elif re.fullmatch(r'_?[A-Z]\w*', name):
            if not _resolves(name):
                problems.append(f'{span}: not defined')
        elif re.fullmatch(r'_*[a-z]\w*_\w*', name):
            if name in package_words:
                continue
            if chainer_words is None:
                chainer_words = _words(CHAINER)
            if name not in chainer_words:
                problems.append(f'{span}: not in the code')
    return problems


def test_internals_names_resolve():
    assert _problems() == []


@pytest.mark.parametrize('span, resolves', [
    ('records.entries', True),
    ('records.no_such_thing', False),
    ('Link.__call__', True),
    ('NoSuchClass', False),
])
def test_checker_tells_names_apart(span, resolves):
    assert _resolves(span) is resolves


def test_checker_finds_a_missing_path():
    assert _path_exists('timing/clock.py')
    assert not _path_exists('timing/no_such_module.py')
    assert chainer_hookext.__version__
