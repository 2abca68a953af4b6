# Nexus: `make run` to try it, `make test` to prove it. Everything installs into .venv.
SHELL := /bin/bash
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: install run test lint audit format worker team bench clean

install: $(STAMP)

$(STAMP): pyproject.toml
	@py=$$(scripts/find-python) || exit 1; \
	if [ ! -x $(BIN)/python ] || ! $(BIN)/python -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then \
	  echo "Creating $(VENV) with $$py"; rm -rf $(VENV); $$py -m venv $(VENV) || { echo "Could not create a virtualenv with $$py (is the venv module installed?)"; exit 1; }; \
	fi; \
	$(BIN)/python -m pip install -q --upgrade pip && \
	$(BIN)/python -m pip install -q -e ".[dev]" || { echo "Installing Nexus's dependencies failed (see above); check your network access to PyPI."; exit 1; }
	@touch $(STAMP)

run: install
	@$(BIN)/python -c 'import socket, sys; s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind((sys.argv[1], int(sys.argv[2])))' $(HOST) $(PORT) 2>/dev/null || { echo "Port $(PORT) on $(HOST) is taken (another Nexus?): stop it, or run make run PORT=$$(( $(PORT) + 1 ))"; exit 1; }
	@$(BIN)/python manage.py migrate --noinput -v 0
	@$(BIN)/python manage.py ensure_local_account
	@echo ""
	@echo "  Nexus is running at http://$(HOST):$(PORT)/  (Ctrl+C stops it)"
	@echo "  Model provider: $$($(BIN)/python manage.py shell -v 0 -c 'from django.conf import settings; print(settings.NEXUS_LLM_PROVIDER)')"
	@echo ""
	@# DEBUG stays off (DEBUG=true shows Django's debug pages); plain HTTP on this machine.
	@DEBUG=$${DEBUG:-false} NEXUS_HTTPS=$${NEXUS_HTTPS:-false} exec $(BIN)/daphne -b $(HOST) -p $(PORT) nexus.asgi:application

test: install
	@scripts/test.sh

lint: install
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .

# Security lint: bandit at medium severity and up over the application code; any finding fails.
# A justified exception is marked inline: `# nosec BXXX` with the reason on the line above.
audit: install
	@$(BIN)/bandit -q -r chat nexus reasoning teamops manage.py --severity-level medium

format: install
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

worker: install
	$(BIN)/celery -A nexus worker --loglevel=INFO --without-gossip --without-mingle

team: install
	@scripts/team.sh

bench: install
	@$(BIN)/python -m tests.bench

clean:
	rm -rf $(VENV) var .pytest_cache .ruff_cache
