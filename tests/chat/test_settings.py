"""Settings come from the environment, and a wrong one stops start-up naming the variable."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import PermissionDenied

ROOT = Path(__file__).resolve().parents[2]


def start(**env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "REDIS_URL"))}
    base.update({"DJANGO_SETTINGS_MODULE": "nexus.settings", **env})
    return subprocess.run(
        [sys.executable, "-c", "import django; django.setup(); print('started')"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=base,
        timeout=60,
    )


def test_defaults_start():
    result = start()
    assert result.returncode == 0, result.stderr
    assert "started" in result.stdout


def test_the_embedded_mode_generates_its_secrets_key_once(tmp_path):
    assert start(NEXUS_SECRETS_KEY="", NEXUS_VAR_DIR=str(tmp_path)).returncode == 0
    key_file = tmp_path / "secrets_key"
    key = key_file.read_text()
    assert key_file.stat().st_mode & 0o777 == 0o600
    assert start(NEXUS_SECRETS_KEY="", NEXUS_VAR_DIR=str(tmp_path)).returncode == 0
    assert key_file.read_text() == key


def test_processes_starting_together_on_a_fresh_var_dir_share_one_secret_key(tmp_path, monkeypatch):
    """daphne and a worker starting at once must not each keep their own key (sign-ins made
    through one would be invalid in the other) nor read a half-written one."""
    import secrets
    import threading
    import time

    from django.core.management import utils

    from nexus.env import env_secret_key

    def slow_key() -> str:
        time.sleep(0.05)  # every starter sees no key yet
        return secrets.token_urlsafe(50)

    monkeypatch.setattr(utils, "get_random_secret_key", slow_key)
    monkeypatch.delenv("SECRET_KEY", raising=False)
    keys: list[str] = []
    starters = [threading.Thread(target=lambda: keys.append(env_secret_key(tmp_path))) for _ in range(6)]
    for starter in starters:
        starter.start()
    for starter in starters:
        starter.join()
    assert len(keys) == 6
    assert set(keys) == {(tmp_path / "secret_key").read_text()}
    assert (tmp_path / "secret_key").stat().st_mode & 0o777 == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["secret_key"]  # no temporary files left


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"MAX_REASONING_ITERATIONS": "lots"}, "MAX_REASONING_ITERATIONS"),
        ({"MIN_QUALITY_LIGHT": "7"}, "MIN_QUALITY_LIGHT"),
        ({"NEXUS_LLM_PROVIDER": "gpt-99"}, "NEXUS_LLM_PROVIDER must be one of anthropic, openai, offline"),
        ({"NEXUS_LLM_PROVIDER": "anthropic"}, "ANTHROPIC_API_KEY"),
        ({"DEBUG": "perhaps"}, "DEBUG must be true or false"),
        ({"NEXUS_MAX_MESSAGE_CHARS": "0"}, "NEXUS_MAX_MESSAGE_CHARS must be at least 1"),
        ({"NEXUS_RUN_BACKEND": "celery"}, "needs REDIS_URL"),
        ({"DATABASE_URL": "not a url"}, "DATABASE_URL"),
        ({"SECRET_KEY": "short"}, "SECRET_KEY"),
        (
            {"DATABASE_URL": "postgres://nexus@127.0.0.1:5432/nexus", "NEXUS_SECRETS_KEY": ""},
            "NEXUS_SECRETS_KEY must be set in a team deployment",
        ),
        ({"NEXUS_SECRETS_KEY": "not-a-fernet-key"}, "NEXUS_SECRETS_KEY: key 1 is not a Fernet key"),
        # An operator's review: a team's web servers each made their own key (sessions signed on
        # one host were refused on the next), a 48-character key failed `check --deploy`, a
        # bad time zone was a bare ValueError, and a reasoning setting was named twice.
        (
            {"DATABASE_URL": "postgres://nexus@127.0.0.1:5432/nexus", "SECRET_KEY": ""},
            "SECRET_KEY must be set in a team deployment",
        ),
        ({"SECRET_KEY": "k" * 30 + "abcdefghij" + "x" * 8}, "SECRET_KEY must be at least 50 characters"),
        (
            {"TIME_ZONE": "Mars/Base"},
            "TIME_ZONE must be a time zone such as UTC or Europe/Paris, got 'Mars/Base'",
        ),
        ({"MIN_QUALITY_LIGHT": "7"}, "ImproperlyConfigured: MIN_QUALITY_LIGHT: must be between 0 and 1"),
        ({"NEXUS_MCP_ALLOWED_COMMANDS": "bin/server"}, "NEXUS_MCP_ALLOWED_COMMANDS"),
        ({"NEXUS_MCP_ALLOWED_COMMANDS": "no-such-program-here"}, "NEXUS_MCP_ALLOWED_COMMANDS"),
        ({"NEXUS_MCP_ALLOWED_COMMANDS": "sh 'unclosed"}, 'NEXUS_MCP_ALLOWED_COMMANDS: "sh \'unclosed"'),
        ({"NEXUS_MCP_ALLOWED_COMMANDS": "/tmp"}, "NEXUS_MCP_ALLOWED_COMMANDS: '/tmp' is not an executable"),
        ({"AGENT_MODE": "telepathic"}, "AGENT_MODE must be one of adaptive, reasoning_driven"),
        ({"ROUTER_MIN_CONFIDENCE": "1.5"}, "ROUTER_MIN_CONFIDENCE"),
        ({"STREAM_BATCH_MS": "soon"}, "STREAM_BATCH_MS"),
        ({"SPECULATIVE_DIRECT": "maybe"}, "SPECULATIVE_DIRECT"),
        # Found by an operator's review: each was taken, and failed later or silently.
        ({"NEXUS_RUN_STALE_SECONDS": "4"}, "NEXUS_RUN_STALE_SECONDS (4) must be at least three heartbeats"),
        ({"REDIS_URL": "notaurl"}, "REDIS_URL must look like redis://host:6379/0, got 'notaurl'"),
        ({"LOG_LEVEL": "LOUD"}, "LOG_LEVEL must be one of DEBUG, INFO"),
    ],
)
def test_a_wrong_setting_stops_start_up_naming_it(env, expected):
    result = start(**env)
    assert result.returncode != 0
    assert expected in result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith("django.core.exceptions.ImproperlyConfigured")


def test_allowed_commands_resolve_programs_and_keep_the_arguments_they_pin(monkeypatch):
    import shutil

    from nexus.env import env_commands

    monkeypatch.setenv("NEXUS_MCP_ALLOWED_COMMANDS", f"{sys.executable} /srv/mcp/server.py, sh")
    assert env_commands("NEXUS_MCP_ALLOWED_COMMANDS") == {
        f"{sys.executable} /srv/mcp/server.py": (sys.executable, "/srv/mcp/server.py"),
        "sh": (shutil.which("sh"),),
    }


def test_production_security_when_debug_is_off():
    script = (
        "import django; django.setup(); from django.conf import settings as s; "
        "print(s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, s.SECURE_HSTS_SECONDS > 0, "
        "s.SECURE_SSL_REDIRECT, bool(s.SECURE_CSP))"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "nexus.settings", "DEBUG": "false"}
    env.pop("NEXUS_HTTPS", None)
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, env=env, timeout=60
    )
    assert result.stdout.split() == ["True", "True", "True", "True", "True"], result.stderr


@pytest.mark.django_db
def test_pages_carry_a_content_security_policy(alice, client_for):
    response = client_for(alice).get("/")
    policy = response["Content-Security-Policy"]
    assert "script-src 'self' 'nonce-" in policy and "object-src 'none'" in policy
    assert "frame-ancestors 'none'" in policy


def test_an_http_tool_servers_session_id_is_not_logged():
    """mcp's client logged "Received session ID: …" at INFO for every HTTP tool server: the
    id stands for the session with that server."""
    import logging

    assert logging.getLogger("mcp.client.streamable_http").getEffectiveLevel() >= logging.WARNING


def test_every_way_to_start_a_worker_leaves_out_gossip_and_mingle():
    """Nexus uses neither, and after a Redis blip the gossip step failed to restart with an
    AttributeError and six tracebacks per worker, waking any alert on ERROR."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    for name in ("Makefile", "Procfile", "scripts/team.sh", "docker-compose.yml", "tests/e2e/conftest.py"):
        text = (root / name).read_text()
        assert "--without-gossip" in text and "--without-mingle" in text, name
        # docker-compose's worker said --concurrency=4: four runs at once, not NEXUS_WORKER_RUNS.
        assert "--concurrency" not in text, name


