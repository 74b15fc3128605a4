# Two commands do all set-up on a fresh machine:
#   make demo   trains the example model (offline) with the package's extensions
#   make test   runs the whole test suite (slow end-to-end tests included)
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Chainer's sdist build needs setuptools<70: the constraints file reaches
# pip's isolated build environment through PIP_BUILD_CONSTRAINT (pip 25.3 and
# later) or PIP_CONSTRAINT (the older pip a venv is created with).
export PIP_CONSTRAINT := $(CURDIR)/constraints.txt
export PIP_BUILD_CONSTRAINT := $(CURDIR)/constraints.txt
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: demo test bench lint clean mpi wheelhouse gpu-check

$(BIN)/.installed: setup.py setup.cfg constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet -e '.[test,example]'
	touch $@

demo: $(BIN)/.installed
	$(BIN)/python examples/train_digits.py --out result/demo

# MPI for the ChainerMN tests (tests/chainermn): Open MPI from Debian's
# packages, mpi4py from PyPI (the `mpi` extra).  Each half is skipped when it
# is already there, so the step costs nothing on a machine that has both.
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
mpi: $(BIN)/.installed
	@command -v mpiexec >/dev/null 2>&1 || { \
	    $(SUDO) apt-get update -q && \
	    DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q \
	        --no-install-recommends openmpi-bin libopenmpi-dev; }
	@$(BIN)/python -c 'import mpi4py.MPI' 2>/dev/null || \
	    $(BIN)/pip install --quiet -e '.[mpi]'

# CHAINER_HOOKEXT_REQUIRE_MPI=1: a missing MPI fails the ChainerMN tests
# instead of skipping them.
test: $(BIN)/.installed mpi
	CHAINER_HOOKEXT_REQUIRE_MPI=1 $(BIN)/python -m pytest --runslow \
	    $(PYTEST_ARGS)

bench: $(BIN)/.installed
	for f in benchmarks/bench_*.py; do $(BIN)/python $$f || exit 1; done

lint: $(BIN)/.installed
	$(BIN)/pip install --quiet flake8
	$(BIN)/flake8 chainer_hookext tests examples benchmarks

# A machine with CUDA and no network (.ci/gpu/check.sh): `make wheelhouse`
# on a networked machine fills wheelhouse/ (Chainer's wheel, built from its
# sdist, and the setuptools whose pkg_resources it imports; about 2 MiB);
# `make gpu-check` there installs them beside that machine's own Python,
# NumPy and CuPy, and checks the package on the device.
WHEELHOUSE := wheelhouse
wheelhouse:
	rm -rf $(WHEELHOUSE)
	$(PYTHON) -m pip wheel --quiet --no-deps --no-binary chainer \
	    -w $(WHEELHOUSE) 'chainer==7.8.1'
	$(PYTHON) -m pip download --quiet --no-deps --only-binary=:all: \
	    -d $(WHEELHOUSE) 'setuptools==69.5.1'
	du -sh $(WHEELHOUSE)

gpu-check:
	bash .ci/gpu/check.sh

clean:
	rm -rf $(VENV) result
