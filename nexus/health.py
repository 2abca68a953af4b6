"""Liveness and readiness for a load balancer, a container orchestrator or a process manager.

`/healthz` says the process answers (nothing else is asked: a database outage must not get
every web process restarted). `/readyz` says whether it can serve a person now: the database
answers, and in a team deployment Redis (the channel layer and the job queue) does too. Neither
needs a sign-in, and neither says more than "ok" or "unavailable" for each.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as Late

from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.db import DatabaseError, connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

# Seconds a dependency has to answer: a probe that waits longer than its caller is worse than none.
PROBE_TIMEOUT = 2


@login_not_required
@never_cache
@require_safe
def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


@login_not_required
@never_cache
@require_safe
def readyz(request: HttpRequest) -> JsonResponse:
    checks = {"database": _database()}
    if settings.REDIS_URL:
        checks["redis"] = _redis()
    ready = all(state == "ok" for state in checks.values())
    return JsonResponse(
        {"status": "ok" if ready else "unavailable", "checks": checks}, status=200 if ready else 503
    )


# The database is asked in a thread, so a pool waiting NEXUS_DB_WAIT_SECONDS for a connection
# to a database that is down cannot hold the probe past PROBE_TIMEOUT (it answered in 10 s).
_ASKING = ThreadPoolExecutor(max_workers=2, thread_name_prefix="readyz")


def _database() -> str:
    try:
        return _ASKING.submit(_database_answers).result(timeout=PROBE_TIMEOUT)
    except Late:
        return "unavailable"


def _database_answers() -> str:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except DatabaseError:
        return "unavailable"
    finally:
        connection.close()  # this thread's connection goes back to the pool, not kept here
    return "ok"


def _redis() -> str:
    import redis

    try:
        client = redis.Redis.from_url(
            settings.REDIS_URL, socket_connect_timeout=PROBE_TIMEOUT, socket_timeout=PROBE_TIMEOUT
        )
        with client:
            client.ping()
    except (redis.RedisError, OSError):
        return "unavailable"
    return "ok"
