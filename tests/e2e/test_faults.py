"""Faults a team deployment survives, on real processes: Redis going away and coming back,
a worker killed with many runs in flight. Each test runs its own redis-server (never the
shared one) and its own throw-away PostgreSQL database."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from tests.e2e.conftest import Site, free_port, unavailable, wait_for_port
from tests.e2e.test_team import answers_for, run_row

pytestmark = [pytest.mark.team, pytest.mark.slow]


class PrivateRedis:
    """A redis-server of this test's own, on a free port, that the test may stop and restart."""

    def __init__(self, tmp: Path) -> None:
        self.port = free_port()
        self.dir = tmp / "redis"
        self.dir.mkdir()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.popen: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        options = ["--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.dir)]
        self.popen = subprocess.Popen(
            ["redis-server", *options, "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_for_port(self.port)

    def stop(self) -> None:
        if self.popen is not None and self.popen.poll() is None:
            self.popen.terminate()
            self.popen.wait(timeout=10)


@pytest.fixture
def private_redis(tmp_path: Path) -> Iterator[PrivateRedis]:
    if shutil.which("redis-server") is None:
        unavailable("redis-server is not installed (apt-get install redis-server)")
    server = PrivateRedis(tmp_path)
    server.start()
    yield server
    server.stop()


@pytest.fixture
def fault_site(tmp_path: Path, postgres_database: str, private_redis: PrivateRedis) -> Iterator[Site]:
    site = Site.prepared(
        tmp_path,
        DATABASE_URL=postgres_database,
        REDIS_URL=private_redis.url,
        NEXUS_RUN_STALE_SECONDS="3",
        NEXUS_HEARTBEAT_SECONDS="1",
        NEXUS_RUN_TIME_LIMIT="60",
        NEXUS_RATE_LIMIT_PER_MINUTE="20",
    )
    yield site
    site.stop()


def wait_for_status(site: Site, run_id: int, status: str, timeout: float = 60) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        row = run_row(site, run_id)
        if row["status"] == status:
            return row
        time.sleep(0.2)
    raise AssertionError(f"run {run_id} is {row['status']}, not {status}")


async def websocket_close_code(site: Site, client, session_id: int) -> int | None:
    cookie = "; ".join(f"{k}={v}" for k, v in client.cookies.items())
    uri = f"ws://127.0.0.1:{site.port}/ws/sessions/{session_id}/"
    try:
        async with connect(
            uri, origin=site.url, additional_headers={"Cookie": cookie}, open_timeout=10
        ) as ws:
            await asyncio.wait_for(ws.recv(), timeout=10)
    except ConnectionClosed as closed:
        return closed.rcvd.code if closed.rcvd else None
    except InvalidStatus as refused:
        return refused.response.status_code
    return None


def test_a_message_posted_while_redis_is_down_is_kept_and_answered_when_it_is_back(fault_site, private_redis):
    worker = fault_site.start_worker()
    fault_site.start_web()
    client = fault_site.login()
    session_id = fault_site.new_session(client)
    private_redis.stop()

    response = client.post(
        f"/sessions/{session_id}/messages/",
        data={"content": "What is 6*7?"},
        headers={**fault_site.csrf(client), "HX-Request": "true"},
    )
    assert response.status_code == 200, response.text[:500]
    assert "Your message is saved" in response.text and "as soon as" in response.text
    with psycopg.connect(fault_site.env["DATABASE_URL"]) as db:
        (run_id,) = db.execute("select id from chat_reasoningrun").fetchone()
    assert run_row(fault_site, run_id)["status"] == "queued"
    assert asyncio.run(websocket_close_code(fault_site, client, session_id)) == 4503, (
        "a websocket opened while Redis is down is closed with a clear code, not a server error"
    )

    private_redis.start()
    wait_for_status(fault_site, run_id, "succeeded")
    answers = answers_for(fault_site, run_id)
    assert len(answers) == 1 and "42" in answers[0]
    assert worker.popen.poll() is None, "the worker outlived the broker outage"
