"""The benchmark's scripted runs stay complete as the engine changes (no timing asserted here)."""

import pytest

from tests.bench.engine import run_once, union


@pytest.mark.parametrize("strategy", ["direct", "light", "deep"])
async def test_every_model_call_of_a_bench_run_is_scripted(strategy):
    wall, critical, sink = await run_once(strategy)
    assert sink.of("answer.final") and not sink.of("component.degraded")
    assert 0 < critical <= wall


def test_union_of_intervals():
    assert union([(0, 2), (1, 3), (5, 6)]) == 4
    assert union([]) == 0
