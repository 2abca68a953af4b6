"""Deployment defaults: which proxy headers are believed, HTTPS on the team path, the
container's user, the content security policy, `check --deploy`."""

import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TEAM = {
    "DATABASE_URL": "postgres://nexus@127.0.0.1:5432/nexus",
    "REDIS_URL": "redis://127.0.0.1:6379/0",
    "DEBUG": "false",
    "SECRET_KEY": "k" * 20 + "Q7#x9!vW2@mZ4$pL8%rT6^yB1&nC5*dF3(hJ0)",
    "ALLOWED_HOSTS": "nexus.example.com",
}


def run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {
        k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "REDIS_URL", "NEXUS_HTTPS"))
    }
    return subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**base, "DJANGO_SETTINGS_MODULE": "nexus.settings", **env},
        timeout=120,
    )


def setting(name: str, **env: str) -> str:
    script = f"import django; django.setup(); from django.conf import settings as s; print(repr(s.{name}))"
    result = run("-c", script, **env)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip().splitlines()[-1]


def test_forwarded_proto_is_believed_only_when_the_operator_says_a_proxy_is_in_front():
    assert setting("SECURE_PROXY_SSL_HEADER", DEBUG="false") == "None"
    assert setting("SECURE_PROXY_SSL_HEADER", DEBUG="false", NEXUS_BEHIND_PROXY="true") == (
        "('HTTP_X_FORWARDED_PROTO', 'https')"
    )


@pytest.mark.django_db
def test_a_spoofed_forwarded_proto_does_not_make_a_plain_request_secure(alice, client_for, settings):
    settings.SECURE_SSL_REDIRECT = True
    response = client_for(alice).get("/", HTTP_X_FORWARDED_PROTO="https")
    assert response.status_code == 301 and response["Location"].startswith("https://")


def test_check_deploy_with_team_settings_warns_only_about_hsts_preload():
    result = run("manage.py", "check", "--deploy", **TEAM, NEXUS_BEHIND_PROXY="true")
    assert result.returncode == 0, result.stderr
    assert re.findall(r"\((\w+\.\w\d+)\)", result.stdout + result.stderr) == ["security.W021"]


def test_the_team_path_defaults_to_https_and_says_how_to_run_plain_http():
    team = (ROOT / "scripts" / "team.sh").read_text()
    assert (
        'NEXUS_HTTPS="${NEXUS_HTTPS:-true}"' in team and "NEXUS_HTTPS=false NEXUS_BEHIND_PROXY=false" in team
    )
    compose = (ROOT / "docker-compose.yml").read_text()
    assert "NEXUS_HTTPS: ${NEXUS_HTTPS:-true}" in compose and '"127.0.0.1:8000:8000"' in compose
    assert 'if [ -z "${SECRET_KEY:-}" ]' in team, "every process on every host signs sessions alike"


def test_the_procfile_web_server_believes_the_platform_proxy():
    """Found by an operator's review: behind a platform's TLS router the Procfile's daphne
    did not trust X-Forwarded-Proto and redirected https requests to themselves, forever."""
    web = next(line for line in (ROOT / "Procfile").read_text().splitlines() if line.startswith("web:"))
    command = web.removeprefix("web:").strip()
    result = subprocess.run(
        ["sh", "-c", f"{command.split(' daphne ')[0]} env"],
        capture_output=True,
        text=True,
        timeout=30,
        env={k: v for k, v in os.environ.items() if k != "NEXUS_BEHIND_PROXY"},
    )
    assert "NEXUS_BEHIND_PROXY=true" in result.stdout.splitlines()
    login = run(
        "-c",
        "import django; django.setup(); from django.test import Client; "
        "r = Client(HTTP_HOST='nexus.example.com', HTTP_X_FORWARDED_PROTO='https').get('/accounts/login/'); "
        "print(r.status_code)",
        **TEAM,
        NEXUS_BEHIND_PROXY="true",
    )
    assert login.stdout.split()[-1] == "200", login.stderr[-2000:]


def test_make_run_serves_without_debug_pages():
    """Debug on, any error in a chat (a chat deleted in another tab, say) replaced the page with
    Django's debug page listing every URL pattern, and django-htmx's debug script broke the CSP."""
    make = subprocess.run(["make", "-n", "run"], capture_output=True, text=True, cwd=ROOT, timeout=60)
    daphne = next(line for line in make.stdout.splitlines() if "daphne" in line and "exec" in line)
    assert "DEBUG=${DEBUG:-false}" in daphne and "NEXUS_HTTPS=${NEXUS_HTTPS:-false}" in daphne


