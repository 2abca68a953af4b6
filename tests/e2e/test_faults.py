"""Faults a team deployment survives, on real processes: Redis going away and coming back,
a worker killed with many runs in flight. Each test runs its own redis-server (never the
shared one) and its own throw-away PostgreSQL database."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from tests.bench.team import teammates
from tests.e2e.conftest import Site, free_port, unavailable, wait_for_port
from tests.e2e.test_team import answers_for, collect_events, run_row

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


def page_socket(site: Site, client, session_id: int) -> Any:
    """A chat page's websocket, opened with the signed-in client's cookies."""
    cookie = "; ".join(f"{k}={v}" for k, v in client.cookies.items())
    uri = f"ws://127.0.0.1:{site.port}/ws/sessions/{session_id}/"
    return connect(uri, origin=site.url, additional_headers={"Cookie": cookie}, open_timeout=10)


async def websocket_close_code(site: Site, client, session_id: int) -> int | None:
    try:
        async with page_socket(site, client, session_id) as ws:
            await asyncio.wait_for(ws.recv(), timeout=10)
    except ConnectionClosed as closed:
        return closed.rcvd.code if closed.rcvd else None
    except InvalidStatus as refused:
        return refused.response.status_code
    return None


async def first_frame_or_close(
    site: Site, client, session_id: int, run_id: int | None = None, hold: float = 10
) -> str | int | None:
    """What a page's socket gets first after asking for a run's events: a frame (text), the
    close code it is refused with, or "open" when it was neither within `hold` seconds."""
    try:
        async with page_socket(site, client, session_id) as ws:
            cursor = {str(run_id): 0} if run_id is not None else {}
            await ws.send(json.dumps({"type": "sync", "cursor": cursor}))
            return await asyncio.wait_for(ws.recv(), timeout=hold)
    except ConnectionClosed as closed:
        return closed.rcvd.code if closed.rcvd else None
    except TimeoutError:
        return "open"


def test_pages_sockets_open_right_after_a_redis_restart(fault_site, private_redis):
    """Each connection the web process pooled before a Redis restart was dead, and refused one
    page's socket with 4503 ("live updates are unavailable") while Redis was up."""
    fault_site.start_web()
    client = fault_site.login()
    session_id = fault_site.new_session(client)

    async def pages(count: int) -> list[str | int | None]:
        return await asyncio.gather(
            *(first_frame_or_close(fault_site, client, session_id, hold=1.5) for _ in range(count))
        )

    assert asyncio.run(pages(4)) == ["open"] * 4  # four at once: four pooled connections
    private_redis.stop()
    private_redis.start()
    after = [asyncio.run(first_frame_or_close(fault_site, client, session_id, hold=1.5)) for _ in range(4)]
    assert after == ["open"] * 4, after


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

    # Colleagues' messages too, and sweeps that fail while Redis is down (one every 2 s here):
    # all are answered soon after Redis is back (test_runs checks the sweep's bookkeeping).
    # Three people, so no run of one person starts another of theirs as it finishes.
    for _site, colleague in teammates([fault_site], count=3):
        fault_site.ask(colleague, fault_site.new_session(colleague), "What is 2+3?")
    time.sleep(4)
    private_redis.start()
    back = time.monotonic()
    with psycopg.connect(fault_site.env["DATABASE_URL"]) as db:
        runs = [i for (i,) in db.execute("select id from chat_reasoningrun order by id")]
    assert len(runs) == 4
    while time.monotonic() - back < 20 and any(run_row(fault_site, r)["status"] != "succeeded" for r in runs):
        time.sleep(0.3)
    late = {r: run_row(fault_site, r)["status"] for r in runs}
    assert set(late.values()) == {"succeeded"}, f"20 s after Redis came back: {late}"
    answers = answers_for(fault_site, run_id)
    assert len(answers) == 1 and "42" in answers[0]
    assert worker.popen.poll() is None, "the worker outlived the broker outage"
    # The web process's connections from before the outage are dead: its pages' sockets still
    # open (each dead connection refused one with 4503 while Redis was up).
    for _ in range(3):
        frame = asyncio.run(first_frame_or_close(fault_site, client, session_id, run_id))
        assert isinstance(frame, str), f"a socket after Redis came back got {frame!r}"

    # No sticky sessions: a second daphne and a second worker; the message goes in through one
    # daphne and its events stream to a websocket on the other.
    other = Site(fault_site.env, fault_site.tmp)
    try:
        other.start_web()
        fault_site.start_worker()
        next_run, seen, html = asyncio.run(
            collect_events(other, client, session_id, None, "What is 17*23?", post_via=fault_site)
        )
        row = run_row(fault_site, next_run)
        assert row["status"] == "succeeded" and seen == row["sequences"], (
            "every event, in order, on the other daphne"
        )
        assert "391" in html
    finally:
        other.stop()


