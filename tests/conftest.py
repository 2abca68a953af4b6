"""Shared fixtures: a small cast of users and a way to execute runs inside tests.

alice owns things, bob is a teammate, charlie is an outsider; staff audit in the admin.
"""

from __future__ import annotations

import concurrent.futures
import os
import time
from dataclasses import replace
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.conf import settings
from django.contrib.auth import get_user_model
from django.test import Client, override_settings

from chat import services
from chat.models import ChatSession, Critique, ReasoningRun, Reflection
from reasoning.types import ExecutionStrategy


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item):
    """A test's runs end with it. An executor it started and left behind (a stop dispatching the
    owner's next queued run, say) waited on SQLite's write lock that the test's transaction
    held; once the test rolled back, it claimed the run a later test created under the same
    reused id, and that test saw another executor write its run. Waited for after every
    fixture is torn down, the database rolled back included: the claim then finds nothing."""
    try:
        return (yield)
    finally:
        from chat import dispatch

        left = list(dispatch._running)
        if left and concurrent.futures.wait(left, timeout=60).not_done:
            pytest.fail(f"{len(left)} run(s) a test started were still executing a minute after it ended")


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    """Tests create and sign in many users; the production hasher is slow on purpose."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(scope="session")
def tool_server_pool(django_db_setup, django_db_blocker):
    """Stop the built-in MCP server processes before the test database is dropped."""
    yield
    from asgiref.sync import SyncToAsync
    from django.db import connections

    from chat.tools import POOL

    POOL.close_sync()
    # Database calls from async tests ran in asgiref's single worker thread: close that
    # thread's connection too, so the test database can be dropped.
    SyncToAsync.single_thread_executor.submit(connections.close_all).result(timeout=10)
    # On PostgreSQL each process keeps a pool whose idle connections stay open after close_all,
    # which kept the test database from being dropped (and left it behind).
    # Threads of the tests' runs (an event writer's, a heartbeat's) may still hold one: end
    # every other session on the test database, then close this one.
    for connection in connections.all(initialized_only=True):
        if connection.vendor == "postgresql":
            with django_db_blocker.unblock(), connection.cursor() as cursor:
                cursor.execute(
                    "select pg_terminate_backend(pid) from pg_stat_activity "
                    "where datname = current_database() and pid <> pg_backend_pid()"
                )
            connection.close()
            connection.close_pool()


@pytest.fixture(autouse=True)
def fresh_tool_server_status():
    """Each test's database starts without the status an earlier test's runs reported (a
    process writes the same status at most every few seconds)."""
    from chat import tools

    tools._recorded.clear()


@pytest.fixture(autouse=True)
def fresh_log_throttle():
    """Each test's log counts its own repeated lines, not those of the tests before it."""
    import logging

    from chat.logging import RepeatsThrottled

    for handler in logging.getLogger().handlers:
        for found in handler.filters:
            if isinstance(found, RepeatsThrottled):
                found.reset()


@pytest.fixture(autouse=True)
def builtin_tool_server(request):
    """The built-in MCP server row its migration creates (transactional tests flush it away)."""
    if "django_db_setup" not in request.fixturenames and not request.node.get_closest_marker("django_db"):
        return
    request.getfixturevalue("tool_server_pool")
    request.getfixturevalue("db" if "transactional_db" not in request.fixturenames else "transactional_db")
    from chat.models import MCPServer

    MCPServer.objects.get_or_create(
        name="nexus", defaults={"builtin": True, "tool_policies": {"clock": "no-cache"}}
    )


@pytest.fixture
def make_user(db):
    def make(username: str, **extra) -> object:
        return get_user_model().objects.create_user(
            username=username, password=f"{username}-password-1", **extra
        )

    return make


@pytest.fixture
def alice(make_user):
    return make_user("alice")


@pytest.fixture
def bob(make_user):
    return make_user("bob")


@pytest.fixture
def auditor(make_user):
    return get_user_model().objects.create_superuser(username="auditor", password="auditor-password-1")


@pytest.fixture
def client_for():
    def make(user) -> Client:
        client = Client()
        client.force_login(user)
        return client

    return make


@pytest.fixture
def alice_session(alice) -> ChatSession:
    return services.session_create(owner=alice, title="Alice's chat")


@pytest.fixture
def dispatched(monkeypatch):
    """Record dispatched run ids instead of starting them; tests execute them with run_now."""
    ids: list[int] = []
    monkeypatch.setattr("chat.views.dispatch_run", ids.append)
    return ids


def wait_until(condition: Any, seconds: float = 60.0) -> Any:
    """Poll `condition` until it returns something true, and return that; the bound is only
    a safety net, far above what it should take."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(0.05)
    return condition()


def django_process_env(**extra: str) -> dict[str, str]:
    """The environment for a `manage.py` child process that shares this test's database."""
    from chat import tools

    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "nexus.settings",
        "DATABASE_URL": tools._database_url(),
        "SECRET_KEY": settings.SECRET_KEY,
        "NEXUS_SECRETS_KEY": ",".join(settings.NEXUS_SECRETS_KEYS),
        "NEXUS_VAR_DIR": str(settings.VAR_DIR),
        **extra,
    }


def run_now(run_id: int) -> str:
    from chat.engine import execute_run

    return async_to_sync(execute_run)(run_id)


def engine_settings(**changes: object) -> override_settings:
    """Settings whose ReasoningConfig differs from the environment's by `changes`."""
    return override_settings(NEXUS_REASONING=replace(settings.NEXUS_REASONING, **changes))


def starting_with(strategy: str) -> override_settings:
    """Settings whose engine starts every run with `strategy` (direct, light or deep) instead of
    routing: "direct" makes the offline model escalate a two-part question to LIGHT."""
    return engine_settings(force_strategy=ExecutionStrategy.parse(strategy))


def ask(session: ChatSession, question: str, *, start: str | None = None) -> ReasoningRun:
    """Post a question and execute its run to the end (the offline model answers). `start`
    forces the first strategy, as FORCE_REASONING_STRATEGY would."""
    run = services.message_post(session=session, content=question)
    if start is None:
        run_now(run.pk)
    else:
        with starting_with(start):
            run_now(run.pk)
    run.refresh_from_db()
    return run


def full_run(
    session: ChatSession, question: str = "What is 17*23 and what time is it in Tokyo?"
) -> ReasoningRun:
    """A run with every kind of audit row: attempts, an escalation, plans, steps, tools, calls,
    critique, reflection (the offline model starts DIRECT and escalates to LIGHT)."""
    run = ask(session, question, start="direct")
    plan = run.plans.first()
    Critique.objects.create(
        run=run,
        plan=plan,
        overall_score=0.85,
        feasibility_score=0.9,
        correctness_score=0.8,
        efficiency_score=0.9,
        safety_score=1.0,
        issues=[{"severity": "low", "description": "minor"}],
        recommendation="approve",
    )
    Reflection.objects.update_or_create(
        run=run, defaults={"lessons": ["Split multi-part questions."], "confidence": 0.7}
    )
    return run
