"""A cap on each user's open websockets, shared by every daphne process.

Each open socket holds one of the user's NEXUS_MAX_SOCKETS_PER_USER slots: a cache key (Redis
in a team deployment) claimed atomically with `add`, refreshed by the socket while it lives
and deleted when it closes. A process that dies without closing its sockets leaves keys that
expire after NEXUS_SOCKET_TTL_SECONDS, so no count leaks.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from django.conf import settings
from django.core.cache import cache

logger = logging.getLogger(__name__)


def _key(user_id: int, slot: int) -> str:
    return f"nexus:ws:{user_id}:{slot}"


async def socket_claim(user_id: int, channel: str) -> str | None:
    """A free slot for this socket (its cache key), or None when the user has no slot left."""
    for slot in range(settings.NEXUS_MAX_SOCKETS_PER_USER):
        key = _key(user_id, slot)
        if await cache.aadd(key, channel, timeout=settings.NEXUS_SOCKET_TTL_SECONDS):
            return key
    return None


async def socket_release(key: str, channel: str) -> None:
    if await cache.aget(key) == channel:
        await cache.adelete(key)


async def socket_keep(key: str, channel: str, user_id: int) -> None:
    """Refresh the slot while the socket lives (run as a task; cancelled on disconnect)."""
    interval = max(1.0, settings.NEXUS_SOCKET_TTL_SECONDS / 3)
    while True:
        await asyncio.sleep(interval)
        try:
            if await cache.aget(key) == channel:
                await cache.atouch(key, settings.NEXUS_SOCKET_TTL_SECONDS)
            else:  # expired while this process stalled: take any free slot again
                key = await socket_claim(user_id, channel) or key
        except Exception as exc:  # the cache being down must not close a working socket
            logger.warning("could not refresh websocket slot %s: %s", key, exc)


async def stop(task: asyncio.Task[None] | None) -> None:
    if task is not None:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