def interrupt_postgres(site: Site, seconds: float) -> None:
    """A PostgreSQL restart as the site sees it, without touching the shared server: every
    connection to the site's own database is cut and new ones are refused for `seconds`."""
    url = site.env["DATABASE_URL"]
    name = url.rsplit("/", 1)[1]
    with psycopg.connect(url.rsplit("/", 1)[0] + "/postgres", autocommit=True) as admin:
        admin.execute(f'alter database "{name}" allow_connections false')
        try:
            admin.execute(
                "select pg_terminate_backend(pid) from pg_stat_activity where datname = %s", (name,)
            )
            time.sleep(seconds)
        finally:
            admin.execute(f'alter database "{name}" allow_connections true')


def runs_by_status(site: Site) -> dict[str, int]:
    with psycopg.connect(site.env["DATABASE_URL"]) as db:
        return dict(db.execute("select status, count(*) from chat_reasoningrun group by status").fetchall())


def test_fifty_runs_in_one_worker_survive_redis_and_postgres_restarts_and_a_killed_worker(
    fault_site, private_redis
):
    count = 50
    slow = {
        # Two model calls of 3 s: every run outlasts the outages below, so the kill finds them working.
        "OFFLINE_LATENCY_MS": "3000",
        "NEXUS_MAX_RUNS_PER_USER": str(count),
        "NEXUS_RATE_LIMIT_PER_MINUTE": "0",
    }
    fault_site.env.update(slow)
    first = fault_site.start_worker()
    fault_site.start_web()
    client = fault_site.login()
    run_ids = []
    for number in range(count):
        session_id = fault_site.new_session(client)
        run_ids.append(
            fault_site.ask(client, session_id, f"What is {number}*3 and what time is it in Tokyo?")
        )

    deadline = time.monotonic() + 60
    while runs_by_status(fault_site).get("running", 0) < count and time.monotonic() < deadline:
        time.sleep(0.2)
    with psycopg.connect(fault_site.env["DATABASE_URL"]) as db:
        workers = db.execute("select count(distinct worker) from chat_reasoningrun where status = 'running'")
        assert workers.fetchone()[0] == 1
    assert runs_by_status(fault_site).get("running") == count, "one worker process holds every run at once"

    second = fault_site.start_worker(wait=False)  # idle until the sweeper re-queues the first one's runs
    private_redis.stop()  # the broker and channel layer vanish mid-run, then come back
    time.sleep(2)
    private_redis.start()
    interrupt_postgres(fault_site, seconds=2)
    time.sleep(1)
    assert first.popen.poll() is None, "the worker outlived Redis and PostgreSQL restarts"
    in_flight = runs_by_status(fault_site).get("running", 0)
    assert in_flight > 0, "runs were still in flight when the worker was killed"
    first.kill()
    deadline = time.monotonic() + 120
    while runs_by_status(fault_site).get("succeeded", 0) < count and time.monotonic() < deadline:
        time.sleep(0.5)
    with psycopg.connect(fault_site.env["DATABASE_URL"]) as db:
        errors = db.execute("select id, error from chat_reasoningrun where status <> 'succeeded'").fetchall()
    assert runs_by_status(fault_site) == {"succeeded": count}, errors
    for number, run_id in enumerate(run_ids):
        answers = answers_for(fault_site, run_id)
        assert len(answers) == 1 and str(number * 3) in answers[0], (run_id, answers)
        with psycopg.connect(fault_site.env["DATABASE_URL"]) as db:
            kinds = db.execute("select kind from chat_traceevent where run_id = %s", (run_id,)).fetchall()
        assert [k for (k,) in kinds].count("answer.final") == 1, run_id
    assert second.popen.poll() is None


