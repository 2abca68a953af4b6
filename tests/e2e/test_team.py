"""The team deployment for real: daphne and Celery workers on PostgreSQL and Redis."""

from __future__ import annotations

import asyncio
import json
import re
import time

import psycopg
import pytest
from websockets.asyncio.client import connect

from tests.conftest import wait_until

pytestmark = [pytest.mark.team, pytest.mark.slow]

EVENT_ID = re.compile(r'id="ev-(\d+)-(\d+)"')


async def collect_events(
    site,
    client,
    session_id: int,
    run_id: int | None,
    question: str | None = None,
    timeout: float = 60,
    post_via=None,
) -> tuple[int, list[int], str]:
    """Open the session's websocket like the page does, optionally post `question` (through
    the site `post_via`, default the same one), and read fragments until the run completes.
    Returns the run id, the event sequence seen, and the HTML."""
    cookie = "; ".join(f"{k}={v}" for k, v in client.cookies.items())
    uri = f"ws://127.0.0.1:{site.port}/ws/sessions/{session_id}/"
    seen: list[int] = []
    html: list[str] = []
    async with connect(uri, origin=site.url, additional_headers={"Cookie": cookie}) as ws:
        if question is not None:
            run_id = await asyncio.to_thread((post_via or site).ask, client, session_id, question)
        await ws.send(json.dumps({"type": "sync", "cursor": {str(run_id): 0}}))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                frame = await asyncio.wait_for(ws.recv(), timeout=deadline - time.monotonic())
            except TimeoutError:
                break
            html.append(frame)
            seen += [int(seq) for rid, seq in EVENT_ID.findall(frame) if int(rid) == run_id]
            if "Failed:" in frame:
                break
            if 'data-kind="run.finished"' in frame:
                # A reflection may follow the finished run: keep reading until the socket is quiet.
                deadline = min(deadline, time.monotonic() + 1.5)
    assert run_id is not None
    return run_id, seen, "".join(html)


def answers_for(site, run_id: int) -> list[str]:
    with psycopg.connect(site.env["DATABASE_URL"]) as db:
        rows = db.execute(
            "select content from chat_message where run_id = %s and role = 'assistant'", (run_id,)
        ).fetchall()
    return [row[0] for row in rows]


def run_row(site, run_id: int) -> dict:
    with psycopg.connect(site.env["DATABASE_URL"]) as db:
        cursor = db.execute(
            "select status, delivery_count, next_sequence, worker from chat_reasoningrun where id = %s",
            (run_id,),
        )
        status, deliveries, next_sequence, worker = cursor.fetchone()
        sequences = [
            r[0]
            for r in db.execute(
                "select sequence from chat_traceevent where run_id = %s order by sequence", (run_id,)
            ).fetchall()
        ]
    return {
        "status": status,
        "deliveries": deliveries,
        "next_sequence": next_sequence,
        "worker": worker,
        "sequences": sequences,
    }


def test_a_message_is_answered_by_a_worker_and_streamed_in_order(team_site):
    # Starting DIRECT, the offline model escalates the two-part question: every kind of event.
    team_site.start_worker(FORCE_REASONING_STRATEGY="direct")
    team_site.start_web()
    client = team_site.login()
    session_id = team_site.new_session(client)
    run_id, seen, html = asyncio.run(
        collect_events(team_site, client, session_id, None, "What is 17*23 and what time is it in Tokyo?")
    )
    row = run_row(team_site, run_id)
    assert row["status"] == "succeeded" and row["worker"]
    assert seen == row["sequences"] == sorted(set(seen)), "every stored event, once, in order"
    assert seen[0] == 1 and row["next_sequence"] == seen[-1] + 1
    assert "Escalating: <strong>Direct → Light" in html and "391" in html
    answers = answers_for(team_site, run_id)
    assert len(answers) == 1 and "391" in answers[0]
    page = client.get(f"/sessions/{session_id}/").text
    assert page.count(f'id="ev-{run_id}-') == len(seen), "a reload renders the same trace from the database"


