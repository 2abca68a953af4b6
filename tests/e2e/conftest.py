"""Real processes for end-to-end tests: daphne, Celery workers, PostgreSQL, Redis, Chromium.

Outside CI a missing service skips these tests with a one-line reason; with CI=true it
fails them, so CI can never pass without having exercised the real thing.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
PASSWORD = "e2e-password-123"
# The server to create throw-away databases on (connecting to its maintenance database); the
# database named in NEXUS_TEST_POSTGRES_URL is only the PostgreSQL pass's (see scripts/test.sh).
POSTGRES = (
    os.environ.get("NEXUS_TEST_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/nexus").rsplit("/", 1)[0]
    + "/postgres"
)
REDIS = os.environ.get("NEXUS_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")


def unavailable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (CI=true: end-to-end tests must run)")
    pytest.skip(reason)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Process:
    """A child process in its own process group, with its output in a log file."""

    def __init__(self, name: str, command: list[str], env: dict[str, str], log_dir: Path) -> None:
        self.name = name
        self.log_path = log_dir / f"{name}-{uuid.uuid4().hex[:6]}.log"
        self._log = self.log_path.open("w")
        self.popen = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True
        )

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_for_log(self, pattern: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if re.search(pattern, self.log()):
                return
            if self.popen.poll() is not None:
                break
            time.sleep(0.1)
        raise AssertionError(f"{self.name} did not log {pattern!r}:\n{self.log()[-3000:]}")

    def kill(self, sig: int = signal.SIGKILL) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.popen.pid, sig)
        self.popen.wait(timeout=15)

    def stop(self) -> None:
        if self.popen.poll() is None:
            try:
                self.kill(signal.SIGTERM)
            except subprocess.TimeoutExpired:  # a worker's warm shutdown waits for its runs
                self.kill(signal.SIGKILL)
        self._log.close()


def wait_for_port(port: int, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return
        time.sleep(0.1)
    raise AssertionError(f"nothing listens on port {port}")


def manage(env: dict[str, str], *args: str) -> str:
    result = subprocess.run(
        [str(BIN / "python"), "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


class Site:
    """A running Nexus: its URL, environment, and processes."""

    @classmethod
    def prepared(cls, tmp: Path, **env: str) -> Site:
        """A site whose database is migrated and whose local account exists (nothing started)."""
        site = cls(base_env(tmp, **env), tmp)
        manage(site.env, "migrate", "--noinput", "-v", "0")
        manage(site.env, "ensure_local_account")
        return site

    def __init__(self, env: dict[str, str], tmp: Path) -> None:
        self.env = env
        self.tmp = tmp
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.processes: list[Process] = []

    def start_web(self) -> Process:
        web = Process(
            "daphne",
            [str(BIN / "daphne"), "-b", "127.0.0.1", "-p", str(self.port), "nexus.asgi:application"],
            self.env,
            self.tmp,
        )
        self.processes.append(web)
        wait_for_port(self.port)
        return web

    def start_worker(self, *, wait: bool = True, **extra_env: str) -> Process:
        worker = Process(
            "celery",
            [
                str(BIN / "celery"),
                "-A",
                "nexus",
                "worker",
                "--loglevel=INFO",
                "--without-gossip",
                "--without-mingle",
                "-n",
                f"w{uuid.uuid4().hex[:6]}@%h",
            ],
            {**self.env, **extra_env},
            self.tmp,
        )
        self.processes.append(worker)
        if wait:
            worker.wait_for_log(r"ready\.", timeout=60)
        return worker

    def stop(self) -> None:
        # Signal every process first, then wait: their shutdowns overlap instead of adding up.
        for process in reversed(self.processes):
            if process.popen.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.popen.pid, signal.SIGTERM)
        for process in reversed(self.processes):
            process.stop()

    def login(self) -> httpx2.Client:
        client = httpx2.Client(base_url=self.url, follow_redirects=False, timeout=20)
        page = client.get("/accounts/login/")
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
        response = client.post(
            "/accounts/login/", data={"username": "admin", "password": PASSWORD, "csrfmiddlewaretoken": token}
        )
        assert response.status_code == 302, response.text[:500]
        return client

    def new_session(self, client: httpx2.Client) -> int:
        response = client.post("/sessions/new/", headers=self.csrf(client))
        return int(re.search(r"/sessions/(\d+)/", response.headers["location"]).group(1))

    def csrf(self, client: httpx2.Client) -> dict[str, str]:
        return {"X-CSRFToken": client.cookies["csrftoken"], "Referer": self.url + "/"}

    def ask(self, client: httpx2.Client, session_id: int, question: str) -> int:
        response = client.post(
            f"/sessions/{session_id}/messages/",
            data={"content": question},
            headers={**self.csrf(client), "HX-Request": "true"},
        )
        assert response.status_code == 200, response.text[:500]
        return int(re.search(r'id="turn-(\d+)"', response.text).group(1))


def sign_in(page: Any, site: Site) -> None:
    """Sign the browser page in as the local account; it lands on the first page or a chat."""
    page.goto(site.url + "/accounts/login/")
    page.fill("#id_username", "admin")
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(re.compile(r"/(sessions/\d+/)?$"))


def base_env(tmp: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "REDIS_URL", "PYTEST"))}
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "nexus.settings",
            "NEXUS_VAR_DIR": str(tmp / "var"),
            "DEBUG": "false",
            "NEXUS_HTTPS": "false",
            "NEXUS_LLM_PROVIDER": "offline",
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            "SECRET_KEY": "e2e-" + "s3cret-k3y-" * 6,
            "NEXUS_ADMIN_PASSWORD": PASSWORD,
            "LOG_LEVEL": "INFO",
            "NEXUS_RATE_LIMIT_PER_MINUTE": "0",
            "NEXUS_WRITE_RATE_LIMIT_PER_MINUTE": "0",
            "NEXUS_TOOL_SERVER_START_WAIT": "60",  # servers start cold on a busy machine
            "NEXUS_WARM_TOOL_SERVERS": "true",
            "NEXUS_GC_FREEZE": "true",
        }
    )
    env.update(extra)
    return env


@contextlib.contextmanager
def scratch_database(admin: Any, prefix: str) -> Iterator[str]:
    """A new, empty PostgreSQL database (its URL) for one test or benchmark, made through the
    `admin` connection and dropped afterwards, its connections cut first."""
    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    admin.execute(f'create database "{name}"')
    try:
        yield POSTGRES.rsplit("/", 1)[0] + "/" + name
    finally:
        admin.execute(f"select pg_terminate_backend(pid) from pg_stat_activity where datname = '{name}'")
        admin.execute(f'drop database if exists "{name}"')


@pytest.fixture
def postgres_database() -> Iterator[str]:
    try:
        import psycopg

        admin = psycopg.connect(POSTGRES, autocommit=True, connect_timeout=3)
    except Exception as exc:
        unavailable(f"PostgreSQL is not reachable at {POSTGRES}: {exc}")
    with admin, scratch_database(admin, "nexus_e2e") as url:
        yield url


@pytest.fixture
def redis_url() -> str:
    try:
        import redis

        client = redis.Redis.from_url(REDIS, socket_connect_timeout=3)
        client.flushdb()
    except Exception as exc:
        unavailable(f"Redis is not reachable at {REDIS}: {exc}")
    return REDIS


@pytest.fixture
def team_site(tmp_path: Path, postgres_database: str, redis_url: str) -> Iterator[Site]:
    site = Site.prepared(
        tmp_path,
        DATABASE_URL=postgres_database,
        REDIS_URL=redis_url,
        NEXUS_RUN_STALE_SECONDS="3",
        NEXUS_HEARTBEAT_SECONDS="1",
        NEXUS_RUN_TIME_LIMIT="60",
    )
    yield site
    site.stop()


@pytest.fixture
def chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        unavailable("Chromium is not installed (apt-get install chromium)")
    return path