def test_a_refused_page_logs_one_line_not_a_traceback(alice, client_for):
    """Every 403 on /usage/ for a teammate logged a full "Traceback … PermissionDenied",
    which an alert on tracebacks would page someone for. A 500 keeps its traceback."""
    import logging

    from chat.logging import RedactSecretsFilter

    assert client_for(alice).get("/usage/").status_code == 403
    try:
        raise PermissionDenied("staff only")
    except PermissionDenied:
        import sys

        info = sys.exc_info()
    refused = logging.LogRecord(
        "django.request", logging.WARNING, __file__, 1, "Forbidden: /usage/", None, info
    )
    refused.status_code = 403
    RedactSecretsFilter().filter(refused)
    assert "Traceback" not in logging.Formatter().format(refused)
    failed = logging.LogRecord("django.request", logging.ERROR, __file__, 1, "Server error", None, info)
    failed.status_code = 500
    RedactSecretsFilter().filter(failed)
    assert "Traceback" in logging.Formatter().format(failed)


def test_a_bad_host_header_logs_one_warning_not_an_error_with_a_traceback(alice, client_for, caplog):
    """Any scanner's request with another Host header logged an ERROR and a 27-line traceback."""
    import logging

    from chat.logging import RedactSecretsFilter

    with caplog.at_level(logging.WARNING, logger="django.security"):
        assert client_for(alice).get("/accounts/login/", HTTP_HOST="evil.example").status_code == 400
    (record,) = [r for r in caplog.records if r.name.startswith("django.security.")]
    RedactSecretsFilter().filter(record)
    assert record.levelname == "WARNING" and "Traceback" not in logging.Formatter().format(record)


