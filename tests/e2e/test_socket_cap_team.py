"""The per-user websocket cap across two real daphne processes sharing Redis, and no count
leaked by a daphne that is killed with its sockets open."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from tests.e2e.conftest import Site

pytestmark = [pytest.mark.team, pytest.mark.slow]


@pytest.fixture
def capped_site(tmp_path: Path, postgres_database: str, redis_url: str):
    site = Site.prepared(
        tmp_path,
        DATABASE_URL=postgres_database,
        REDIS_URL=redis_url,
        NEXUS_MAX_SOCKETS_PER_USER="3",
        NEXUS_SOCKET_TTL_SECONDS="3",
    )
    other = Site(site.env, tmp_path)
    yield site, other
    other.stop()
    site.stop()


async def try_open(site: Site, session_id: int, cookie: str):
    """An open socket, or None when refused: a socket over the cap is accepted and closed at
    once with 4429 (so the page can say why), anything else refused in the handshake."""
    uri = f"ws://127.0.0.1:{site.port}/ws/sessions/{session_id}/"
    try:
        socket = await connect(uri, origin=site.url, additional_headers={"Cookie": cookie}, open_timeout=10)
    except InvalidStatus:
        return None
    try:
        await asyncio.wait_for(socket.recv(), timeout=0.5)
    except TimeoutError:
        return socket  # open, and quiet until the page asks for something
    except ConnectionClosed:
        closed = socket.close_code
    else:
        return socket
    assert closed == 4429, f"closed with {closed}, not the cap's 4429"
    return None


def test_the_cap_holds_across_daphne_processes_and_a_killed_one_leaks_nothing(capped_site):
    first, second = capped_site
    web_a = first.start_web()
    second.start_web()
    client = first.login()
    session_id = first.new_session(client)
    cookie = "; ".join(f"{k}={v}" for k, v in client.cookies.items())

    async def scenario() -> None:
        on_a = [await try_open(first, session_id, cookie) for _ in range(2)]
        on_b = [await try_open(second, session_id, cookie)]
        assert all(on_a) and all(on_b)
        assert await try_open(second, session_id, cookie) is None, "the fourth socket, on the other process"
        await asyncio.to_thread(web_a.kill)  # SIGKILL: its two sockets never say goodbye
        deadline = time.monotonic() + 30
        reopened = []
        while len(reopened) < 2 and time.monotonic() < deadline:
            socket = await try_open(second, session_id, cookie)
            if socket is None:
                await asyncio.sleep(0.5)
            else:
                reopened.append(socket)
        assert len(reopened) == 2, "the dead process's slots expired"
        assert await try_open(second, session_id, cookie) is None, "and the cap still holds"
        for socket in on_b + reopened:
            await socket.close()

    asyncio.run(scenario())
