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


async def test_the_adaptivity_bench_counts_every_call_of_a_run():
    from reasoning import ExecutionStrategy
    from tests.bench.adaptivity import engine_first_token, offline_run, plain_call

    routed = await offline_run("What is 17*23 and what time is it in Tokyo?")
    forced = await offline_run(
        "What is 17*23 and what time is it in Tokyo?", ExecutionStrategy.DEEP_REASONING
    )
    assert routed.first == "medium" and routed.routed_by == "router" and 0 < routed.calls < forced.calls
    assert await plain_call() > 0 and await engine_first_token() > 0


async def test_routed_runs_on_the_held_out_split_make_at_most_half_the_calls_of_forced_deep():
    """The issue's goal, as a regression guard (call counts are deterministic offline)."""
    from reasoning import ExecutionStrategy
    from reasoning.routing.dataset import load
    from tests.bench.adaptivity import offline_run

    routed = forced = 0
    for row in load("heldout"):
        routed += (await offline_run(row.question)).calls
        forced += (await offline_run(row.question, ExecutionStrategy.DEEP_REASONING)).calls
    assert routed <= 0.5 * forced, f"routed {routed} vs forced DEEP {forced}"


async def test_the_modes_bench_runs_every_mode_without_degrading():
    from tests.bench.modes import MODES, run_mode

    questions = ["What is 17*23?", "What is 17*23 and what time is it in Tokyo?"]
    for name in MODES:
        stats = await run_mode(name, questions)
        assert stats.answered == 2 and stats.degraded == 0 and 0 < stats.critical <= stats.wall
        assert (stats.messages > 0) == (name == "cognitive")


def test_the_labelled_memory_set_names_only_memories_it_has():
    from tests.bench.memory_set import HELDOUT_MEMORIES, HELDOUT_QUESTIONS, MEMORIES, QUESTIONS

    for memories, questions in ((MEMORIES, QUESTIONS), (HELDOUT_MEMORIES, HELDOUT_QUESTIONS)):
        assert all(wanted <= memories.keys() for wanted in questions.values())
        assert sum(1 for wanted in questions.values() if not wanted) >= 4, "questions nothing should answer"
    assert not MEMORIES.keys() & HELDOUT_MEMORIES.keys() and not QUESTIONS.keys() & HELDOUT_QUESTIONS.keys()


def test_the_team_bench_counts_no_negative_cpu_for_a_process_that_exited():
    """A tool server that exited during a load printed "tool servers -9.8" ms per run: its
    seconds were subtracted from the total. A process gone by the second reading counts
    nothing, and one started meanwhile counts all of its seconds."""
    from tests.bench.team import cpu_since

    before = {10: ("tool servers", 5.0), 11: ("postgres", 2.0)}
    after = {11: ("postgres", 2.5), 12: ("tool servers", 0.25)}
    assert cpu_since(before, after) == {"postgres": 0.5, "redis": 0.0, "tool servers": 0.25}