def test_a_dead_workers_runs_are_resumed_within_a_minute_by_default(settings):
    """At 90 s stale and a sweep every 45 s, a killed worker's people waited over two minutes
    with a frozen status line."""
    from chat.tasks import sweep_interval

    worst = settings.NEXUS_RUN_STALE_SECONDS + settings.NEXUS_HEARTBEAT_SECONDS + sweep_interval()
    assert worst <= 60, worst
    assert settings.NEXUS_RUN_STALE_SECONDS >= 3 * settings.NEXUS_HEARTBEAT_SECONDS, (
        "a live run is never taken"
    )


def test_the_example_environment_file_shows_the_defaults():
    """Found by a review: .env.example set NEXUS_RUN_STALE_SECONDS=90 where the default is 30,
    so copying it made a dead worker's runs wait two minutes instead of about fifty seconds."""
    import json
    import re

    example = dict(re.findall(r"^([A-Z][A-Z0-9_]*)=(\S+)", (ROOT / ".env.example").read_text(), re.MULTILINE))
    names = json.dumps(sorted(example))
    script = (
        "import dataclasses, json, django; django.setup(); from django.conf import settings; "
        "reasoning = dataclasses.asdict(settings.NEXUS_REASONING); "
        f"found = {{n: getattr(settings, n, reasoning.get(n.lower())) for n in {names}}}; "
        "print(json.dumps(found, default=str))"
    )
    base = {
        k: v for k, v in os.environ.items() if k not in example and not k.startswith(("DATABASE", "REDIS"))
    }
    result = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**base, "DJANGO_SETTINGS_MODULE": "nexus.settings"},
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    defaults = json.loads(result.stdout)
    compared = []
    for name, shown in example.items():
        default = defaults[name]
        if name.startswith("SECURE_"):  # set only when served over HTTPS (NEXUS_HTTPS)
            continue
        if isinstance(default, bool):
            assert shown == str(default).lower(), name
        elif isinstance(default, int | float):
            assert float(shown) == float(default), f"{name}={shown} in .env.example, {default} by default"
        else:
            continue
        compared.append(name)
    assert "NEXUS_RUN_STALE_SECONDS" in compared and len(compared) > 20


@pytest.mark.django_db(transaction=True)
def test_after_a_database_restart_the_pool_drops_its_dead_connections_at_the_first_found():
    """Found by a review: after PostgreSQL restarted, a web process's pool found its dead idle
    connections one per request, backing off 1, 2, 4… s between them: the first requests
    waited the pool's whole 20 s and failed with a 500."""
    import psycopg
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("a PostgreSQL connection pool is tested in the PostgreSQL pass (scripts/test.sh)")
    pool = connection.pool
    connection.close()  # this test's own connection goes back to the pool too
    held = [pool.getconn() for _ in range(5)]
    for conn in held:
        pool.putconn(conn)
    params = connection.get_connection_params()
    name = params["dbname"]
    with psycopg.connect(**{**params, "dbname": "postgres"}, autocommit=True) as admin:  # "the restart"
        others = "select pid from pg_stat_activity where datname = %s and pid <> pg_backend_pid()"
        admin.execute(f"select pg_terminate_backend(pid) from ({others}) as backends", [name])
    lost = pool.get_stats().get("connections_lost", 0)
    with pool.connection(timeout=15) as conn:  # the first request after the restart
        assert conn.execute("select 1").fetchone() == (1,)
    assert pool.get_stats().get("connections_lost", 0) - lost >= 4, "every dead idle one, at once"
