# Two entry points on a fresh machine with only python3: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-fast test-slow lint lit pytest bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m spyre_ir.tools.demo

# pytest-xdist workers (CI has 2 cores): `make test PYTEST_WORKERS=0` runs in one process.
PYTEST_WORKERS ?= 2

# The default tier: lint, then everything but tests marked slow.
test: $(STAMP)
	$(MAKE) lint
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) -m "not slow"
	$(MAKE) lit

test-slow: $(STAMP)
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) -m slow

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

lit: $(STAMP)
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/lit -sv tests/filecheck

# Each benchmark prints its table and writes it as JSON next to itself (bench/*.json).
bench: $(STAMP)
	$(BIN)/python bench/kernel_bench.py --json bench/kernels.json
	$(BIN)/python bench/layer.py --json bench/layer.json
	$(BIN)/python bench/attention.py --json bench/attention.json
	$(BIN)/python bench/launch.py --json bench/launch.json
	$(BIN)/python bench/eager.py --json bench/eager.json
	$(BIN)/python bench/generate.py --json bench/generate.json
	$(BIN)/python bench/ktir.py --json bench/ktir.json
	$(BIN)/python bench/conv.py --json bench/conv.json
	$(BIN)/python bench/fidelity.py --json bench/fidelity.json

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis
