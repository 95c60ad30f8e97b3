# switchboard: `make run` to try it, `make test` to test it, `make help` for the rest.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
UV := $(BIN)/uv
# Debian packages of the real components: the browser, the far SIP end, the offline voice, the
# SFU, the TURN server, the packet filter of the relay guard, Redis for the rooms' fan-out, and
# wrk for `make bench`.
APT_PACKAGES := chromium sip-tester espeak-ng janus coturn nftables redis-server wrk
PG_TEST_URL ?= postgresql+asyncpg://127.0.0.1:5432/test

.DEFAULT_GOAL := help
.PHONY: help install run test test-sqlite check lint format typecheck bench clean

help: ## List the commands
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(UV): $(BIN)/python
	$(BIN)/python -m pip install --quiet --disable-pip-version-check "uv==0.13.9"

install: $(UV) ## Create .venv and install the locked dependencies, the Debian components and the package (idempotent)
	UV_PROJECT_ENVIRONMENT=$(VENV) $(UV) sync --frozen --compile-bytecode --python $(BIN)/python --quiet
	@missing=$$(for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  if command -v apt-get >/dev/null 2>&1; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  else echo "note: install Debian's $$missing for the real-component tests"; fi; \
	fi

# `make run PORT=8001` when 8000 is taken (the demo tenant is then served on that port too)
PORT ?= 8000

run: install ## Migrate, create the demo tenant (prints its admin password once) and serve on :8000 (PORT=N)
	SWITCHBOARD_PUBLIC_BASE_URL=$${SWITCHBOARD_PUBLIC_BASE_URL:-http://127.0.0.1:$(PORT)} ; \
	SWITCHBOARD_WEBHOOK_ALLOW_PRIVATE=$${SWITCHBOARD_WEBHOOK_ALLOW_PRIVATE:-127.0.0.0/8,::1/128} ; \
	SWITCHBOARD_FEDERATION_ALLOW_PRIVATE=$${SWITCHBOARD_FEDERATION_ALLOW_PRIVATE:-127.0.0.0/8,::1/128} ; \
	SWITCHBOARD_ISSUER_ALLOW_PRIVATE=$${SWITCHBOARD_ISSUER_ALLOW_PRIVATE:-127.0.0.0/8,::1/128} ; \
	export SWITCHBOARD_PUBLIC_BASE_URL SWITCHBOARD_WEBHOOK_ALLOW_PRIVATE SWITCHBOARD_FEDERATION_ALLOW_PRIVATE \
	  SWITCHBOARD_ISSUER_ALLOW_PRIVATE ; \
	$(BIN)/switchboard migrate && $(BIN)/switchboard demo && $(BIN)/switchboard serve --port $(PORT)

test: install ## Run the whole suite (SQLite, and PostgreSQL when SWITCHBOARD_TEST_POSTGRES_URL is set)
	@# byte-compile the project once: the suite starts many child processes, and compiling in
	@# each of them (no .pyc where PYTHONDONTWRITEBYTECODE is set) costs seconds per start
	$(BIN)/python -m compileall -q src tests >/dev/null
	@# the slowest tests are listed at the end, so a run that creeps past its budget says where
	$(BIN)/pytest -q --durations=30
	@# tests marked `alone` (seven browsers on Janus, media decoded by aiortc through an SFU) run
	@# after the parallel suite, one at a time
	SWITCHBOARD_TEST_ALONE=1 $(BIN)/pytest -q -n 0 -m alone

check: install lint typecheck ## ruff (format + lint), the import contracts and mypy --strict on src/, tests/, bench/ and scripts/

lint:
	$(BIN)/ruff format --check src tests bench scripts
	$(BIN)/ruff check src tests bench scripts
	PYTHONPATH=src $(BIN)/lint-imports --no-cache

format: install ## Reformat and autofix
	$(BIN)/ruff format src tests bench
	$(BIN)/ruff check --fix src tests bench

typecheck:
	$(BIN)/mypy
	@# the benchmarks too, so that a renamed function fails the check, not the next `make bench`
	MYPYPATH=bench $(BIN)/mypy bench/*.py
	$(BIN)/mypy scripts/*.py

BENCH_POSTGRES ?= postgresql+asyncpg://127.0.0.1:5432/test
# Benches with a goal in the table run on both backends (a scratch database on BENCH_POSTGRES).
BENCH_BOTH = bench/bench_api.py bench/bench_calls.py bench/bench_webhooks.py
# The rooms bench at 100 rooms x 50 peers (a few minutes); `BENCH_ROOMS_ARGS=` for the issue's
# full 1,000 rooms (about half an hour on the reference machine).
BENCH_ROOMS_ARGS ?= --rooms 100

bench: install ## Run the benchmarks and print every figure against its goal
	@report=$$(mktemp); status=0; \
	for f in bench/bench_*.py; do \
		echo "== $$f"; \
		extra=""; [ "$$f" = bench/bench_rooms.py ] && extra="$(BENCH_ROOMS_ARGS)"; \
		SWITCHBOARD_BENCH_REPORT=$$report $(BIN)/python $$f $$extra || { echo "== $$f FAILED"; status=1; }; \
		case " $(BENCH_BOTH) " in *" $$f "*) if [ -n "$(BENCH_POSTGRES)" ]; then \
			echo "== $$f --postgres"; \
			SWITCHBOARD_BENCH_REPORT=$$report $(BIN)/python $$f --postgres "$(BENCH_POSTGRES)" \
				|| { echo "== $$f --postgres FAILED"; status=1; }; fi;; esac; \
	done; \
	echo "== goals"; $(BIN)/python bench/report.py $$report; rm -f $$report; exit $$status

clean: ## Remove the virtualenv and local data
	rm -rf $(VENV) var
