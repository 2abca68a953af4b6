"""The adaptive loop: the seed's self-correction table, escalation memory, fallbacks."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from reasoning import ExecutionStrategy, ReasoningFailed, ResumeState
from reasoning.llm.base import LLMError
from reasoning.llm.scripted import ScriptedClient
from reasoning.progress import utcnow
from reasoning.tools.registry import ToolRegistry
from tests.reasoning.helpers import (
    ALWAYS_ANALYSE,
    CountingTools,
    analysis,
    complete,
    engine,
    plan,
    quality,
    run,
    tool,
)


async def test_simple_arithmetic_stays_direct_and_is_still_quality_checked():
    """Checked locally against the calculator's result: the tool round and the answer are
    the only model calls."""
    llm = ScriptedClient(by_component={"agent": [tool("calculator", expression="2+2"), "2 + 2 = 4"]})
    result, sink = await run(engine(llm), "What is 2+2?")
    assert result.answer == "2 + 2 = 4"
    assert result.final_strategy == ExecutionStrategy.DIRECT
    assert not result.escalated and result.attempts == 1
    assert (
        "quality.started" in sink.kinds() and sink.of("quality.completed")[0].payload["checked_by"] == "local"
    )
    assert sink.of("tool.result")[0].payload["summary"] == "2+2 = 4"
    assert [r.component for r in llm.history] == ["agent", "agent"]


async def test_superficial_direct_answer_escalates_to_light_and_passes():
    llm = ScriptedClient(
        by_component={
            "analysis": [analysis("simple")],
            "agent": [
                "It's a kind of computer.",
                "Qubits hold superpositions.",
                "Used for chemistry and crypto.",
            ],
            "evaluation": [quality(False, 0.4, "key principles", "applications"), quality(True, 0.88)],
            "planning": [plan("Explain the principles of quantum computing", "List its applications")],
        }
    )
    result, sink = await run(engine(llm), "What is quantum computing?")
    assert result.initial_strategy == ExecutionStrategy.DIRECT
    assert result.final_strategy == ExecutionStrategy.LIGHT_PLANNING
    assert result.escalations == 1 and result.quality == 0.88
    assert result.answer == (
        "**Explain the principles of quantum computing**\n\nQubits hold superpositions.\n\n"
        "**List its applications**\n\nUsed for chemistry and crypto."
    ), "a light plan's parts are combined under their headings, without a synthesis call"
    escalation = sink.of("escalation")[0].payload
    assert (escalation["from_strategy"], escalation["to_strategy"]) == ("direct", "light_planning")
    # The rejected DIRECT answer never reached the user: only one final answer event, the approved one.
    assert [e.payload["answer"] for e in sink.of("answer.final")] == [result.answer]
    # The planner was told what the first attempt missed.
    planning_prompt = llm.requests_for("planning")[0].messages[0]["content"]
    assert "key principles" in planning_prompt and "applications" in planning_prompt


async def test_light_answer_missing_aspects_escalates_to_deep():
    llm = ScriptedClient(
        by_component={
            "analysis": [analysis("medium")],
            "planning": [
                plan("Python performance", "Java performance"),
                plan("Python performance", "Java performance", "Memory use of both"),
            ],
            "agent": ["Python is slower.", "Java is faster.", "Java uses more memory."],
            "synthesis": ["Full comparison with memory."],
            "evaluation": [quality(False, 0.55, "memory use"), complete(True, 0.9), quality(True, 0.8)],
        }
    )
    # Research: the light strategy plans it in steps (a plain comparison gets one answer).
    result, sink = await run(engine(llm, **ALWAYS_ANALYSE), "Research Python and Java performance")
    assert [e.payload["strategy"] for e in sink.of("strategy.selected")] == [
        "light_planning",
        "deep_reasoning",
    ]
    assert result.final_strategy == ExecutionStrategy.DEEP_REASONING
    assert result.answer == "Full comparison with memory."
    # DEEP kept LIGHT's two completed steps and ran only the new one.
    started = [e.payload["step_id"] for e in sink.of("step.started")]
    assert len(started) == 3
    assert llm.requests_for("agent")[-1].messages[-1]["content"] == "Memory use of both"


async def test_deep_answer_is_accepted_as_best_effort_below_light_threshold():
    llm = ScriptedClient(
        by_component={
            "planning": [plan("Research it")],
            "agent": ["Some findings."],
            "evaluation": [complete(True), quality(False, 0.52, "depth")],
            "synthesis": ["Best effort answer."],
        }
    )
    result, _ = await run(engine(llm), "Survey everything", force_strategy=ExecutionStrategy.DEEP_REASONING)
    assert result.final_strategy == ExecutionStrategy.DEEP_REASONING and result.attempts == 1
    assert result.answer == "Best effort answer."


async def test_quality_thresholds_come_from_config():
    llm = ScriptedClient(
        by_component={
            "analysis": [analysis("simple")],
            "agent": ["Answer one.", "Step answer."],
            "evaluation": [quality(True, 0.75), quality(True, 0.9)],
            "planning": [plan("Only step")],
        }
    )
    result, sink = await run(engine(llm, min_quality_direct=0.8), "Question?")
    assert sink.of("quality.completed")[0].payload["threshold"] == 0.8
    assert result.escalated, "0.75 passes the seed's 0.6 but not the configured 0.8"


async def test_escalation_reuses_tool_results_instead_of_calling_again():
    counting = CountingTools()
    counting.counted("search", "found")
    counting.counted("now", "12:00", cache_policy="no-cache")
    llm = ScriptedClient(
        by_component={
            "analysis": [analysis("simple")],
            "agent": [
                {"tool": [{"tool": "search", "input": {"q": "x"}}, {"tool": "now", "input": {}}]},
                "partial",
                {"tool": [{"tool": "search", "input": {"q": "x"}}, {"tool": "now", "input": {}}]},
                "full",
            ],
            "evaluation": [quality(False, 0.3, "more"), quality(True, 0.9)],
            "planning": [plan("Look it up")],
        }
    )
    result, sink = await run(engine(llm, tools=ToolRegistry([counting])), "Find x")
    assert result.answer == "full"
    assert counting.calls == {"search": 1, "now": 2}
    cached = [(e.payload["tool"], e.payload["cached"]) for e in sink.of("tool.result")]
    assert cached == [("search", False), ("now", False), ("search", True), ("now", False)]


async def test_independent_steps_run_concurrently_and_dependencies_wait():
    in_flight = 0
    peak = 0

    async def slow_agent(request):
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0.02)
        in_flight -= 1
        return f"done: {request.messages[-1]['content']}"

    class Concurrent(ScriptedClient):
        async def stream(self, request):
            if request.component == "agent":
                self.history.append(request)
                text = await slow_agent(request)
                yield text
                from reasoning.llm.base import LLMResponse

                yield LLMResponse(text=text)
                return
            async for item in super().stream(request):
                yield item

    llm = Concurrent(
        by_component={
            "planning": [plan("A", "B", "C", ("D", ["step_1", "step_2"]))],
            "evaluation": [complete(True), quality(True, 0.9)],
            "filter": [{"kept": [{"id": 1, "relevance": 9}]}],
            "synthesis": ["answer"],
        }
    )
    result, sink = await run(engine(llm), "Four parts", force_strategy=ExecutionStrategy.DEEP_REASONING)
    assert peak == 3, "A, B and C run together; D waits for A and B"
    order = [(e.kind, e.payload["step_id"]) for e in sink.events if e.kind.startswith("step.")]
    assert order.index(("step.started", "step_4")) > order.index(("step.completed", "step_1"))
    assert order.index(("step.started", "step_4")) > order.index(("step.completed", "step_2"))
    assert result.answer == "answer"


async def test_sequential_setting_runs_one_step_at_a_time():
    llm = ScriptedClient(
        by_component={
            "planning": [plan("A", "B")],
            "agent": ["a", "b"],
            "evaluation": [complete(True), quality(True, 0.9)],
            "filter": [{"kept": [{"id": 1, "relevance": 9}, {"id": 2, "relevance": 8}]}],
            "synthesis": ["ab"],
        }
    )
    _, sink = await run(
        engine(llm, max_parallel_steps=1), "Two", force_strategy=ExecutionStrategy.DEEP_REASONING
    )
    steps = [(e.kind, e.payload["step_id"]) for e in sink.events if e.kind.startswith("step.")]
    assert steps == [
        ("step.started", "step_1"),
        ("step.completed", "step_1"),
        ("step.started", "step_2"),
        ("step.completed", "step_2"),
    ]


async def test_deep_adds_steps_the_evaluator_asks_for():
    llm = ScriptedClient(
        by_component={
            "planning": [plan("First", "Second", "Third")],
            "agent": ["one", "two", "three", "four"],
            "evaluation": [
                complete(False, 0.5, "What about the fourth thing?"),
                complete(True),
                quality(True, 0.9),
            ],
            "filter": [{"kept": [{"id": 1, "relevance": 5}, {"id": 4, "relevance": 9}]}],
            "synthesis": ["all four"],
        }
    )
    result, sink = await run(
        engine(llm, max_parallel_steps=1), "Q", force_strategy=ExecutionStrategy.DEEP_REASONING
    )
    assert [e.payload["current"] for e in sink.of("iteration")] == [1, 2]
    assert sink.of("plan.refined")[0].payload["added"][0]["description"] == "What about the fourth thing?"
    filtered = llm.requests_for("synthesis")[-1].hints["results"]
    assert [r["result"] for r in filtered] == ["four", "one"], "the filter's ranking orders the synthesis"
    assert result.answer == "all four"


async def test_a_few_findings_are_synthesized_without_a_filter_call():
    llm = ScriptedClient(
        by_component={
            "planning": [plan("First", "Second")],
            "agent": ["one", "two"],
            "evaluation": [complete(True), quality(True, 0.9)],
            "synthesis": ["both"],
        }
    )
    result, _ = await run(engine(llm), "Q", force_strategy=ExecutionStrategy.DEEP_REASONING)
    assert llm.requests_for("filter") == [], "two findings: nothing for a filter to drop"
    assert result.answer == "both"


async def test_deep_skips_the_completeness_check_when_no_iteration_is_left():
    llm = ScriptedClient(
        by_component={
            "planning": [plan("Only")],
            "agent": ["one"],
            "evaluation": [quality(True, 0.9)],
            "synthesis": ["one, synthesized"],
        }
    )
    result, _ = await run(engine(llm, max_iterations=1), "Q", force_strategy=ExecutionStrategy.DEEP_REASONING)
    assert [r.hints.get("output") for r in llm.requests_for("evaluation")] == ["record_quality_assessment"]
    assert result.answer == "one, synthesized"


async def test_force_strategy_skips_analysis():
    llm = ScriptedClient(by_component={"agent": ["x"], "evaluation": [quality(True, 0.9)]})
    result, sink = await run(engine(llm), "Q", force_strategy=ExecutionStrategy.DIRECT)
    assert llm.requests_for("analysis") == []
    assert sink.of("analysis.completed")[0].payload["forced"] is True
    assert result.final_strategy == ExecutionStrategy.DIRECT


async def test_events_are_numbered_without_gaps_from_the_start_sequence():
    llm = ScriptedClient(
        by_component={"analysis": [analysis()], "agent": ["x"], "evaluation": [quality(True, 0.9)]}
    )
    _, sink = await run(engine(llm), "Q", resume=ResumeState(next_sequence=41))
    assert [e.sequence for e in sink.events] == list(range(41, 41 + len(sink.events)))
    assert sink.events[0].kind == "run.started" and sink.events[-1].kind == "run.finished"
    levels = {e.kind: e.level for e in sink.events}
    assert levels["strategy.selected"] == "status" and levels["llm.call"] == "trace"


async def test_analysis_uses_the_cheaper_analysis_model_and_the_cache():
    from reasoning.cache import MemoryCache

    now = [0.0]
    cache = MemoryCache(clock=lambda: now[0])
    llm = ScriptedClient(
        by_component={
            "analysis": [analysis(), analysis()],
            "agent": ["a", "b", "c"],
            "evaluation": [quality(True, 0.9)] * 3,
        }
    )
    from reasoning import AdaptiveReasoningLoop, ReasoningConfig

    loop = AdaptiveReasoningLoop(
        llm, ToolRegistry(), ReasoningConfig(analysis_cache_ttl=60, **ALWAYS_ANALYSE), analysis_cache=cache
    )
    await loop.run("What is  Python?")
    _, sink = await run(loop, "what is python?")
    assert len(llm.requests_for("analysis")) == 1, "same words, same tools: cached"
    assert sink.of("analysis.completed")[0].payload["cached"] is True
    assert llm.requests_for("analysis")[0].model == "claude-haiku-4-5"
    assert llm.requests_for("agent")[0].model == "claude-sonnet-4-6"
    now[0] = 61
    await loop.run("what is python?")
    assert len(llm.requests_for("analysis")) == 2, "expired after the TTL"


# --- the fallback matrix -------------------------------------------------------------------


async def test_analyzer_failure_defaults_to_light():
    llm = ScriptedClient(
        by_component={
            "analysis": ["complete nonsense without any fields"],
            "planning": [plan("Do it")],
            "agent": ["answer"],
            "evaluation": [quality(True, 0.9)],
        }
    )
    result, sink = await run(engine(llm, **ALWAYS_ANALYSE), "Q")
    degraded = sink.of("component.degraded")[0].payload
    assert degraded["component"] == "complexity_analysis"
    assert result.initial_strategy == ExecutionStrategy.LIGHT_PLANNING
    assert result.analysis.confidence == 0.0


async def test_planner_failure_answers_the_question_as_one_step():
    llm = ScriptedClient(
        by_component={
            "planning": [RuntimeError("planner down")],
            "agent": ["direct answer"],
            "evaluation": [quality(True, 0.9)],
        }
    )
    result, sink = await run(engine(llm), "Q", force_strategy=ExecutionStrategy.LIGHT_PLANNING)
    assert sink.of("component.degraded")[0].payload["component"] == "planner"
    assert result.answer == "direct answer"
    assert llm.requests_for("agent")[0].messages[-1]["content"] == "Q"


@pytest.mark.parametrize(
    "bad_plan",
    [
        {"subtasks": []},
        plan(("A", ["step_2"]), ("B", ["step_1"])),
    ],
    ids=["empty", "cycle"],
)
async def test_unrunnable_plans_never_execute(bad_plan):
    llm = ScriptedClient(
        by_component={
            "planning": [bad_plan, bad_plan],
            "agent": ["fallback answer"],
            "evaluation": [quality(True, 0.9)],
        }
    )
    result, sink = await run(
        engine(llm, max_critique_rounds=1), "Q", force_strategy=ExecutionStrategy.LIGHT_PLANNING
    )
    quick = [e.payload for e in sink.of("critique.completed")]
    assert [c["quick"] for c in quick] == [True, True], "validated twice, without a model call"
    assert quick[0]["critique"]["recommendation"] == "reject"
    assert (
        "cycle" in quick[0]["critique"]["issues"][0]["description"]
        or "no steps" in (quick[0]["critique"]["issues"][0]["description"])
    )
    revised = llm.requests_for("planning")[1].messages[0]["content"]
    assert "Critique of the previous version" in revised
    degraded = sink.of("component.degraded")[0].payload
    assert degraded["component"] == "planner" and "no executable plan after 2 attempt(s)" in degraded["error"]
    assert [e.payload["step_id"] for e in sink.of("step.started")] == ["step_1"]
    assert llm.requests_for("agent")[0].messages[-1]["content"] == "Q"
    assert result.answer == "fallback answer"


async def test_evaluator_failure_accepts_the_answer():
    llm = ScriptedClient(
        by_component={
            "analysis": [analysis()],
            "agent": ["answer"],
            "evaluation": [LLMError("boom", kind="bad_request")],
        }
    )
    result, sink = await run(engine(llm), "Q")
    assert sink.of("component.degraded")[0].payload["component"] == "evaluator"
    assert result.answer == "answer" and not result.escalated


async def test_synthesizer_failure_returns_the_findings():
    llm = ScriptedClient(
        by_component={
            "planning": [plan("A", "B")],
            "agent": ["finding a", "finding b"],
            "synthesis": [RuntimeError("synthesis down")],
            "evaluation": [complete(True), quality(True, 0.9)],
        }
    )
    result, sink = await run(engine(llm), "Q", force_strategy=ExecutionStrategy.DEEP_REASONING)
    assert sink.of("component.degraded")[0].payload["component"] == "synthesizer"
    assert "finding a" in result.answer and "finding b" in result.answer


async def test_whole_loop_failure_falls_back_to_a_plain_answer():
    llm = ScriptedClient(
        by_component={
            "analysis": [analysis()],
            "agent": [LLMError("bad request", kind="bad_request"), "plain answer"],
            "evaluation": [quality(True, 0.9)],
        }
    )
    result, sink = await run(engine(llm), "Q")
    assert sink.of("component.degraded")[-1].payload["component"] == "adaptive_loop"
    assert result.answer == "plain answer" and result.quality is None


async def test_when_nothing_can_answer_the_run_fails_with_a_clear_message():
    llm = ScriptedClient(default=LLMError("Anthropic API error 529: Overloaded", kind="overloaded"))
    with pytest.raises(ReasoningFailed) as failure:
        await run(engine(llm), "Q")
    assert "overloaded" in failure.value.user_message.lower()


async def test_failed_run_reports_run_failed_event():
    from reasoning import ListSink

    sink = ListSink()
    llm = ScriptedClient(default=LLMError("nope", kind="auth"))
    with pytest.raises(ReasoningFailed):
        await engine(llm).run("Q", sink=sink)
    assert sink.events[-1].kind == "run.failed"
    assert "API key" in sink.events[-1].payload["error"]


async def test_overloaded_analysis_after_all_retries_still_gets_an_answer():
    overloaded = LLMError("overloaded", kind="overloaded")
    llm = ScriptedClient(
        by_component={
            "analysis": [overloaded] * 4,  # first try + 3 retries
            "planning": [plan("Q")],
            "agent": ["answer"],
            "evaluation": [quality(True, 0.9)],
        }
    )
    result, sink = await run(engine(llm, **ALWAYS_ANALYSE), "Q")
    call = next(e for e in sink.of("llm.call") if e.payload["component"] == "analysis").payload
    assert call["error_kind"] == "overloaded" and call["retries"] == 3
    assert result.answer == "answer"


async def test_a_very_long_question_is_answered():
    query = "Explain this log. " + "x" * 20_000
    llm = ScriptedClient(
        by_component={"analysis": [analysis()], "agent": ["ok"], "evaluation": [quality(True, 0.9)]}
    )
    result, _ = await run(engine(llm, **ALWAYS_ANALYSE), query)
    assert result.answer == "ok"
    assert "characters omitted" in llm.requests_for("analysis")[0].messages[0]["content"]
    assert llm.requests_for("agent")[0].messages[-1]["content"] == query


async def test_tool_failures_reach_the_model_and_the_run_continues():
    from reasoning.tools.local import LocalToolProvider

    async def hang(**_):
        await asyncio.sleep(30)

    def explode(**_):
        raise ValueError("disk on fire")

    provider = LocalToolProvider("faulty")
    provider.add("hang", hang)
    provider.add("explode", explode)
    provider.add("huge", lambda **_: "x" * 1_000_000)
    llm = ScriptedClient(
        by_component={
            "analysis": [analysis()],
            "agent": [
                {"tool": [{"tool": "hang"}, {"tool": "explode"}, {"tool": "huge"}, {"tool": "missing"}]},
                "coped",
            ],
            "evaluation": [quality(True, 0.9)],
        }
    )
    registry = ToolRegistry([provider], timeout=0.05, max_result_chars=1000)
    result, sink = await run(engine(llm, tools=registry, tool_timeout=0.05), "Q")
    results = {e.payload["tool"]: e.payload for e in sink.of("tool.result")}
    assert "timed out" in results["hang"]["error"]
    assert "disk on fire" in results["explode"]["error"]
    assert results["huge"]["truncated"] and results["huge"]["success"]
    assert "unknown tool 'missing'" in results["missing"]["error"]
    fed_back = llm.requests_for("agent")[1].messages[-1]["content"]
    assert len(fed_back[2]["content"]) < 1100 and fed_back[3]["is_error"] is True
    assert result.answer == "coped"


async def test_malformed_tool_arguments_are_reported_to_the_model():
    from reasoning.llm.base import LLMResponse, ToolCall

    bad = LLMResponse(
        tool_calls=[ToolCall("c1", "calculator", {}, malformed='{"expression": 2+')], stop_reason="tool_use"
    )
    llm = ScriptedClient(
        by_component={"analysis": [analysis()], "agent": [bad, "sorry"], "evaluation": [quality(True, 0.9)]}
    )
    _, sink = await run(engine(llm), "Q")
    assert "not a JSON object" in sink.of("tool.result")[0].payload["error"]


async def test_agent_stops_after_the_tool_round_limit():
    llm = ScriptedClient(
        by_component={
            "analysis": [analysis()],
            "agent": [tool("calculator", expression=f"{n}+1") for n in range(3)] + ["gave up"],
            "evaluation": [quality(True, 0.9)],
        }
    )
    result, _ = await run(engine(llm, max_tool_rounds=3), "Loop forever")
    final = llm.requests_for("agent")[-1]
    assert final.tool_choice == {"type": "none"}
    assert result.answer == "gave up"


async def test_callbacks_adapter_receives_the_seed_callbacks():
    from reasoning import CallbackSink

    log: list[str] = []

    async def on_final(strategy, attempts, quality_, escalated):
        log.append(f"final:{strategy.value}:{attempts}:{escalated}")

    callbacks = {
        "on_analysis_start": lambda: log.append("analysis_start"),
        "on_strategy_selected": lambda s, r: log.append(f"strategy:{s.value}"),
        "on_quality_check_complete": lambda e: log.append(f"quality:{e.confidence:.2f}"),
        "on_tool_call": lambda name, params: log.append(f"tool:{name}"),
        "on_final_response": on_final,
    }
    llm = ScriptedClient(
        by_component={
            "analysis": [analysis()],
            "agent": ["4"],
            "evaluation": [quality(True, 0.95)],
        }
    )
    # The calculator call is foreseen (run before the answer call), and reported all the same.
    # The model evaluator, not the local check, so its verdict reaches the callback.
    await engine(llm, local_answer_check=False).run("What is 2+2?", sink=CallbackSink(callbacks))
    assert log == [
        "analysis_start",
        "strategy:direct",
        "tool:calculator",
        "quality:0.95",
        "final:direct:1:False",
    ]


async def test_resuming_from_a_checkpoint_skips_finished_work():
    class WorkerKilled(BaseException):
        """Stands in for SIGKILL: nothing in the engine may catch it."""

    checkpoints: list[dict] = []

    async def keep_then_die(state):
        checkpoints.append(state)
        if state["plan"] and state["plan"]["steps"][0]["status"] == "completed":
            raise WorkerKilled

    first = ScriptedClient(by_component={"planning": [plan("A", "B")], "agent": ["a"]})
    with pytest.raises(WorkerKilled):
        await engine(first, parallel_execution=False).run(
            "Q", force_strategy=ExecutionStrategy.LIGHT_PLANNING, checkpoint=keep_then_die
        )
    second = ScriptedClient(
        by_component={
            "planning": [plan("A", "B")],
            "agent": ["b"],
            "evaluation": [quality(True, 0.9)],
        }
    )
    # The worker died 40 s into the run: its latency counts from the first start, not the
    # resumption (the usage page's p95 hid exactly the runs that went badly).
    state = {**checkpoints[-1], "created_at": (utcnow() - timedelta(seconds=40)).isoformat()}
    result, sink = await run(engine(second), "Q", resume=ResumeState(tracker_state=state, next_sequence=50))
    assert sink.events[0].payload["resumed"] is True
    assert result.latency_ms >= 40_000 and sink.of("run.finished")[0].payload["latency_ms"] >= 40_000
    # The attempt the worker's death cut off was not judged: the next is no escalation.
    (selected,) = sink.of("strategy.selected")
    assert selected.payload["rationale"] == "Resumed: attempt 1 ended with Interrupted (the worker stopped)"
    assert second.requests_for("analysis") == []
    # A worker that died before the run's first checkpoint left events, not a tracker: the
    # run starts over, and its page says it was resumed (it said "Run started" a second time).
    _, again = await run(engine(ScriptedClient(default="x")), "Q", resume=ResumeState(next_sequence=3))
    assert again.events[0].kind == "run.started" and again.events[0].payload["resumed"] is True
    assert [e.payload["step_id"] for e in sink.of("step.started")] == ["step_2"]
    assert (
        result.answer == "**A**\n\na\n\n**B**\n\nb"
        and result.final_strategy == ExecutionStrategy.LIGHT_PLANNING
    )
