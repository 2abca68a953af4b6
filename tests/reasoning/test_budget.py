"""A run that crosses its budget mid-way keeps the answer it has instead of escalating."""

from __future__ import annotations

from reasoning import ExecutionStrategy
from reasoning.llm.scripted import ScriptedClient
from tests.reasoning.helpers import analysis, engine, plan, quality, run


class Allowance:
    """A budget that is used up after `calls` model calls (the host counts them for real)."""

    def __init__(self, llm: ScriptedClient, calls: int) -> None:
        self.llm = llm
        self.calls = calls
        self.asked = 0

    async def exceeded(self) -> str | None:
        self.asked += 1
        if len(self.llm.history) >= self.calls:
            return "Your daily budget of 1,000 tokens is used up; it resets at 00:00 UTC."
        return None


def escalating_llm() -> ScriptedClient:
    return ScriptedClient(
        by_component={
            "analysis": [analysis("simple")],
            "agent": ["It's a kind of computer.", "Qubits hold superpositions.", "Used for chemistry."],
            "evaluation": [quality(False, 0.4, "key principles"), quality(True, 0.88)],
            "planning": [plan("Explain the principles", "List its applications")],
        }
    )


async def test_a_run_over_budget_finishes_its_attempt_and_does_not_escalate():
    llm = escalating_llm()
    budget = Allowance(llm, calls=1)
    result, sink = await run(engine(llm), "What is quantum computing?", budget=budget)
    assert result.final_strategy == ExecutionStrategy.DIRECT and result.escalations == 0
    assert result.answer.startswith("It's a kind of computer."), "the attempt's answer stands"
    assert sink.of("escalation") == []
    degraded = [e.payload for e in sink.of("component.degraded") if e.payload["component"] == "budget"]
    assert degraded and "resets at 00:00 UTC" in degraded[0]["error"]
    assert "planning" not in [r.component for r in llm.history], "no deeper attempt was started"
    assert result.tracker.attempts[-1].outcome == "Best effort: the budget is used up"


async def test_a_run_within_budget_escalates_as_usual():
    llm = escalating_llm()
    budget = Allowance(llm, calls=100)
    result, _ = await run(engine(llm), "What is quantum computing?", budget=budget)
    assert result.final_strategy == ExecutionStrategy.LIGHT_PLANNING and result.escalations == 1
    assert budget.asked == 1, "the budget is asked before escalating, not on every call"
