#!/usr/bin/env bash
# The whole suite, as CI runs it: lint, migrations, tests on SQLite, then the database
# tests again on PostgreSQL. With CI=true, a missing PostgreSQL, Redis or Chromium fails
# the run instead of skipping those tests.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=.venv/bin
export NEXUS_VAR_DIR="$PWD/var/test"
mkdir -p "$NEXUS_VAR_DIR"
unset DATABASE_URL REDIS_URL

echo "== lint (ruff)"
$BIN/ruff check .
$BIN/ruff format --check . >/dev/null || { $BIN/ruff format --check .; exit 1; }

echo "== security lint (bandit, medium severity and up)"
$BIN/bandit -q -r chat nexus reasoning teamops manage.py --severity-level medium

echo "== migrations are up to date"
$BIN/python manage.py makemigrations --check --dry-run >/dev/null || {
  echo "Models changed without a migration: run 'manage.py makemigrations'"; exit 1; }

scripts/ensure-chromium

# Tests that run in-process use both cores (pytest-xdist, one database per process); the
# end-to-end tests start their own daphne, Celery, Redis and Chromium, so they run one at a time.
# Arguments (a file, -k ...) run just those, in one process.
PARALLEL=(-n "${NEXUS_TEST_PROCESSES:-2}" --dist loadfile)

echo "== tests on SQLite"
if [ $# -gt 0 ]; then
  $BIN/pytest "$@"
else
  $BIN/pytest "${PARALLEL[@]}" --ignore=tests/e2e
  echo "== end-to-end tests (real processes and a browser)"
  $BIN/pytest tests/e2e
fi

PG_URL="${NEXUS_TEST_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/nexus}"
if $BIN/python scripts/service-up postgres "$PG_URL"; then
  echo "== database tests again on PostgreSQL"
  if [ $# -gt 0 ]; then
    DATABASE_URL="$PG_URL" $BIN/pytest tests/chat "$@"
  else
    DATABASE_URL="$PG_URL" $BIN/pytest "${PARALLEL[@]}" tests/chat
  fi
elif [ "${CI:-}" = "true" ]; then
  echo "PostgreSQL is not reachable at $PG_URL and CI=true: failing (start it, see README)."; exit 1
else
  echo "== skipped the PostgreSQL pass: no PostgreSQL at $PG_URL (CI would fail here)"
fi
