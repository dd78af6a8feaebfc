# fleetplan: `make demo` and `make test` do all the set-up from a fresh clone.
PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install bytecode browser demo test lint bench readme calibrate clean

$(BIN)/python:
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "fleetplan needs $(PYTHON) on PATH (or run: make PYTHON=/path/to/python3.11 ...)"; exit 2; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e '.[test]'
	@touch $(STAMP)

install: $(STAMP)

# Byte-compile the project once, so that each `fleetplan` run loads it instead of compiling
# ~90 modules (a quarter of a one-model solve's time where PYTHONDONTWRITEBYTECODE is set,
# as in many containers). Only changed files are recompiled; stale ones are ignored.
bytecode: install
	@$(BIN)/python -m compileall -q models solver cli calibration >/dev/null

# The report's browser test drives the OS Chromium through Playwright (no browser download).
# Installed once: chromium from apt when apt-get exists and we are root; otherwise the
# test skips and says why.
BROWSER_STAMP := $(VENV)/.browser
$(BROWSER_STAMP): $(STAMP)
	@if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then :; \
	elif command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
		echo "installing chromium (apt) for the report's browser test"; \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null) \
		|| echo "could not install chromium: the report's browser test will skip"; \
	else echo "no chromium (apt-get install chromium as root): the report's browser test will skip"; fi
	@$(BIN)/python -m pip install --quiet -e '.[browser]' \
		|| echo "could not install playwright: the report's browser test will skip"
	@touch $@

browser: $(BROWSER_STAMP)

demo: bytecode
	$(BIN)/fleetplan solve instances/chat-3region.yaml

lint: install
	$(BIN)/ruff check models solver cli tests calibration
	$(BIN)/ruff format --check models solver cli tests calibration

# pytest rewrites the asserts of every test module as it imports it and keeps the result in
# __pycache__; where PYTHONDONTWRITEBYTECODE is set it cannot, so each worker rewrote all
# ~280 modules on every run (7 s of CPU a worker). Here it may: a run after the first reads
# them back (the variable set but empty counts as unset).
# The golden results are tests of the suite (tests/test_goldens.py: each instance in
# instances/ held to its NAME.expected.json as `fleetplan batch instances --check --strict`
# holds it, one test per instance), so that `make test` fails when a golden moves; the
# instances other tests solve too are solved once a run, where a `batch --check` step
# before pytest solved them again while one of its two workers waited on the other.
test: bytecode lint $(BROWSER_STAMP)
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -n 2


# The calibration report (on calibration/data, shipped in the repo) and solver scaling;
# then every property test of the suite (hypothesis's `hypothesis` mark) at the thorough
# profile: 500 examples where a test names no max_examples, 50 under `make test`
# (tests/conftest.py).
bench: bytecode
	$(BIN)/python -m pytest tests/bench -q -s -p no:cacheprovider --override-ini addopts=
	$(BIN)/python -m pytest tests -q -p no:cacheprovider -m hypothesis --hypothesis-profile thorough

# The README's figures, recomputed by the commands beside them and written back (the slow
# checks too); `make test` checks the fast ones (tests/test_readme.py).
readme: bytecode
	$(BIN)/python -m tests.readme --write --slow

# Refit the efficiency factors on calibration/data and rewrite models/physics/catalog/efficiency.yaml,
# then the measured error bands of the refitted model (models/physics/catalog/error_bands.yaml).
# The vLLM and SGLang profiles borrow the TensorRT-LLM sets of generations they have no rows
# on as efficiency.yaml holds them, so they are refitted once more after the file is
# written (one pass left SGLang's Ampere set on the TensorRT-LLM 0.17 numbers it replaced);
# the error bands read the constants written.
calibrate: install
	$(BIN)/python -m calibration.calibrate --write
	$(BIN)/python -m calibration.calibrate --write-engines
	$(BIN)/python -m calibration.bands --write

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .ruff_cache