def test_a_worker_killed_mid_run_still_ends_with_exactly_one_answer(team_site):
    slow = {"OFFLINE_LATENCY_MS": "400"}
    first = team_site.start_worker(**slow)
    team_site.start_web()
    client = team_site.login()
    session_id = team_site.new_session(client)
    run_id = team_site.ask(client, session_id, "What is 12*12 and what time is it in Paris?")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        row = run_row(team_site, run_id)
        if row["status"] == "running" and row["next_sequence"] > 8:
            break
        time.sleep(0.1)
    assert row["status"] == "running", row
    first.kill()
    killed_at = run_row(team_site, run_id)
    assert killed_at["status"] == "running", "the run was cut off mid-way"
    team_site.start_worker(**slow)
    _, seen, _ = asyncio.run(collect_events(team_site, client, session_id, run_id, timeout=90))
    row = run_row(team_site, run_id)
    assert row["status"] == "succeeded" and row["deliveries"] == 2, row
    assert row["sequences"] == sorted(set(row["sequences"])), "numbering continued after the restart"
    assert seen == row["sequences"]
    answers = answers_for(team_site, run_id)
    assert len(answers) == 1 and "144" in answers[0]


def test_stop_ends_a_run_on_a_celery_worker(team_site):
    """Stop in the team deployment: the view marks the run, the worker sees it and cancels."""
    team_site.start_worker(OFFLINE_LATENCY_MS="2000")
    team_site.start_web()
    client = team_site.login()
    session_id = team_site.new_session(client)
    run_id = team_site.ask(client, session_id, "What is 17*23 and what time is it in Tokyo?")
    deadline = time.monotonic() + 60
    while run_row(team_site, run_id)["status"] != "running" and time.monotonic() < deadline:
        time.sleep(0.1)
    response = client.post(
        f"/sessions/{session_id}/runs/{run_id}/stop/",
        headers={**team_site.csrf(client), "HX-Request": "true"},
    )
    assert response.status_code == 200 and "Stopped" in response.text

    def kinds() -> list[str]:
        with psycopg.connect(team_site.env["DATABASE_URL"]) as db:
            rows = db.execute(
                "select kind from chat_traceevent where run_id = %s order by sequence", (run_id,)
            ).fetchall()
        return [row[0] for row in rows]

    while "run.stopped" not in kinds() and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(2.5)  # longer than a model call: nothing more is written after the stop
    assert kinds()[-1] == "run.stopped" and "run.finished" not in kinds()
    assert run_row(team_site, run_id)["status"] == "cancelled" and answers_for(team_site, run_id) == []
    assert team_site.ask(client, session_id, "What is 2+2?") > run_id, "the chat is free at once"


def test_a_run_awaiting_approval_leaves_its_celery_worker_free(team_site):
    """One run slot: the run that waits for a person's approval is parked, another chat's
    question is answered meanwhile, and the decision hands the first back to a worker."""
    team_site.start_worker(NEXUS_WORKER_RUNS="1", NEXUS_APPROVAL_PARK_SECONDS="0")
    team_site.start_web()
    with psycopg.connect(team_site.env["DATABASE_URL"]) as db:
        db.execute("""update chat_mcpserver set approval_policies = '{"calculator": "ask"}' where builtin""")
    client = team_site.login()
    first, second = team_site.new_session(client), team_site.new_session(client)
    waiting = team_site.ask(client, first, "What is 17*23?")
    assert wait_until(lambda: run_row(team_site, waiting)["status"] == "awaiting"), run_row(
        team_site, waiting
    )

    other, _, _ = asyncio.run(collect_events(team_site, client, second, None, "Hello there", timeout=90))
    assert run_row(team_site, other)["status"] == "succeeded", "the only slot was free for it"
    assert run_row(team_site, waiting)["status"] == "awaiting"

    with psycopg.connect(team_site.env["DATABASE_URL"]) as db:
        (approval,) = db.execute("select id from chat_toolapproval where run_id = %s", (waiting,)).fetchone()
    response = client.post(
        f"/approvals/{approval}/",
        data={"decision": "approve"},
        headers={**team_site.csrf(client), "HX-Request": "true"},
    )
    assert response.status_code == 200 and "approved" in response.text
    assert wait_until(lambda: run_row(team_site, waiting)["status"] == "succeeded", 90), run_row(
        team_site, waiting
    )
    assert "391" in answers_for(team_site, waiting)[0]