def test_a_worker_frozen_past_the_stale_time_gives_its_runs_up_to_the_one_that_took_them_over(fault_site):
    """A worker that stalls (here SIGSTOP; in life a VM pause, a swap storm, a long GC) has its
    runs handed to another worker by the sweeper; when it thaws it still holds them in memory,
    with events queued at the very sequence numbers the new executor resumes at. It used to
    write them, and one executor or the other failed on the unique constraint: runs ended
    "Something went wrong", or with a trace stitched from both. Now the thawed worker stops
    them quietly and every run gets one answer from the worker that took it over."""
    count = 6
    fault_site.env.update(
        {
            "OFFLINE_LATENCY_MS": "1500",
            "NEXUS_MAX_RUNS_PER_USER": str(count),
            "NEXUS_RATE_LIMIT_PER_MINUTE": "0",
        }
    )
    frozen = fault_site.start_worker()
    fault_site.start_web()
    client = fault_site.login()
    run_ids = [
        fault_site.ask(
            client, fault_site.new_session(client), f"What is {n + 2}*7 and what time is it in Oslo?"
        )
        for n in range(count)
    ]
    deadline = time.monotonic() + 30
    while runs_by_status(fault_site).get("running", 0) < count and time.monotonic() < deadline:
        time.sleep(0.1)
    assert runs_by_status(fault_site).get("running") == count
    time.sleep(1)  # each run has stored events, and has more on their way
    # Frozen before the taker starts: a worker can take seconds to start (here 8 s on a busy
    # machine), and the runs had finished by then, with nothing left to take over.
    os.killpg(frozen.popen.pid, signal.SIGSTOP)
    try:
        taker = fault_site.start_worker()
        # Stale after 3 s, found by the taker's next sweep (every second), claimed, resumed.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with psycopg.connect(fault_site.env["DATABASE_URL"]) as db:
                moved = db.execute(
                    "select count(*) from chat_reasoningrun where delivery_count > 1 or status <> 'running'"
                ).fetchone()[0]
            if moved == count:
                break
            time.sleep(0.2)
    finally:
        os.killpg(frozen.popen.pid, signal.SIGCONT)
    for run_id in run_ids:
        wait_for_status(fault_site, run_id, "succeeded", timeout=60)
    for n, run_id in enumerate(run_ids):
        answers = answers_for(fault_site, run_id)
        assert len(answers) == 1 and str((n + 2) * 7) in answers[0], (run_id, answers)
        row = run_row(fault_site, run_id)
        assert row["sequences"][-1] < row["next_sequence"], "the run's row counts every stored event"
        with psycopg.connect(fault_site.env["DATABASE_URL"]) as db:
            kinds = [
                k for (k,) in db.execute("select kind from chat_traceevent where run_id = %s", (run_id,))
            ]
        assert kinds.count("answer.final") == 1 and kinds.count("run.finished") == 1, (run_id, kinds)
    # The thawed worker's own executions end meanwhile (however slowly this machine lets them).
    deadline = time.monotonic() + 30
    while "taken over by another executor" not in frozen.log() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert frozen.popen.poll() is None and taker.popen.poll() is None
    assert "taken over by another executor" in frozen.log(), frozen.log()[-3000:]
    for process in (frozen, taker):
        assert " ERROR " not in process.log(), process.log()[-3000:]
    assert runs_by_status(fault_site) == {"succeeded": count}


