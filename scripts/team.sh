#!/usr/bin/env bash
# The team deployment on one machine: daphne and a Celery worker on PostgreSQL and Redis.
# For several machines run the same two commands (see Procfile) behind a proxy.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=.venv/bin
: "${DATABASE_URL:?set DATABASE_URL, for example postgres://postgres@127.0.0.1:5432/nexus}"
: "${REDIS_URL:?set REDIS_URL, for example redis://127.0.0.1:6379/0}"
export DATABASE_URL REDIS_URL
HOST="${HOST:-127.0.0.1}"; PORT="${PORT:-8000}"
$BIN/python scripts/service-up postgres "$DATABASE_URL" || { echo "PostgreSQL is not reachable at DATABASE_URL"; exit 1; }
$BIN/python scripts/service-up redis "$REDIS_URL" || { echo "Redis is not reachable at REDIS_URL"; exit 1; }
$BIN/python scripts/ensure-database
$BIN/python manage.py migrate --noinput -v 0
$BIN/python manage.py ensure_local_account
export NEXUS_HTTPS="${NEXUS_HTTPS:-false}"   # behind a TLS proxy, set NEXUS_HTTPS=true
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait' EXIT INT TERM
$BIN/celery -A nexus worker --loglevel=INFO --concurrency="${CONCURRENCY:-4}" & pids+=($!)
$BIN/daphne -b "$HOST" -p "$PORT" nexus.asgi:application & pids+=($!)
echo "Nexus (team mode) at http://$HOST:$PORT/ — web pid ${pids[1]}, worker pid ${pids[0]}; Ctrl+C stops both"
wait -n
