"""The team deployment's channel layer, built from its settings, on the machine's Redis."""

import asyncio
import os
import subprocess
import sys
import textwrap
import time

from tests.e2e.conftest import ROOT

# Waits longer than channels_redis's 5 s blocking pop and redis-py 8's default 5 s read
# timeout, then delivers: what an open but quiet chat page's websocket does all day.
IDLE_THEN_DELIVER = textwrap.dedent(
    """
    import asyncio, django
    django.setup()
    from channels.layers import get_channel_layer

    async def main():
        layer = get_channel_layer()
        channel = await layer.new_channel()
        waiting = asyncio.create_task(layer.receive(channel))
        await asyncio.sleep(6.5)
        assert not waiting.done(), waiting.exception()
        await layer.send(channel, {"type": "run.event", "n": 1})
        print(await asyncio.wait_for(waiting, 10))

    asyncio.run(main())
    """
)


def test_an_idle_receive_outlasts_the_redis_read_timeout(redis_url):
    env = dict(os.environ, REDIS_URL=redis_url, DJANGO_SETTINGS_MODULE="nexus.settings")
    env.pop("DATABASE_URL", None)
    done = subprocess.run(
        [sys.executable, "-c", IDLE_THEN_DELIVER],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "'run.event'" in done.stdout


async def test_rows_redis_cannot_carry_are_left_for_the_pages_to_read_back(redis_url):
    """A payload msgpack cannot pack (an integer beyond 64 bits, from a tool's arguments) must
    not cost the pages their news: the message goes without its rows, and pages read them."""
    from chat.layers import GroupSendLayer
    from chat.models import ReasoningRun
    from chat.sink import RunSink, session_group

    layer = GroupSendLayer(hosts=[redis_url])
    sink = RunSink(ReasoningRun(pk=7, session_id=3, next_sequence=1))
    sink.layer = layer
    channel = await layer.new_channel()
    await layer.group_add(session_group(3), channel)
    row = [5, "tool.called", "Phase 1", "trace", {"arguments": {"n": 2**70}}, "2026-11-26T18:00:00+00:00"]
    news = {"type": "trace.event", "run": 7, "seq": 5, "kind": "tool.called"}
    await sink.push({**news, "after": 4, "rows": [row]})
    assert await asyncio.wait_for(layer.receive(channel), 5) == news
    await layer.flush()


async def drain(layer, channel: str, timeout: float = 0.5) -> list[dict]:  # type: ignore[no-untyped-def]
    """Every message waiting on `channel`."""
    received = []
    while True:
        try:
            received.append(await asyncio.wait_for(layer.receive(channel), timeout))
        except TimeoutError:
            return received


async def test_a_group_send_reaches_each_member_once_in_every_process_and_nobody_else(redis_url):
    """Two processes' layers (a worker's and a daphne's): the message reaches each page's
    channel once, with the rows intact, and not a channel outside the group."""
    from chat.layers import GroupSendLayer

    worker, web, other = (GroupSendLayer(hosts=[redis_url]) for _ in range(3))
    pages = [await web.new_channel(), await web.new_channel(), await other.new_channel()]
    outsider = await other.new_channel()
    for page in pages:
        await web.group_add("session-3", page)
    message = {"type": "trace.event", "run": 7, "seq": 9, "rows": [[9, "tool.called", {"n": 2**40}]]}
    await worker.group_send("session-3", message)
    await worker.group_send("session-4", {"type": "trace.event", "run": 8})  # nobody listens
    assert await drain(web, pages[0]) == [message]
    assert await drain(web, pages[1]) == [message]
    assert await drain(other, pages[2]) == [message]
    assert await drain(other, outsider) == []
    await worker.flush()


async def test_group_send_drops_members_past_the_group_expiry(redis_url):
    """A page that vanished without leaving its group (a killed daphne) stops being sent to
    once its membership is older than the group expiry."""
    import redis

    from chat.layers import GroupSendLayer

    layer = GroupSendLayer(hosts=[redis_url])
    stale, fresh = await layer.new_channel(), await layer.new_channel()
    await layer.group_add("session-5", fresh)
    key = layer._group_key("session-5")
    redis.Redis.from_url(redis_url).zadd(key, {stale: time.time() - layer.group_expiry - 100})
    await layer.group_send("session-5", {"type": "run.done", "run": 1})
    assert await drain(layer, fresh) == [{"type": "run.done", "run": 1}]
    assert await drain(layer, stale) == []
    await layer.flush()


async def test_a_full_channel_drops_the_message_and_expired_ones_make_room(redis_url):
    """A page that stops reading must not grow Redis without bound: at capacity a message is
    dropped, and messages past the expiry are cleared to make room for new ones."""
    import redis

    from chat.layers import GroupSendLayer

    layer = GroupSendLayer(hosts=[redis_url], capacity=1)
    page = await layer.new_channel()
    await layer.group_add("session-6", page)
    await layer.group_send("session-6", {"type": "trace.event", "seq": 1})
    await layer.group_send("session-6", {"type": "trace.event", "seq": 2})  # over capacity
    assert await drain(layer, page) == [{"type": "trace.event", "seq": 1}]

    # An old message nobody read, its key still alive (on a page that has not read since, so
    # no pending read takes it first): the next send clears it and goes in.
    reader = GroupSendLayer(hosts=[redis_url], capacity=1)
    idle = await reader.new_channel()
    await reader.group_add("session-7", idle)
    old = reader.serialize({"type": "trace.event", "seq": 0, "__asgi_channel__": [idle]})
    channel_key = reader.prefix + reader.non_local_name(idle)
    client = redis.Redis.from_url(redis_url)
    client.zadd(channel_key, {old: time.time() - reader.expiry - 100})
    client.expire(channel_key, 600)
    await layer.group_send("session-7", {"type": "trace.event", "seq": 3})
    assert await drain(reader, idle) == [{"type": "trace.event", "seq": 3}]
    await layer.flush()


async def test_many_sends_reach_each_page_in_order_in_one_script(redis_url):
    """The writer's sends of one batch go together: each page gets the messages of its groups
    in the order they were given, one Redis script for all of them, and a message msgpack
    cannot carry goes without its rows in its own place."""
    from chat.layers import GroupSendLayer
    from chat.sink import without_rows

    worker, web = GroupSendLayer(hosts=[redis_url]), GroupSendLayer(hosts=[redis_url])
    both, second = await web.new_channel(), await web.new_channel()
    await web.group_add("session-21", both)
    await web.group_add("session-22", both)
    await web.group_add("session-22", second)
    news = [{"type": "trace.event", "seq": n} for n in range(12)]
    heavy = {"type": "trace.event", "seq": 99, "after": 98, "rows": [[99, {"n": 2**70}]]}
    sends = [(f"session-2{1 + n % 2}", message) for n, message in enumerate(news)]
    sends.insert(5, ("session-22", heavy))
    sends.append(("session-23", {"type": "run.done"}))  # nobody listens
    connection = worker.connection(0)
    scripts = []
    real_eval = connection.eval

    async def counted(*args):  # type: ignore[no-untyped-def]
        scripts.append(args[1])  # how many keys
        return await real_eval(*args)

    connection.eval = counted
    assert await worker.group_send_many(sends, fallback=without_rows) == []
    assert scripts == [len(news) + 1], "one script, a message per send heard (the pages share a key)"
    light = {"type": "trace.event", "seq": 99}
    assert await drain(web, both) == [*news[:5], light, *news[5:]]
    assert await drain(web, second) == [*news[1:5:2], light, *news[5::2]]
    # Without a fallback, the message that cannot go is named, and the rest still go.
    failed = await worker.group_send_many([("session-22", heavy), ("session-22", news[0])])
    assert [position for position, _ in failed] == [0]
    assert await drain(web, second) == [news[0]]
    await worker.flush()


async def test_a_redis_host_that_is_down_costs_only_its_own_pages_their_news(redis_url):
    """With two Redis hosts and one down, one batch's sends used to fail together: the pages
    whose groups live on the live host are still told, and the sends that could not go are
    named."""
    from chat.layers import GroupSendLayer

    sender = GroupSendLayer(hosts=[redis_url, "redis://127.0.0.1:1/0"])  # nothing listens on port 1
    for _ in range(100):  # a page whose messages live on the live host, as the sender hashes it
        web = GroupSendLayer(hosts=[redis_url])
        page = await web.new_channel()
        if sender.consistent_hash(web.non_local_name(page)) == 0:
            break
    groups = [f"session-{n}" for n in range(100)]
    alive = next(g for g in groups if sender.consistent_hash(g) == 0)
    down = next(g for g in groups if sender.consistent_hash(g) == 1)
    await web.group_add(alive, page)
    news = {"type": "trace.event", "seq": 1}
    failed = await sender.group_send_many([(down, {"type": "trace.event", "seq": 0}), (alive, news)])
    assert [position for position, _ in failed] == [0]
    assert await drain(web, page) == [news]
    await web.flush()
