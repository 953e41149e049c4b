# Mailroom. `make run` to start it, `make test` to check it. Needs only Python 3.11+ and pip.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
PYTEST_ARGS ?= -n 2

.PHONY: run test lint format bench clean venv

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[dev]'
	$(BIN)/python -m pip install --quiet --no-deps -c constraints.txt openapi-python-client ruamel.yaml
	@touch $(STAMP)

venv: $(STAMP)

run: $(STAMP)
	$(BIN)/mailroom db upgrade
	$(BIN)/mailroom admin demo
	$(BIN)/mailroom serve

lint: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/mypy
	$(BIN)/lint-imports

format: $(STAMP)
	$(BIN)/ruff check --fix src tests bench
	$(BIN)/ruff format src tests bench

# The whole suite on SQLite, then on PostgreSQL when MAILROOM_TEST_DATABASE_URL is set.
test: lint
	MAILROOM_TEST_BACKEND=sqlite $(BIN)/pytest $(PYTEST_ARGS)
	@if [ -n "$$MAILROOM_TEST_DATABASE_URL" ]; then \
		echo "--- PostgreSQL: $$MAILROOM_TEST_DATABASE_URL"; \
		MAILROOM_TEST_BACKEND=postgresql $(BIN)/pytest $(PYTEST_ARGS); \
	else \
		echo "MAILROOM_TEST_DATABASE_URL is not set: PostgreSQL run skipped"; \
	fi

bench: $(STAMP)
	$(BIN)/python -m bench $(BENCH_ARGS)

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache build src/*.egg-info
