"""Runs worker scripts under a real ``mpiexec -n 2``.

The tests of this folder skip, with the reason, when ``mpiexec`` or mpi4py
is missing, unless ``CHAINER_HOOKEXT_REQUIRE_MPI=1`` (``make test`` sets it,
after installing both), which turns that absence into a failure.
"""

import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys

import pytest


WORKERS = os.path.join(os.path.dirname(__file__), 'workers')
# The worker scripts run under mpiexec, never in the test process: importing
# them (as --doctest-modules would) installs their fake clock here.
collect_ignore = ['workers']
# Seconds one mpiexec run may take before the test fails (a collective that
# never completes would otherwise hang the suite).
TIMEOUT = 120


def _missing():
    missing = []
    if shutil.which('mpiexec') is None:
        missing.append('mpiexec (Debian: apt-get install openmpi-bin '
                       'libopenmpi-dev)')
    if importlib.util.find_spec('mpi4py') is None:
        missing.append("mpi4py (pip install -e '.[mpi]')")
    return missing


def _launcher():
    command = ['mpiexec']
    version = subprocess.run(
        ['mpiexec', '--version'], capture_output=True, text=True).stdout
    if 'Open MPI' in version or 'OpenRTE' in version:
        # The machine may have fewer cores than ranks; root runs in CI.
        command += ['--oversubscribe']
    return command


@pytest.fixture(scope='session')
def mpi_launcher():
    """The ``mpiexec`` command; without MPI, skips or fails (see above)."""
    missing = _missing()
    if missing:
        reason = 'MPI is needed: missing ' + ' and '.join(missing)
        if os.environ.get('CHAINER_HOOKEXT_REQUIRE_MPI') == '1':
            pytest.fail(reason + ' (CHAINER_HOOKEXT_REQUIRE_MPI=1 asks for '
                        'the MPI tests; `make mpi` installs both)',
                        pytrace=False)
        pytest.skip(reason + ' (`make mpi` installs both)')
    return _launcher()


def run_mpiexec(launcher, argv, n=2):
    """Runs ``python argv...`` on ``n`` ranks; returns the joined output."""
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT='1',
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM='1',
               OMPI_MCA_btl_vader_single_copy_mechanism='none')
    command = launcher + ['-n', str(n), sys.executable]
    command += [str(a) for a in argv]
    proc = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, env=env, start_new_session=True)
    try:
        output, _ = proc.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        output, _ = proc.communicate()
        pytest.fail('{} did not end in {} s:\n{}'.format(
            ' '.join(command), TIMEOUT, output[-4000:]))
    if proc.returncode != 0:
        pytest.fail('{} exited with {}:\n{}'.format(
            ' '.join(command), proc.returncode, output[-4000:]))
    return output


def run_worker(launcher, out, script, args, n=2):
    """Runs ``workers/<script> out args...``; returns each rank's result.

    The worker writes its result with ``_common.save(comm, out, result)``
    into ``<out>/rank<r>.json``.
    """
    out.mkdir(exist_ok=True)
    for path in out.glob('rank*.json'):
        path.unlink()
    run_mpiexec(launcher, [os.path.join(WORKERS, script), out] + list(args),
                n)
    results = []
    for rank in range(n):
        with open(out / 'rank{}.json'.format(rank)) as f:
            results.append(json.load(f))
    return results


@pytest.fixture
def mpiexec(mpi_launcher):
    """``mpiexec(*argv, n=2)``: :func:`run_mpiexec` with the launcher."""
    return lambda *argv, n=2: run_mpiexec(mpi_launcher, list(argv), n)


@pytest.fixture
def mpirun(mpi_launcher, tmp_path):
    """``mpirun(script, *args, n=2)``: :func:`run_worker` in ``tmp_path``."""
    return lambda script, *args, n=2: run_worker(
        mpi_launcher, tmp_path / 'out', script, args, n)


@pytest.fixture(scope='module')
def mpirun_module(mpi_launcher, tmp_path_factory):
    """:func:`mpirun` for module-scoped fixtures (one run, many tests)."""
    return lambda script, *args, n=2: run_worker(
        mpi_launcher, tmp_path_factory.mktemp('out'), script, args, n)