def test_a_worker_that_loses_redis_mid_run_again_and_again_keeps_consuming_on_its_own(
    fault_site, private_redis
):
    """Redis lost while the worker holds unacknowledged jobs, three times over: each time it
    restores them on reconnecting (where it used to die of AttributeError "'NoneType' object
    has no attribute 'hostname'"), stays up, and takes the next messages without anyone
    starting another worker."""
    fault_site.env.update(
        {"OFFLINE_LATENCY_MS": "600", "NEXUS_MAX_RUNS_PER_USER": "10", "NEXUS_RATE_LIMIT_PER_MINUTE": "0"}
    )
    worker = fault_site.start_worker()
    fault_site.start_web()
    client = fault_site.login()
    for outage in range(3):
        run_ids = [
            fault_site.ask(client, fault_site.new_session(client), f"What is {outage + 2}*{number + 3}?")
            for number in range(4)
        ]
        deadline = time.monotonic() + 30
        while runs_by_status(fault_site).get("running", 0) < len(run_ids) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert runs_by_status(fault_site).get("running") == len(run_ids), "jobs held, unacknowledged"
        private_redis.stop()
        time.sleep(1.5)
        private_redis.start()
        for number, run_id in enumerate(run_ids):
            wait_for_status(fault_site, run_id, "succeeded", timeout=90)
            assert str((outage + 2) * (number + 3)) in answers_for(fault_site, run_id)[0]
        assert worker.popen.poll() is None, f"the worker outlived outage {outage + 1}"
    log = worker.log()
    assert "Unrecoverable error" not in log, log[-3000:]
    assert log.count("Connection to broker lost") == 3


def test_jobs_a_restarted_redis_lost_are_sent_again_as_soon_as_a_worker_has_the_broker_again(
    fault_site, private_redis
):
    """A Redis restarted without persistence forgets the jobs queued on it: their runs said
    "Queued" until the sweeper's lost-job interval (30 s here, a minute by default) passed. A
    worker that starts, or whose broker connection comes back, sends them again at once."""
    fault_site.start_web()
    client = fault_site.login()
    session_id = fault_site.new_session(client)
    _site, colleague = teammates([fault_site], count=1)[0]
    # No worker yet: the job waits on the queue, and the restart takes it.
    first = fault_site.ask(client, session_id, "What is 6*7?")
    private_redis.stop()
    private_redis.start()
    worker = fault_site.start_worker(NEXUS_WORKER_RUNS="1", OFFLINE_LATENCY_MS="2500")
    wait_for_status(fault_site, first, "succeeded", timeout=15)

    # Every worker busy (this one holds one run): a colleague's job waits on the queue, and
    # the restart takes it while the worker is connected.
    busy = fault_site.ask(client, session_id, "What is 17*23 and what time is it in Tokyo?")  # two calls
    wait_for_status(fault_site, busy, "running", timeout=15)
    waiting = fault_site.ask(colleague, fault_site.new_session(colleague), "What is 8*9?")
    time.sleep(0.5)
    assert run_row(fault_site, waiting)["status"] == "queued"
    private_redis.stop()
    private_redis.start()
    wait_for_status(fault_site, busy, "succeeded", timeout=30)
    wait_for_status(fault_site, waiting, "succeeded", timeout=15)
    assert "72" in answers_for(fault_site, waiting)[0]
    assert "sending the queued runs' jobs again" in worker.log()


def test_a_page_open_through_a_redis_outage_reconnects_and_catches_up(fault_site, private_redis, chromium):
    """The page's socket, closed because Redis went away, never reopened once it was back: the
    next answer never came and the status line stayed at "Starting…" until a reload."""
    from playwright.sync_api import expect, sync_playwright

    from tests.e2e.conftest import sign_in
    from tests.e2e.test_browser import CHROMIUM_ARGS, ask

    fault_site.start_worker()
    fault_site.start_web()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
            sign_in(page, fault_site)
            page.click("text=Start a chat")
            ask(page, "What is 17*23?")
            expect(page.locator(".answer .markdown").last).to_contain_text("391", timeout=30000)
            private_redis.stop()
            note = page.locator("#composer-error .live-updates")
            expect(note).to_contain_text("Live updates are unavailable", timeout=30000)
            time.sleep(3)
            private_redis.start()
            expect(note).to_have_count(0, timeout=60000)  # reconnected by itself
            ask(page, "What is 6*7?")
            expect(page.locator(".answer .markdown").last).to_contain_text("42", timeout=30000)
        finally:
            browser.close()
