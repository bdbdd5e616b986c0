# One virtual environment, made here; every target uses it.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: venv demo test lint typecheck unit bench schemas clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/skillwire check examples/
	$(BIN)/python examples/demo.py

lint: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench

typecheck: $(STAMP)
	$(BIN)/mypy src

unit: $(STAMP)
	$(BIN)/pytest
	$(BIN)/skillwire test examples/

test: lint typecheck unit

bench: $(STAMP)
	for b in load_skills gate gate_provenance job_overhead concurrency offline_intent api sim tools; do \
		$(BIN)/python -m bench.$$b || exit 1; done

schemas: $(STAMP)
	$(BIN)/python -m skillwire.skills.schemas --write schemas
	$(BIN)/python -m skillwire.sim.schema --write schemas

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache
