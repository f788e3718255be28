# gated-attention: `make book` re-executes and renders the book, `make test` runs every test.
# Both set up their own virtual environment (.venv) with the pinned installs of pyproject.toml.

PYTHON  ?= python3
VENV    := .venv
BIN     := $(CURDIR)/$(VENV)/bin
PY      := $(BIN)/python
STAMP   := $(VENV)/.installed-stamp
PROFILE ?= quick
HTML    := _build/html/index.html
# A CPU-only reader on Linux avoids the multi-GB CUDA build of torch that PyPI serves there:
#   make book TORCH_INDEX=https://download.pytorch.org/whl/cpu
# (the same torch==2.13.0, built for the CPU; empty: PyPI's default, what a GPU reader wants)
TORCH_INDEX ?=

# The notebook kernel ("python3") must be the venv's Python.
export PATH := $(BIN):$(PATH)
export PYTHONHASHSEED := 0

.DEFAULT_GOAL := help
.PHONY: help install execute render book test unit notebooks lint format bench clean browser sweep

help: ## list the targets
	@echo "gated-attention: a runnable companion to arXiv:2309.01775"
	@echo
	@grep -E '^[a-z]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'
	@echo
	@echo "  PROFILE=smoke|quick|paper selects the experiment sizes (default: quick)"

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet $(if $(TORCH_INDEX),--extra-index-url $(TORCH_INDEX)) -e ".[book,test]"
	touch $(STAMP)

install: $(STAMP) ## create .venv with the pinned installs (nothing else)
	@echo "environment ready: $(VENV) ($$($(PY) -c 'import torch; print("torch", torch.__version__)'))"

execute: $(STAMP) ## execute every chapter with papermill in PROFILE (no rendering)
	$(PY) book/_ext/executor.py execute --profile $(PROFILE)

render: $(STAMP) ## render the executed chapters to HTML (execution off)
	$(BIN)/jupyter-book build -W -n --keep-going .
	@echo "book: file://$(CURDIR)/$(HTML)"

book: ## set up, execute every chapter in PROFILE (default quick) and render the book
	$(MAKE) execute PROFILE=$(PROFILE)
	$(MAKE) render

unit: $(STAMP) ## the unit tests without those marked slow (seconds)
	$(PY) -m pytest -n 2 -m "not slow" tests

test: $(STAMP) ## set up (Chromium too), lint, unit tests, every chapter (smoke) under nbval, the -W build, the browser check
	$(MAKE) lint
	command -v "$${CHROME:-chromium}" || command -v chromium-browser \
	  || { [ "$$(id -u)" = 0 ] && command -v apt-get && apt-get update -qq \
	       && apt-get install -y -qq chromium; } || $(PY) -m playwright install chromium
	$(PY) -m pytest -n 2 tests
	$(PY) book/_ext/executor.py execute --profile smoke
	OMP_NUM_THREADS=1 TQDM_DISABLE=1 $(PY) -m pytest -n 2 --dist loadfile --nbval-lax book/*.ipynb
	$(BIN)/jupyter-book build -W -n --keep-going .
	$(MAKE) browser
	@echo "make test: all passed"

notebooks: $(STAMP) ## write plain .ipynb notebooks (no outputs) to notebooks/ for Jupyter and Colab
	$(PY) book/_ext/executor.py notebooks --out notebooks

lint: $(STAMP) ## the pre-commit hooks (.pre-commit-config.yaml) on every tracked file: ruff on the package, the tests and the chapters (75 columns), the chapters' cells, the GitHub workflows (check-jsonschema, actionlint or shellcheck, zizmor)
	$(BIN)/pre-commit run --all-files

browser: $(STAMP) ## open every built page in headless Chromium (pytest-playwright) and fail on console errors, failed loads, untypeset math, code, outputs or equations wider than the column, broken internal links
	$(PY) -m pytest tests/browser/test_pages.py --book _build/html --strict-width

.PHONY: linkcheck
linkcheck: $(STAMP) ## check the book's external links (needs the network; its internal links: make test's -W build and make browser)
	$(BIN)/jupyter-book build . --builder linkcheck

format: $(STAMP) ## ruff format the code
	$(BIN)/ruff format gated_attention tests lab dev
	$(BIN)/ruff check --fix gated_attention tests lab dev

bench: $(STAMP) ## time the training engine against the reference loop (writes _build/bench.json), and predict on the recorded GPU, from counted kernels and FLOPs, the unrecorded paper runs and the central claims at the paper's steps, with the step times measured there
	$(PY) -m lab.bench --out _build/bench.json
	$(PY) -m lab.gpu_plan
	$(PY) -m lab.step_times --show
	$(PY) -m lab.threads --out _build/threads.json

sweep: $(STAMP) ## train EXPERIMENT in PROFILE as jobs on a Dask cluster (SCHEDULER=tcp://HOST:PORT, WORKERS=N, GPU=1)
	@test -n "$(EXPERIMENT)" || { echo "make sweep needs EXPERIMENT=<name> (python -m gated_attention.sweep --help lists them)"; exit 2; }
	$(PY) -m gated_attention.sweep $(EXPERIMENT) --profile $(PROFILE) $(if $(SCHEDULER),--scheduler $(SCHEDULER)) $(if $(WORKERS),--workers $(WORKERS)) $(if $(GPU),--gpu)

clean: ## remove the build, the executed notebooks and the environment (keeps results/)
	rm -rf _build book/*.ipynb notebooks $(VENV) *.egg-info .pytest_cache .ruff_cache
