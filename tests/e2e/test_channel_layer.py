"""The team deployment's channel layer, built from its settings, on the machine's Redis."""

import asyncio
import os
import subprocess
import sys
import textwrap

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
    from channels_redis.core import RedisChannelLayer

    from chat.models import ReasoningRun
    from chat.sink import RunSink, session_group

    layer = RedisChannelLayer(hosts=[redis_url])
    sink = RunSink(ReasoningRun(pk=7, session_id=3, next_sequence=1))
    sink.layer = layer
    channel = await layer.new_channel()
    await layer.group_add(session_group(3), channel)
    row = [5, "tool.called", "Phase 1", "trace", {"arguments": {"n": 2**70}}, "2026-11-26T18:00:00+00:00"]
    news = {"type": "trace.event", "run": 7, "seq": 5, "kind": "tool.called"}
    await sink.push({**news, "after": 4, "rows": [row]})
    assert await asyncio.wait_for(layer.receive(channel), 5) == news
    await layer.flush()
