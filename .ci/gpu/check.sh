#!/usr/bin/env bash
# `make gpu-check`: the package on a CUDA device, on a machine with no
# network, with that machine's own Python, NumPy and CuPy.
#
#   make wheelhouse   # first, on a networked machine: wheelhouse/
#   make gpu-check    # then, on the GPU machine (PYTHON=python3 by default)
#
# Chainer 7.8.1 and the setuptools whose pkg_resources it imports come from
# wheelhouse/ when that Python lacks them; under NumPy 2 the shim beside
# this file (sitecustomize.py) lets Chainer import, and the check says so.
# Then: the `gpu` tests, and .ci/gpu/check.py (no synchronisation in an
# iteration with every extension, a GPU Timeline trace checked, the example
# on the device, the measured peaks).  Writes its files under
# $GPU_CHECK_OUT (default result/gpu-check).  Exit status: 0 when all
# passed, 1 when a check failed, 2 when it could not run (no CUDA).
set -uo pipefail
cd "$(dirname "$0")/../.."
PYTHON=${PYTHON:-python3}
out=${GPU_CHECK_OUT:-result/gpu-check}
mkdir -p "$out"
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
# CuPy 13 and later ship no cuDNN binding: Chainer warns at import unless
# told that cuDNN is off on purpose.
export CHAINER_WARN_VERSION_MISMATCH=0 CHAINER_CUDNN=0

if ! "$PYTHON" -c 'import cupy; assert cupy.cuda.runtime.getDeviceCount()' \
        >/dev/null 2>&1; then
    echo 'gpu-check: no CUDA device through CuPy here (python:' \
        "$("$PYTHON" -c 'import sys; print(sys.executable)')); it needs" \
        'a machine with CUDA and CuPy' >&2
    exit 2
fi

site=$(mktemp -d)
trap 'rm -rf "$site"' EXIT
if ! "$PYTHON" -c 'import chainer, pkg_resources' >/dev/null 2>&1; then
    if ! ls wheelhouse/*.whl >/dev/null 2>&1; then
        echo 'gpu-check: Chainer is not installed and wheelhouse/ is' \
            'empty: run `make wheelhouse` on a networked machine first' >&2
        exit 2
    fi
    "$PYTHON" -m pip install --quiet --no-index --no-deps --no-compile \
        --no-cache-dir --target "$site" wheelhouse/*.whl || exit 2
fi
numpy_major=$("$PYTHON" -c 'import numpy; print(numpy.__version__.split(".")[0])')
if [ "$numpy_major" -ge 2 ]; then
    echo "gpu-check: NumPy $("$PYTHON" -c 'import numpy; print(numpy.__version__)')" \
        'needs the shim .ci/gpu/sitecustomize.py for Chainer 7.8.1'
    cp .ci/gpu/sitecustomize.py "$site/"
fi
export PYTHONPATH=$site:$PWD${PYTHONPATH:+:$PYTHONPATH}

status=0
printf '\n=== the gpu tests\n'
"$PYTHON" -m pytest -q -p no:cacheprovider -m gpu -rs tests chainer_hookext \
    2>&1 | tee "$out/gpu_tests.log"
[ "${PIPESTATUS[0]}" = 0 ] || status=1

printf '\n=== .ci/gpu/check.py\n'
"$PYTHON" .ci/gpu/check.py --out "$out" 2>&1 | tee "$out/check.log"
[ "${PIPESTATUS[0]}" = 0 ] || status=1

if [ -n "${GPU_CHECK_SUITE:-}" ]; then
    # The whole suite (not the slow tests) with this Python and NumPy:
    # reported, not counted.
    printf '\n=== the whole suite, for information\n'
    "$PYTHON" -m pytest -q -p no:cacheprovider -rf tests chainer_hookext \
        2>&1 | tail -40 | tee "$out/suite.log"
fi

printf '\n=== gpu-check: %s\n' "$([ $status = 0 ] && echo passed || echo FAILED)"
exit $status
