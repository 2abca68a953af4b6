"""Per-person rate limits, counted in the cache (Redis in a team, so every daphne process
shares one count).

Messages and uploads have their own, tighter limit (each one costs model calls or storage);
every other write (new chats, renames, share links, feedback, admin changes) has a looser one
so that a script with someone's session cannot fill the database with rows.
"""

from __future__ import annotations

import logging
import time

from django.conf import settings
from django.core.cache import cache
from django.core.cache.backends.base import BaseCache
from django.core.cache.backends.locmem import LocMemCache
from django.http import HttpRequest, HttpResponse

from chat.inputs import middleware_from

logger = logging.getLogger(__name__)

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "TRACE"})


# Where a process counts while the shared cache (Redis) cannot be reached: the limit then
# holds per process instead of for every process together, never not at all.
_LOCAL = LocMemCache("nexus-rate-limits", {"MAX_ENTRIES": 100_000})


_now = time.time  # a name of its own, for tests to move the clock of the limits alone


def _window(key: str, at: float) -> str:
    return f"{key}:{int(at // 60)}"


def _count(store: BaseCache, key: str) -> float:
    """One more in this minute's count, plus the last minute's weighted by how much of it the
    past 60 s still cover: a sliding minute. A count that started with the first message and
    ended 60 s later let a burst at the end of one window and another at the start of the next
    through (24 messages in 43 s with a limit of 20)."""
    now = _now()
    current = _window(key, now)
    store.add(current, 0, 120)
    try:
        count = store.incr(current)
    except ValueError:  # expired between add and incr
        store.set(current, 1, 120)
        count = 1
    before = store.get(_window(key, now - 60)) or 0
    return count + before * (1 - (now % 60) / 60)


def over_limit(user_pk: int, what: str, limit: int) -> bool:
    """Count one more `what` for the user this minute; True once the count passes `limit`
    (0: no limit). With the shared cache unreachable, the message still goes through (losing
    it would be worse) and is counted in this process."""
    if not limit:
        return False
    key = f"nexus:rate:{what}:{user_pk}"
    try:
        count = _count(cache, key)
    except Exception as exc:
        logger.warning("rate limit counted in this process only (cache unreachable): %s", exc)
        count = _count(_LOCAL, key)
    return count > limit


def refund(user_pk: int, what: str) -> None:
    """Take back one `what` counted this minute: a message refused after it was counted (its
    chat still answering) sent nothing, and twenty such clicks blocked the next real one."""
    key = _window(f"nexus:rate:{what}:{user_pk}", _now())
    for store in (cache, _LOCAL):  # where over_limit counted it: the shared cache if it could
        try:
            if store.get(key):
                store.decr(key)
            return
        except Exception:  # noqa: S112 - unreachable (or expired meanwhile): the next store
            continue


def _too_many_writes(request: HttpRequest) -> HttpResponse | None:
    if request.method in SAFE_METHODS or not request.user.is_authenticated:
        return None
    if not over_limit(request.user.pk, "writes", settings.NEXUS_WRITE_RATE_LIMIT_PER_MINUTE):
        return None
    response = HttpResponse(
        "You are making changes too quickly; wait a minute and try again.",
        status=429,
        content_type="text/plain; charset=utf-8",
    )
    response["Retry-After"] = "60"
    return response


# After authentication (it counts per person); sign-in itself is django-axes's to limit.
limit_writes = middleware_from(check=_too_many_writes)
