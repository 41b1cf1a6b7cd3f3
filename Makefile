# Two commands set everything up on a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# torch is pinned here (a CPU wheel on disk); the package accepts the range in pyproject.toml
# (whose one home is lite_guard.SUPPORTED_TORCH_MINORS).
TORCH_PIN := torch==2.13.0
STAMP := $(VENV)/.installed

.PHONY: run test test-slow install bench clean

$(STAMP): pyproject.toml Makefile
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q "$(TORCH_PIN)"
	# torch is named again so the resolver keeps it: a test extra such as torchvision would
	# otherwise upgrade it to a newer (multi-GB CUDA) build.
	$(BIN)/pip install -q "$(TORCH_PIN)" -e ".[test]"
	touch $(STAMP)

install: $(STAMP)

# The main job: validate the registries and lint our own tree, lint the installed torch's
# Inductor against the shipped registry, and print the derived lite config.
run: $(STAMP)
	$(BIN)/lite_guard --version
	$(BIN)/lite_guard check
	$(BIN)/lite_guard check --torch
	$(BIN)/lite_guard registry lite-config

# The suite without the tests marked slow (each over ~30 s on two cores: model-zoo-sized work),
# which `make test-slow` runs and `make bench` runs first. The slowest tests are printed, so the
# suite's budget (30 minutes on two cores) is watched where it is spent.
test: $(STAMP)
	TORCHINDUCTOR_COMPILE_THREADS=1 $(BIN)/python -m pytest -q -m "not slow" --durations=10

test-slow: $(STAMP)
	TORCHINDUCTOR_COMPILE_THREADS=1 $(BIN)/python -m pytest -q -m slow

bench: test-slow
	$(BIN)/python bench/run_all.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
