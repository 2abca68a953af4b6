"""ResearchProgressTracker: the memory that crosses escalations."""

import json
from datetime import UTC, datetime, timedelta

from reasoning import ExecutionStrategy, ResearchProgressTracker
from reasoning.analyzer import fallback_analysis
from reasoning.tracker import PlanStep
from reasoning.types import EvaluationResult, ResearchPlan, SubTask

DIRECT, LIGHT, DEEP = ExecutionStrategy


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def tracker(clock=None) -> ResearchProgressTracker:
    return ResearchProgressTracker("Compare A and B", fallback_analysis("test"), now=clock or Clock())


def research_plan(*steps: str, deps: dict[str, list[str]] | None = None) -> ResearchPlan:
    deps = deps or {}
    return ResearchPlan(
        "Compare A and B",
        [
            SubTask(query=text, id=f"step_{i}", dependencies=deps.get(f"step_{i}", []))
            for i, text in enumerate(steps, 1)
        ],
    )


def test_attempts_record_outcome_and_feed_insights():
    t = tracker()
    t.start_attempt(DIRECT)
    evaluation = EvaluationResult(False, 0.4, "too thin", ["What about B?"], ["B's price"])
    t.end_attempt(
        "Escalated", status="escalated", response="A is good", evaluation=evaluation, quality_score=0.4
    )
    assert t.attempts[0].status == "escalated" and t.attempts[0].response == "A is good"
    assert t.insights.knowledge_gaps == ["B's price"]
    assert t.insights.recommended_improvements == ["What about B?"]
    assert t.insights.quality_feedback == ["too thin"]


def test_identical_calls_are_answered_from_the_log():
    t = tracker()
    t.start_attempt(DIRECT)
    assert t.should_execute_tool("search", {"q": "x", "n": 1}) == (True, None)
    t.log_tool_execution("search", {"n": 1, "q": "x"}, success=True, result="R1")
    assert t.should_execute_tool("search", {"q": "x", "n": 1}) == (False, "R1"), (
        "argument order does not matter"
    )
    assert t.should_execute_tool("search", {"q": "y"}) == (True, None)
    assert t.should_execute_tool("search", {"q": "x", "n": 1}, policy="no-cache") == (True, None)


def test_recent_failures_are_not_retried_until_the_window_passes():
    clock = Clock()
    t = tracker(clock)
    t.start_attempt(LIGHT)
    t.log_tool_execution("api", {"id": 1}, success=False, error="503 from upstream")
    execute, cached = t.should_execute_tool("api", {"id": 1})
    assert not execute and "503 from upstream" in cached
    clock.now += timedelta(seconds=301)
    assert t.should_execute_tool("api", {"id": 1}) == (True, None)


def test_refining_keeps_completed_steps_adds_new_and_skips_dropped():
    t = tracker()
    t.set_plan(research_plan("Look at A", "Look at B"), LIGHT)
    t.update_step_status("step_1", "in_progress")
    t.update_step_status("step_1", "completed", findings=["A is fast"], tools_used=["search"])
    added = t.set_plan(research_plan("look at  a", "Prices of both"), DEEP)
    steps = {s.description: s.status for s in t.plan.steps}
    assert steps == {"Look at A": "completed", "Look at B": "skipped", "Prices of both": "pending"}
    assert [s.description for s in added] == ["Prices of both"]
    assert t.plan.revision_count == 1
    assert [s.description for s in t.plan.ready_steps()] == ["Prices of both"]


def test_dynamic_steps_refuse_cycles():
    t = tracker()
    t.set_plan(research_plan("A", "B", deps={"step_2": ["step_1"]}), DEEP)
    assert t.plan.add_dynamic_step(PlanStep("step_3", "C", depends_on=["step_2"]), after_step_id="step_2")
    t.plan.step("step_1").depends_on = ["step_3"]
    assert t.plan.has_cycle()
    t.plan.step("step_1").depends_on = []
    assert not t.plan.add_dynamic_step(PlanStep("step_1", "dup"))
    cyclic = PlanStep("step_4", "D", depends_on=["step_5"])
    t.plan.steps.append(PlanStep("step_5", "E", depends_on=["step_4"]))
    assert not t.plan.add_dynamic_step(cyclic)


def test_context_verbosity_follows_the_seed_decision_tree():
    t = tracker()
    t.start_attempt(DIRECT)
    assert t.context_for(DIRECT).startswith("Query: Compare A and B")
    t.log_tool_execution("search", {"q": "a"}, success=True, result="r" * 500)
    t.end_attempt(
        "Escalated",
        status="escalated",
        quality_score=0.3,
        evaluation=EvaluationResult(False, 0.3, "thin", [], ["gap1", "gap2", "gap3", "gap4"]),
    )
    t.start_attempt(LIGHT)
    compact = t.to_compact_context()
    assert compact.startswith("Progress: 2 attempts, 1 tool calls, 0/0 steps done")
    assert "gap3" in compact and "gap4" not in compact, "compact shows the top 3 gaps"
    t.set_plan(research_plan("Look at A"), LIGHT)
    medium = t.context_for(LIGHT)
    assert "Pending steps" in medium and "gap4" in medium
    full = t.context_for(DEEP)
    assert "Previous attempts" in full and "r" * 200 + "..." in full and "r" * 201 not in full


def test_round_trip_is_exact_and_json_safe():
    clock = Clock()
    t = tracker(clock)
    t.start_attempt(DIRECT)
    t.log_tool_execution("calc", {"e": "1+1"}, success=True, result="2", execution_time_ms=1.5, step_id="s")
    t.end_attempt(
        "Escalated",
        status="escalated",
        response="2",
        evaluation=EvaluationResult(False, 0.5, "why", ["q"], ["m"]),
        quality_score=0.5,
    )
    t.start_attempt(LIGHT)
    t.set_plan(research_plan("A", "B", deps={"step_2": ["step_1"]}), LIGHT)
    t.update_step_status("step_1", "completed", findings=["f"], tools_used=["calc"])
    data = t.to_dict()
    restored = ResearchProgressTracker.from_dict(json.loads(json.dumps(data)), now=clock)
    assert restored.to_dict() == data
    assert restored.should_execute_tool("calc", {"e": "1+1"}) == (False, "2")
    assert restored.current_attempt is restored.attempts[-1]
