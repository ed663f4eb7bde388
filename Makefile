# The two commands of the quick start: `make run` (the demo) and `make test` (the test suite).
# Each does its own set-up on a fresh machine: a .venv with pinned dependencies, a browser,
# and (for the tests) Postgres and Redis on 127.0.0.1.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test setup services lint bench clean

run: setup
	$(BIN)/sluice demo

test: setup services
	$(BIN)/python -m pytest -q

setup: $(STAMP)

$(STAMP): requirements.txt requirements-dev.txt pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -r requirements-dev.txt
	$(BIN)/pip install --quiet --no-deps -e .
	@scripts/install-browser.sh
	@touch $(STAMP)

services:
	@scripts/start-services.sh

lint: setup
	$(BIN)/ruff check .
	$(BIN)/mypy

bench: setup services
	$(BIN)/python -m bench.pipeline

clean:
	rm -rf $(VENV) sluice.db sluice.db-wal sluice.db-shm
