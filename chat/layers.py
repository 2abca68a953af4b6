"""The Redis channel layer, with a group send in two round trips instead of four.

Every batch of a run's events is one group send to its chat's pages, so a worker makes many:
in a profile of one they took as much of its Python time as storing the events. channels_redis
makes four round trips per send (drop the group's expired members, read the members, drop each
member's expired messages, add the message); each costs a redis-py command's Python overhead
and a wait. Here the first two go in one pipeline and the last two in one script, with the
same effect: the same keys, expiries, capacities and message format. (With several Redis
hosts, channels_redis cleared a member's expired messages through the group's host, not the
member's; here each host's script clears its own.) The sender spends about half the CPU per
send; Redis does the clearing inside the script instead. And the writer's many sends of one
batch go together (`group_send_many`): the same two round trips per host for all of them.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from channels_redis.core import RedisChannelLayer
from redis.exceptions import RedisError

logger = logging.getLogger(__name__)

# KEYS: the members' message keys (a key may come again, for a later message). ARGV: a message
# per key, a capacity per key, a score per key (when sent: a channel's messages are read in score
# order), then the keys' expiry in seconds and the score below which a message has expired.
GROUP_SEND = """
local over_capacity = 0
local count = #KEYS
local expiry, expired = ARGV[3 * count + 1], ARGV[3 * count + 2]
for i = 1, count do
    redis.call('ZREMRANGEBYSCORE', KEYS[i], 0, expired)
    if redis.call('ZCOUNT', KEYS[i], '-inf', '+inf') < tonumber(ARGV[count + i]) then
        redis.call('ZADD', KEYS[i], ARGV[2 * count + i], ARGV[i])
        redis.call('EXPIRE', KEYS[i], expiry)
    else
        over_capacity = over_capacity + 1
    end
end
return over_capacity
"""

Message = dict[str, Any]


class GroupSendLayer(RedisChannelLayer):
    _last_score = 0.0

    async def _clean_receive_backup(self, index: int, channel: str) -> None:
        """channels_redis clears a received message's backup copy in a task nobody awaits: with
        Redis gone meanwhile, daphne logged "Task exception was never retrieved" and a
        traceback at ERROR for every page's socket, on an outage the pages report and survive.
        A copy left behind (Redis reachable again, not restarted) comes back once on the
        socket's next receive, as channels_redis does when a cleaner is cancelled: the pages
        skip events and ends they have already shown."""
        try:
            await super()._clean_receive_backup(index, channel)
        except (RedisError, OSError) as exc:
            logger.warning("could not clear a received message's backup, Redis unreachable: %s", exc)

    async def group_send(self, group: str, message: Message) -> None:
        for _, error in await self.group_send_many([(group, message)]):
            raise error

    async def group_send_many(
        self, sends: list[tuple[str, Message]], *, fallback: Callable[[Message], Message | None] | None = None
    ) -> list[tuple[int, Exception]]:
        """Send each message to its group, in order, in two round trips per Redis host for the
        whole list: the event writer tells the pages of fifty runs' events at once, and a send
        each was a tenth of a worker's CPU. A message that cannot be serialized is replaced by
        `fallback(message)` where that gives one (in its place, so order holds); returns the
        (position, error) of those that could not be sent at all."""
        hosts: dict[int, list[str]] = {}
        for group, _ in sends:
            assert self.require_valid_group_name(group), "Group name not valid"
            groups = hosts.setdefault(self.consistent_hash(group), [])
            if group not in groups:
                groups.append(group)
        failed: dict[int, Exception] = {}
        members: dict[str, list[str]] = {}
        for index, groups in hosts.items():
            try:
                members.update(await self._members(index, groups))
            except Exception as exc:  # this host's groups are not told; the others' still are
                failed.update((n, exc) for n, (group, _) in enumerate(sends) if group in groups)
        batches: dict[int, tuple[list[bytes], list[bytes], list[int], list[int]]] = {}
        for position, (group, message) in enumerate(sends):
            if not members.get(group):
                continue
            try:
                by_connection, payloads, capacities = self._map(members[group], message, fallback)
            except Exception as exc:
                failed[position] = exc
                continue
            for index, keys in by_connection.items():
                batch = batches.setdefault(index, ([], [], [], []))
                for key in keys:
                    batch[0].append(key)
                    batch[1].append(payloads[key])
                    batch[2].append(capacities[key])
                    batch[3].append(position)
        for index, (keys, payloads, capacities, positions) in batches.items():
            now = time.time()
            try:
                over = await self.connection(index).eval(
                    GROUP_SEND,
                    len(keys),
                    *keys,
                    *payloads,
                    *capacities,
                    *self._scores(now, len(keys)),
                    self.expiry,
                    int(now) - int(self.expiry),
                )
            except Exception as exc:  # the pages on this host miss these; the others' do not
                failed.update((position, exc) for position in positions)
                continue
            if over > 0:
                groups = sorted({sends[position][0] for position in positions})
                logger.info("%s of %s messages over capacity (groups %s)", over, len(keys), ", ".join(groups))
        return sorted(failed.items())

    async def _members(self, index: int, groups: list[str]) -> dict[str, list[str]]:
        """The current members of `groups` on host `index`, after dropping expired ones."""
        pipe = self.connection(index).pipeline(transaction=False)
        for group in groups:
            pipe.zremrangebyscore(self._group_key(group), min=0, max=int(time.time()) - self.group_expiry)
            pipe.zrange(self._group_key(group), 0, -1)
        replies = await pipe.execute()
        return {
            group: [name.decode("utf8") for name in names]
            for group, names in zip(groups, replies[1::2], strict=True)
        }

    def _map(
        self, channels: list[str], message: Message, fallback: Callable[[Message], Message | None] | None
    ) -> tuple[dict[int, list[Any]], dict[Any, bytes], dict[Any, int]]:
        try:
            return self._map_channel_keys_to_connection(channels, message)
        except Exception:
            replacement = fallback(message) if fallback is not None else None
            if replacement is None:
                raise
            return self._map_channel_keys_to_connection(channels, replacement)

    def _scores(self, now: float, count: int) -> list[float]:
        """Rising scores from `now`, each above the last this layer gave: messages to one
        channel with the same score would be read in the order of their bytes."""
        scores = []
        for _ in range(count):
            now = max(now, self._last_score + 1e-6)
            self._last_score = now
            scores.append(now)
        return scores
