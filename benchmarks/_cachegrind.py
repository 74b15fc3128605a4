"""Instruction counts of whole processes under valgrind's cachegrind."""

import compileall
import concurrent.futures
import os
import re
import shutil
import subprocess
import sys
import threading


_compiling = threading.Lock()
_compiled = False


def _compile():
    # Byte-compiled before the first count: two processes started together
    # would race to compile the package, and only one would count it
    # (about 1% of an iteration's count, either way).
    global _compiled
    with _compiling:
        if not _compiled:
            root = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..')
            for folder in ('chainer_hookext', 'tests', 'benchmarks'):
                compileall.compile_dir(os.path.join(root, folder), quiet=1)
            _compiled = True


def instructions(script, args, env=None):
    """Instructions of ``python SCRIPT ARGS...`` under cachegrind
    (``PYTHONHASHSEED=0``, and ``env``'s variables)."""
    _compile()
    done = subprocess.run(
        [shutil.which('valgrind'), '--tool=cachegrind', '--cache-sim=no',
         '--cachegrind-out-file=/dev/null', sys.executable,
         os.path.abspath(script)] + [str(arg) for arg in args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        universal_newlines=True,
        env=dict(os.environ, PYTHONHASHSEED='0', **(env or {})))
    if done.returncode:
        raise RuntimeError(f'{script} {args} failed:\n{done.stderr[-3000:]}')
    match = re.search(r'I\s+refs:\s+([\d,]+)', done.stderr)
    return int(match.group(1).replace(',', ''))


def per_iteration(count, variants, counts, jobs=1):
    """``{variant: (I(N2) - I(N1)) / (N2 - N1)}``, where ``count(variant,
    iterations)`` counts one process; ``jobs`` processes at a time
    (instruction counts do not depend on the machine's load)."""
    n1, n2 = counts
    runs = [(variant, n) for variant in variants for n in (n1, n2)]
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        refs = dict(zip(runs, pool.map(lambda run: count(*run), runs)))
    return {variant: (refs[variant, n2] - refs[variant, n1]) / (n2 - n1)
            for variant in variants}
