# Two commands set everything up on a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# torch is pinned here (a CPU wheel on disk); the package accepts the range in pyproject.toml
# (whose one home is lite_guard.SUPPORTED_TORCH_MINORS).
TORCH_PIN := torch==2.13.0
STAMP := $(VENV)/.installed

.PHONY: run test install bench clean

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

test: $(STAMP)
	TORCHINDUCTOR_COMPILE_THREADS=1 $(BIN)/python -m pytest -q

bench: $(STAMP)
	$(BIN)/python bench/run_all.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
