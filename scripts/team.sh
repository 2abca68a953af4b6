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
if [ -z "${NEXUS_SECRETS_KEY:-}" ]; then
  echo "Set NEXUS_SECRETS_KEY (it encrypts tool server secrets; every process needs the same one). Create one with:"
  echo "  $BIN/python -c 'from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())'"
  exit 1
fi
export NEXUS_SECRETS_KEY
if [ -z "${SECRET_KEY:-}" ]; then
  echo "Set SECRET_KEY (it signs sessions; every process, on every host, needs the same one). Create one with:"
  echo "  $BIN/python -c 'import secrets; print(secrets.token_urlsafe(50))'"
  exit 1
fi
export SECRET_KEY
$BIN/python scripts/ensure-database
$BIN/python manage.py migrate --noinput -v 0
$BIN/python manage.py ensure_local_account
# Secure by default: HTTPS-only cookies, HSTS and a redirect to https, for a TLS proxy in front
# of daphne (which listens on $HOST, loopback unless you say otherwise, so only that proxy
# reaches it and its X-Forwarded-* headers can be believed). For plain HTTP on a trusted
# network: NEXUS_HTTPS=false NEXUS_BEHIND_PROXY=false make team
export NEXUS_HTTPS="${NEXUS_HTTPS:-true}"
export NEXUS_BEHIND_PROXY="${NEXUS_BEHIND_PROXY:-true}"
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait' EXIT INT TERM
$BIN/celery -A nexus worker --loglevel=INFO --without-gossip --without-mingle & pids+=($!)
$BIN/daphne -b "$HOST" -p "$PORT" nexus.asgi:application & pids+=($!)
if [ "$NEXUS_HTTPS" = "true" ]; then
  echo "Nexus (team mode) listens on $HOST:$PORT for your TLS proxy (HTTPS only; for plain HTTP on a trusted network: NEXUS_HTTPS=false NEXUS_BEHIND_PROXY=false make team)"
else
  echo "Nexus (team mode) at http://$HOST:$PORT/ (plain HTTP: use only on a trusted network)"
fi
echo "web pid ${pids[1]}, worker pid ${pids[0]}; Ctrl+C stops both"
wait -n