def test_the_container_runs_as_an_unprivileged_user_without_local_state():
    lines = (ROOT / "Dockerfile").read_text().splitlines()
    users = [line.split()[1] for line in lines if line.startswith("USER ")]
    cmd = next(n for n, line in enumerate(lines) if line.startswith("CMD "))
    assert users and users[-1] not in ("root", "0")
    assert next(n for n, line in enumerate(lines) if line.startswith("USER ")) < cmd
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert {"var", ".venv", ".git"} <= set(ignored)


@pytest.mark.django_db
def test_sockets_may_connect_only_to_the_site_itself(alice, client_for):
    policy = client_for(alice).get("/")["Content-Security-Policy"]
    assert "connect-src 'self';" in policy + ";" and "ws:" not in policy and "wss:" not in policy


@pytest.mark.django_db
def test_cookies_are_out_of_scripts_reach_and_stay_on_the_site(alice):
    from django.test import Client

    client = Client()
    client.get("/accounts/login/")
    response = client.post("/accounts/login/", {"username": "alice", "password": "alice-password-1"})
    session = response.cookies["sessionid"]
    csrf = client.cookies["csrftoken"]
    assert session["httponly"] and session["samesite"] == "Lax"
    assert csrf["httponly"] and csrf["samesite"] == "Lax", "scripts take the token from the page"
    page = client.get("/")
    assert page["X-Frame-Options"] == "DENY" and page["X-Content-Type-Options"] == "nosniff"
    assert page["Referrer-Policy"] == "same-origin"


# A full garbage collection walks every tracked object: in a worker or daphne that was every
# object its imports made, 50-140 ms during which its runs and pages stood still.
# Printed: the frozen objects, the young generation's threshold, whether each module is loaded.
FROZEN = (
    "import gc, sys; "
    "print(gc.get_freeze_count(), gc.get_threshold()[0], *(m in sys.modules for m in {modules!r}))"
)
FREEZE_FLOOR = 50_000  # a bare interpreter has a few hundred; a started Nexus process 130,000+


SERVER = (
    "import nexus.asgi; from django.template import engines; "
    "print('chat/session.html' in engines['django'].engine.template_loaders[0].get_template_cache); "
    + FROZEN.format(modules=("chat.views", "teamops.views", "mcp.client.stdio", "reasoning.llm.offline"))
)


def test_the_server_loads_its_pages_and_run_code_at_start_and_keeps_them_out_of_collections():
    """The embedded server executes runs: it loads their code at start too, before it freezes
    (frozen in the middle of its first request, that request's objects were kept for good)."""
    result = run("-c", SERVER, NEXUS_GC_FREEZE="true")
    assert result.returncode == 0, result.stderr
    compiled, frozen = result.stdout.split("\n")[-3:-1]
    assert compiled == "True", "the chat page's template is compiled before the first request"
    count, young, *imported = frozen.split()
    assert int(count) > FREEZE_FLOOR and imported == ["True"] * 4
    assert young == "20000", "young collections are made rarer than Python's default (700)"


def test_a_worker_loads_the_tool_and_model_sdks_before_freezing():
    script = (
        "import django; django.setup(); from chat.engine import prepare_executor; prepare_executor(); "
        + FROZEN.format(modules=("mcp.client.stdio", "mcp.client.streamable_http", "reasoning.llm.offline"))
    )
    result = run("-c", script, NEXUS_WARM_TOOL_SERVERS="false", NEXUS_GC_FREEZE="true")
    assert result.returncode == 0, result.stderr
    count, young, *imported = result.stdout.split()[-5:]
    assert int(count) > FREEZE_FLOOR and young == "20000" and imported == ["True", "True", "True"]


def test_a_process_that_imports_the_server_for_itself_can_keep_its_collector_as_it_was():
    """The test suite imports the server into its own process (NEXUS_GC_FREEZE=false)."""
    result = run("-c", SERVER, NEXUS_GC_FREEZE="false")
    assert result.returncode == 0, result.stderr
    count, young, *_ = result.stdout.split("\n")[-2].split()
    assert int(count) < FREEZE_FLOOR and young != "20000"


def test_make_run_says_plainly_when_its_port_is_taken():
    """It printed "Nexus is running at …" and then daphne's "Address already in use"."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        make = subprocess.run(
            ["make", "run", f"PORT={port}"], capture_output=True, text=True, cwd=ROOT, timeout=120
        )
    assert make.returncode != 0
    assert f"Port {port} on 127.0.0.1 is taken" in make.stdout and "running at" not in make.stdout
