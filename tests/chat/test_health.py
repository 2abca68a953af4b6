"""/healthz and /readyz: what a load balancer or an orchestrator asks, without signing in."""

import pytest
from django.test import Client, override_settings

pytestmark = pytest.mark.django_db


def test_a_probe_needs_no_sign_in_and_says_only_ok():
    client = Client()
    assert client.get("/healthz").json() == {"status": "ok"}
    ready = client.get("/readyz")
    assert ready.status_code == 200 and ready.json() == {"status": "ok", "checks": {"database": "ok"}}
    assert client.post("/readyz").status_code == 405
    assert client.head("/healthz").status_code == 200, "a probe may ask with HEAD"


@override_settings(REDIS_URL="redis://127.0.0.1:1/0")
def test_a_dependency_away_makes_it_unready_not_dead(monkeypatch):
    """Redis away (here: nothing listens on port 1): not ready, 503, but alive."""
    client = Client()
    ready = client.get("/readyz")
    assert ready.status_code == 503
    assert ready.json() == {"status": "unavailable", "checks": {"database": "ok", "redis": "unavailable"}}
    assert client.get("/healthz").status_code == 200


def test_the_database_away_makes_it_unready(monkeypatch):
    from django.db import DatabaseError
    from django.db.backends.base.base import BaseDatabaseWrapper

    def away(*args, **kwargs):
        raise DatabaseError("connection refused")

    monkeypatch.setattr(BaseDatabaseWrapper, "cursor", away)
    ready = Client().get("/readyz")
    assert ready.status_code == 503 and ready.json()["checks"]["database"] == "unavailable"


def test_a_database_that_does_not_answer_is_unready_within_the_probe_time(monkeypatch):
    """Found by a review: with PostgreSQL down the probe waited for the pool's 10 s, past any
    load balancer's patience, instead of answering 503."""
    import threading

    from django.db.backends.base.base import BaseDatabaseWrapper

    from nexus import health

    release = threading.Event()

    def hangs(*args, **kwargs):
        release.wait(10)
        raise health.DatabaseError("late")

    monkeypatch.setattr(BaseDatabaseWrapper, "cursor", hangs)
    monkeypatch.setattr(health, "PROBE_TIMEOUT", 0.2)
    try:
        ready = Client().head("/readyz")
        assert ready.status_code == 503
    finally:
        release.set()


def test_a_probe_over_plain_http_is_not_redirected_when_https_is_on():
    """With NEXUS_HTTPS every plain-HTTP request is redirected; a load balancer's probe asks
    inside, over plain HTTP, and a redirect is no answer."""
    import os
    import subprocess
    import sys

    script = (
        "import django; django.setup(); from django.test import Client; c = Client(HTTP_HOST='127.0.0.1'); "
        "print(c.get('/healthz').status_code, c.get('/accounts/login/').status_code)"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "nexus.settings", "NEXUS_HTTPS": "true", "DEBUG": "false"}
    env.pop("DATABASE_URL", None)
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60)
    assert out.stdout.split() == ["200", "301"], out.stderr[-2000:]
