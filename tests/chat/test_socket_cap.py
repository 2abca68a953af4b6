"""Each user may hold only so many websockets; closed or orphaned ones free their slot."""

import asyncio

import pytest
from django.core.cache import cache

from tests.chat.test_consumer import socket

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def cap_of_three(settings):
    settings.NEXUS_MAX_SOCKETS_PER_USER = 3
    cache.clear()
    yield
    cache.clear()


async def open_socket(session_id, user):
    """(communicator, connected, close code): a refused socket is accepted and closed at
    once with a code and a reason the page shows, so it counts as not connected."""
    communicator = await socket(session_id, user)
    connected, code = await communicator.connect()
    if connected and not await communicator.receive_nothing(timeout=0.2):
        closing = await communicator.receive_output()
        assert closing["type"] == "websocket.close"
        assert closing["code"] != 4429 or "Too many Nexus tabs" in closing["reason"]
        await communicator.wait()  # the consumer has finished (and let go of its database connection)
        return communicator, False, closing["code"]
    return communicator, connected, code


async def test_a_user_over_the_cap_is_refused_and_a_closed_socket_frees_its_slot(
    cap_of_three, alice, bob, alice_session
):
    from chat import services

    opened = [await open_socket(alice_session.pk, alice) for _ in range(3)]
    assert all(connected for _, connected, _ in opened)
    _, connected, code = await open_socket(alice_session.pk, alice)
    assert not connected and code == 4429
    bob_session = await asyncio.to_thread(services.session_create, owner=bob)
    bobs, connected, _ = await open_socket(bob_session.pk, bob)
    assert connected, "the cap is per user"
    await opened[0][0].disconnect()
    again, connected, _ = await open_socket(alice_session.pk, alice)
    assert connected
    for communicator in [again, bobs, *(c for c, _, _ in opened[1:])]:
        await communicator.disconnect()
    reopened = [await open_socket(alice_session.pk, alice) for _ in range(3)]
    assert all(connected for _, connected, _ in reopened), "no slot leaked"
    for communicator, _, _ in reopened:
        await communicator.disconnect()


async def test_slots_left_by_a_dead_process_expire(cap_of_three, alice, alice_session):
    for slot in range(3):  # what a killed daphne leaves behind: claimed slots nobody refreshes
        await cache.aset(f"nexus:ws:{alice.pk}:{slot}", "specific.dead!channel", timeout=1)
    _, connected, code = await open_socket(alice_session.pk, alice)
    assert not connected and code == 4429
    await asyncio.sleep(1.5)
    communicator, connected, _ = await open_socket(alice_session.pk, alice)
    assert connected
    await communicator.disconnect()


async def test_a_refused_tab_is_told_why(cap_of_three, alice, alice_session):
    """A handshake refused outright reaches the page as a nameless error; accepted and then
    closed with 4429 and a reason, the page can say "too many tabs" (found by a review)."""
    opened = [await open_socket(alice_session.pk, alice) for _ in range(3)]
    extra = await socket(alice_session.pk, alice)
    connected, _ = await extra.connect()
    assert connected, "accepted, so the close frame with its reason reaches the browser"
    closing = await extra.receive_output()
    assert closing["type"] == "websocket.close" and closing["code"] == 4429
    assert "Too many Nexus tabs are open" in closing["reason"]
    await extra.wait()
    for communicator, _, _ in opened:
        await communicator.disconnect()
