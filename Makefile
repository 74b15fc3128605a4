# Two commands do all set-up on a fresh machine:
#   make demo   trains the example model (offline) with the package's extensions
#   make test   runs the whole test suite (slow end-to-end tests included)
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Chainer's sdist build needs setuptools<70: the constraints file reaches
# pip's isolated build environment through PIP_CONSTRAINT.
export PIP_CONSTRAINT := $(CURDIR)/constraints.txt
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: demo test bench lint clean

$(BIN)/.installed: setup.py setup.cfg constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet -e '.[test,example]'
	touch $@

demo: $(BIN)/.installed
	$(BIN)/python examples/train_digits.py --out result/demo

test: $(BIN)/.installed
	$(BIN)/python -m pytest --runslow $(PYTEST_ARGS)

bench: $(BIN)/.installed
	for f in benchmarks/bench_*.py; do $(BIN)/python $$f || exit 1; done

lint: $(BIN)/.installed
	$(BIN)/pip install --quiet flake8
	$(BIN)/flake8 chainer_hookext tests examples benchmarks

clean:
	rm -rf $(VENV) result
