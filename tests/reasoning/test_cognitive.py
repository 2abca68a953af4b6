"""The cognitive mode (seed 002): each agent alone with the scripted model, then the coordinator.

The agents talk only through CognitiveMessages on the bus; every message is an
`agent.message` event, so these tests read the run's timeline the way the panel does.
"""

import asyncio

import pytest

from reasoning import ListSink, ReasoningConfig, ResumeState, RunInput, create_mode
from reasoning.context import ModelSet, RunContext
from reasoning.events import Emitter
from reasoning.llm.offline import OfflineClient
from reasoning.llm.scripted import ScriptedClient
from reasoning.memory import EPISODIC, SEMANTIC, InMemoryStore, MemoryItem, rank
from reasoning.modes.cognitive import CognitiveBus, CognitiveContext, CognitiveMode
from reasoning.modes.cognitive.executive import ExecutiveAgent
from reasoning.modes.cognitive.memory import MemoryAgent, stated_fact
from reasoning.modes.cognitive.motor import MotorAgent
from reasoning.modes.cognitive.perception import PerceptionAgent, perceive
from reasoning.tools.local import builtin_provider
from reasoning.tools.registry import ToolRegistry
from reasoning.tracker import ResearchProgressTracker
from reasoning.types import Attachment, ExecutionStrategy, ResearchPlan, SubTask

from .helpers import QUALITY_LAYERS_OFF, CountingTools, complete, critique, plan, quality, tool

DEEP = {**QUALITY_LAYERS_OFF, "force_strategy": ExecutionStrategy.DEEP_REASONING}


def workspace_for(llm, question, *, tools=None, attachments=(), **config):
    sink = ListSink()
    ctx = RunContext(
        config=ReasoningConfig(**{**QUALITY_LAYERS_OFF, **config}),
        models=ModelSet(llm, ReasoningConfig(**{**QUALITY_LAYERS_OFF, **config})),
        emitter=Emitter(sink),
        run_input=RunInput.of(question, (), list(attachments)),
        tools=tools or ToolRegistry([builtin_provider()]),
    )
    ws = CognitiveContext(user_query=question, original_query=question, conversation_history=[])
    return ctx, CognitiveBus(ctx, ws), sink


def timeline(sink):
    return [
        (p["type"], p["sender"], p["recipient"], p["action"])
        for p in (e.payload for e in sink.of("agent.message"))
    ]


# --- Perception -------------------------------------------------------------------------


async def test_perception_reads_intent_entities_resources_and_constraints_without_a_model_call():
    llm = ScriptedClient()
    question = "Compare PostgreSQL and SQLite for @runbook.md in 100 words, as a table"
    ctx, bus, sink = workspace_for(llm, question, attachments=[Attachment("document", "runbook.md", "text")])
    bus.register(PerceptionAgent(ctx))
    reading = await bus.request("cortex", "perception", "perceive", {}, summary="read it")
    assert {"PostgreSQL", "SQLite"} <= set(reading["entities"])
    assert {r["title"] for r in reading["resources"]} == {"runbook.md"}
    assert {c["kind"] for c in reading["constraints"]} >= {"length", "format"}
    assert reading["complexity"] in ("medium", "complex") and reading["analysis"]["recommended_strategy"]
    assert llm.history == [], "perception is local"
    assert timeline(sink) == [
        ("request", "cortex", "perception", "perceive"),
        ("response", "perception", "cortex", "perceive"),
    ]


def test_perception_reads_a_simple_lookup_as_simple():
    assert perceive("What is 17*23?", attachments=[])["complexity"] == "simple"


# --- Memory -----------------------------------------------------------------------------


async def test_memory_agent_recalls_what_is_relevant_and_reports_it():
    store = InMemoryStore(
        [
            MemoryItem(SEMANTIC, "Our staging database is db-2 in Frankfurt", source="you said so"),
            MemoryItem(EPISODIC, "Asked: lunch options near the office. Answered: the noodle bar."),
        ]
    )
    ctx, bus, sink = workspace_for(ScriptedClient(), "Which staging database do we use?")
    ctx.lessons = ["Check the deploy log before blaming the database"]
    bus.register(MemoryAgent(ctx, store))
    body = await bus.request("cortex", "memory", "recall", {}, summary="recall")
    texts = [item["text"] for item in body["items"]]
    assert texts[0] == "Our staging database is db-2 in Frankfurt"
    assert not any("noodle" in t for t in texts), "an unrelated episode is not recalled"
    assert body["counts"]["procedural"] == 1, "lessons are procedural memory"
    recalled = sink.of("memory.recalled")[0].payload["items"]
    assert [i["kind"] for i in recalled] == ["semantic", "procedural"]


async def test_memory_agent_stores_an_episode_and_the_facts_a_person_asks_it_to_keep():
    store = InMemoryStore()
    question = "Remember that our on-call rotation changes every Monday at 9:00."
    ctx, bus, _ = workspace_for(ScriptedClient(), question)
    bus.register(MemoryAgent(ctx, store))
    await bus.request("cortex", "memory", "store", {"answer": "Noted.", "quality": 0.9}, summary="store")
    kinds = {item.kind: item for item in store.items}
    assert kinds[SEMANTIC].text == "our on-call rotation changes every Monday at 9:00"
    assert kinds[SEMANTIC].source and kinds[SEMANTIC].confidence == 1.0
    assert question[:30] in kinds[EPISODIC].text and "Noted." in kinds[EPISODIC].text
    assert stated_fact("What is our on-call rotation?") is None


async def test_a_deleted_memory_is_never_recalled():
    store = InMemoryStore([MemoryItem(SEMANTIC, "The VPN gateway is vpn-3.example.net")])
    assert await store.recall("Which VPN gateway do we use?")
    store.forget(store.items[0].id)
    assert await store.recall("Which VPN gateway do we use?") == []


async def test_a_deleted_fact_is_not_recalled_through_the_episodes_that_repeat_it():
    store = InMemoryStore()
    mode = CognitiveMode(OfflineClient(latency=0), None, ReasoningConfig(**QUALITY_LAYERS_OFF))
    await mode.run("Remember that our VPN gateway is vpn-3.example.net", memory=store)
    await mode.run("Which VPN gateway do we use?", memory=store)  # recalls it, answers with it
    await mode.run("What is 6*7?", memory=store)
    fact = next(i for i in store.items if i.kind == SEMANTIC)
    assert sum("vpn-3" in i.text for i in store.items) >= 2, "the fact and the episode that stated it"
    assert any(i.text.startswith("Asked: Which VPN") for i in store.items), "an episode derived from it"
    store.forget(fact.id)
    assert not any("vpn-3" in i.text or "Which VPN" in i.text for i in store.items)
    assert await store.recall("Which VPN gateway do we use?") == []
    sink = ListSink()
    result = await mode.run("Which VPN gateway do we use?", sink=sink, memory=store)
    assert sink.of("memory.recalled")[0].payload["items"] == [] and "vpn-3" not in result.answer
    assert any("6*7" in i.text for i in store.items), "an unrelated exchange is still remembered"


def test_recall_needs_more_than_one_common_word():
    items = [
        MemoryItem(SEMANTIC, "The team lunch is on Fridays"),
        MemoryItem(SEMANTIC, "Deploys go out on Tuesdays"),
    ]
    assert rank("When do deploys go out?", items)[0].text == "Deploys go out on Tuesdays"
    assert rank("Which team owns billing?", items) == []


def test_recall_prefers_the_close_answer_to_look_alikes_sharing_its_common_words():
    answer = MemoryItem(SEMANTIC, "Deploys to production happen on Tuesdays and Thursdays")
    look_alikes = [
        MemoryItem(SEMANTIC, f"The {tool} deploy window of environment {i} is three days")
        for i, tool in enumerate(["kafka", "redis", "nginx", "vault"] * 10)
    ]
    recalled = rank("Which days do we deploy to production?", [*look_alikes, answer])
    assert [m.text for m in recalled] == [answer.text]
    # Without the close answer, the look-alikes are what there is.
    assert len(rank("Which days do we deploy to production?", look_alikes)) == 5


# --- Executive --------------------------------------------------------------------------


async def test_executive_plans_with_the_adaptive_planner_and_critic():
    llm = ScriptedClient(
        by_component={
            "planning": [
                plan("Find the outage window", "Explain the cause"),
                plan("Find the window", "Explain it"),
            ],
            "critic": [critique(0.4, "major")],
        }
    )
    ctx, bus, sink = workspace_for(llm, "Why did the March outage happen?", enable_critic=True)
    ctx.tracker = ResearchProgressTracker(ctx.question, _analysis())
    bus.register(ExecutiveAgent(ctx))
    body = await bus.request("cortex", "executive", "plan", {"strategy": "deep_reasoning"}, summary="plan")
    assert body["steps"] == ["Find the window", "Explain it"], "a low critique asks the planner again"
    assert [r.component for r in llm.history] == ["planning", "critic", "planning"]
    assert "Critique of the previous version" in llm.requests_for("planning")[1].messages[-1]["content"]
    assert sink.of("plan.created") and sink.of("critique.completed")


async def test_executive_falls_back_to_one_step_when_the_planner_fails_and_says_so():
    llm = ScriptedClient(by_component={"planning": [RuntimeError("planner down")] * 4})
    ctx, bus, sink = workspace_for(llm, "Plan our migration to PostgreSQL")
    ctx.tracker = ResearchProgressTracker(ctx.question, _analysis())
    bus.register(ExecutiveAgent(ctx))
    body = await bus.request("cortex", "executive", "plan", {"strategy": "deep_reasoning"}, summary="plan")
    assert body["steps"] == ["Plan our migration to PostgreSQL"]
    assert sink.of("component.degraded")[0].payload["component"] == "planner"


# --- Motor ------------------------------------------------------------------------------


async def test_motor_runs_steps_through_the_registry_and_the_tracker_deduplicates_calls():
    counting = CountingTools()
    counting.counted("lookup", "db-2")
    llm = ScriptedClient(
        by_component={
            "agent": [tool("lookup", q="staging"), "It is db-2.", tool("lookup", q="staging"), "db-2 again."]
        }
    )
    ctx, bus, _ = workspace_for(llm, "Which database?", tools=ToolRegistry([counting]))
    ctx.tracker = ResearchProgressTracker(ctx.question, _analysis())
    ctx.tracker.start_attempt(ExecutionStrategy.DEEP_REASONING)
    ctx.tracker.set_plan(
        ResearchPlan("q", [SubTask("step_1", "Find it"), SubTask("step_2", "Confirm it")]),
        ExecutionStrategy.DEEP_REASONING,
    )
    await ctx.tools.ensure_loaded()
    bus.register(MotorAgent(ctx))
    for step in ("step_1", "step_2"):
        body = await bus.request(
            "cortex", "motor", "execute", {"step_id": step, "strategy": "deep_reasoning"}, summary="do"
        )
        assert body["status"] == "completed" and body["tools_used"] == ["lookup"]
    assert counting.calls == {"lookup": 1}, "the second identical call is answered from the tracker"
    assert [s.status for s in ctx.tracker.plan.steps] == ["completed", "completed"]


# --- the coordinator, end to end ------------------------------------------------------


def deep_script(**extra):
    return ScriptedClient(
        by_component={
            "planning": [plan("Find the numbers", "Compare them")],
            "agent": ["Numbers: 3 and 5.", "5 is larger."],
            "evaluation": [complete(True), quality(True, 0.9)],
            "synthesis": ["5 is larger than 3."],
            **extra,
        }
    )


async def test_the_coordinator_runs_the_five_agents_and_every_message_is_on_the_timeline():
    store = InMemoryStore([MemoryItem(SEMANTIC, "Numbers we compare come from the sales report")])
    llm = deep_script()
    mode = CognitiveMode(llm, ToolRegistry([builtin_provider()]), ReasoningConfig(**DEEP))
    sink = ListSink()
    result = await mode.run("Compare the numbers in the sales report", sink=sink, memory=store)
    assert result.answer == "5 is larger than 3." and result.quality == 0.9 and result.degraded == []
    messages = [e.payload for e in sink.of("agent.message")]
    assert {m["recipient"] for m in messages} >= {"perception", "memory", "executive", "motor", "cortex"}
    requests = {m["correlation_id"] for m in messages if m["type"] == "request"}
    responses = {m["correlation_id"] for m in messages if m["type"] == "response"}
    assert requests == responses, "every request is answered"
    assert all("duration_ms" in m for m in messages if m["type"] == "response")
    actions = [m["action"] for m in messages if m["type"] == "request"]
    assert actions[:3] == ["perceive", "recall", "plan"] and actions[-1] == "store"
    assert actions.count("execute") == 2
    recalled = sink.of("memory.recalled")[0].payload["items"]
    assert recalled[0]["text"] == "Numbers we compare come from the sales report"
    assert "sales report" in str(llm.requests_for("agent")[0].messages), "recalled memory reaches the steps"
    assert any(i.kind == EPISODIC and "5 is larger" in i.text for i in store.items), (
        "the exchange is remembered"
    )
    assert sink.kinds()[-1] == "run.finished"
    assert [e.sequence for e in sink.events] == list(range(1, len(sink.events) + 1))


async def test_a_failing_memory_store_degrades_and_the_run_still_answers():
    class Broken:
        async def recall(self, query, *, limit=5):
            raise ConnectionError("memory database unreachable")

        async def remember(self, items):
            raise ConnectionError("memory database unreachable")

    mode = CognitiveMode(deep_script(), None, ReasoningConfig(**DEEP))
    sink = ListSink()
    result = await mode.run("Compare the numbers", sink=sink, memory=Broken())
    assert result.answer == "5 is larger than 3."
    degraded = [e.payload for e in sink.of("component.degraded")]
    assert [d["component"] for d in degraded] == ["memory", "memory"]
    assert "memory database unreachable" in degraded[0]["error"] and degraded[0]["fallback"]
    assert ("error", "memory", "cortex", "recall") in timeline(sink)


async def test_a_broken_loop_falls_back_to_one_plain_answer_and_says_so(monkeypatch):
    from reasoning.modes.cognitive.cortex import CortexCoordinator

    async def broken(self):
        raise KeyError("boom")

    monkeypatch.setattr(CortexCoordinator, "perceive", broken)
    llm = ScriptedClient(by_component={"agent": ["Plain answer."]})
    sink = ListSink()
    result = await CognitiveMode(llm, None, ReasoningConfig(**DEEP)).run("Anything", sink=sink)
    assert result.answer == "Plain answer." and "cognitive_loop" in result.degraded
    assert sink.of("component.degraded")[0].payload["fallback"] == "answering directly without the agents"


async def test_a_resumed_run_keeps_its_plan_and_completed_steps():
    states = []

    async def checkpoint(state):
        states.append(state)

    first = ScriptedClient(
        by_component={
            "planning": [plan("Find the numbers", "Compare them")],
            "agent": ["Numbers: 3 and 5.", asyncio.CancelledError()],
        }
    )
    config = ReasoningConfig(**{**DEEP, "parallel_execution": False})
    with pytest.raises(asyncio.CancelledError):
        await CognitiveMode(first, None, config).run("Compare the numbers", checkpoint=checkpoint)
    state = states[-1]
    assert state["plan"]["steps"][0]["status"] == "completed"

    second = ScriptedClient(
        by_component={
            "agent": ["5 is larger."],
            "evaluation": [complete(True), quality(True, 0.9)],
            "synthesis": ["5 is larger than 3."],
        }
    )
    sink = ListSink()
    result = await CognitiveMode(second, None, config).run(
        "Compare the numbers", sink=sink, resume=ResumeState(tracker_state=state, next_sequence=40)
    )
    assert result.answer == "5 is larger than 3."
    assert second.requests_for("planning") == [], "the plan survives the worker"
    asked = [r.hints.get("query") for r in second.requests_for("agent")]
    assert asked == ["Compare them"], "a completed step is not run again"
    assert sink.events[0].sequence == 40 and sink.events[0].payload["resumed"] is True


async def test_memory_stays_with_its_owner_in_the_engine():
    alice = InMemoryStore([MemoryItem(SEMANTIC, "Alice's salary review is scheduled for the 14th of March")])
    bob = InMemoryStore()
    llm = ScriptedClient(default="I do not know.")
    mode = CognitiveMode(llm, None, ReasoningConfig(**QUALITY_LAYERS_OFF))
    sink = ListSink()
    await mode.run("When is the salary review scheduled?", sink=sink, memory=bob)
    assert sink.of("memory.recalled")[0].payload["items"] == []
    assert "14th of March" not in str([r.messages for r in llm.history])
    await mode.run("When is the salary review scheduled?", memory=alice)
    assert any("14th of March" in str(r.messages) for r in llm.history), "alice's own run recalls it"


@pytest.mark.parametrize("force", [None, "light", "deep"])
async def test_the_offline_model_plays_every_agent(force):
    config = ReasoningConfig.from_env(
        {"FORCE_REASONING_STRATEGY": force} if force else {}, provider="offline"
    )
    mode = create_mode("cognitive", OfflineClient(), config)
    store = InMemoryStore()
    sink = ListSink()
    result = await mode.run(
        "What is 17*23?", tools=ToolRegistry([builtin_provider()]), sink=sink, memory=store
    )
    assert "391" in result.answer and result.degraded == []
    assert {p["sender"] for p in (e.payload for e in sink.of("agent.message"))} >= {
        "cortex",
        "perception",
        "memory",
        "executive",
        "motor",
    }
    assert store.items, "the exchange is remembered"


def _analysis():
    from reasoning.routing import Router

    return Router().route("Why did the March outage happen?").analysis()


async def test_a_run_that_fell_short_leaves_a_lesson_through_the_memory_agent():
    llm = ScriptedClient(
        by_component={
            "agent": ["A weak answer."],
            "evaluation": [quality(False, 0.3, "the numbers", deeper=False)],
            "reflection": [
                {
                    "insights": [],
                    "lessons": ["Ask for the numbers first."],
                    "improvements": [],
                    "confidence": 0.6,
                }
            ],
        }
    )
    config = ReasoningConfig(**{**QUALITY_LAYERS_OFF, "enable_reflection": True})
    sink = ListSink()
    result = await CognitiveMode(llm, None, config).run("What is 17*23?", sink=sink)
    assert result.reflection_trigger == "low_quality"
    assert sink.of("reflection.completed")[0].payload["reflection"]["lessons"] == [
        "Ask for the numbers first."
    ]
    assert ("response", "memory", "cortex", "learn") in timeline(sink)
    assert sink.kinds().index("run.finished") < sink.kinds().index("reflection.completed"), "after the answer"


# --- what a newcomer reads with the offline model (found by a review) ----------------------


def offline_cognitive():
    return CognitiveMode(OfflineClient(latency=0), None, ReasoningConfig(**QUALITY_LAYERS_OFF))


async def test_a_request_to_remember_is_acknowledged_not_searched_for():
    store = InMemoryStore()
    result = await offline_cognitive().run("Remember that our staging database is db-2.", memory=store)
    assert result.answer.startswith(
        "Noted: our staging database is db-2. I'll recall it in later chats; "
        "you can delete it on the Memory page."
    ), result.answer
    assert "found nothing" not in result.answer
    assert [i.text for i in store.items if i.kind == SEMANTIC] == ["our staging database is db-2"]


async def test_recalled_memory_is_quoted_as_what_you_said_not_as_a_document():
    store = InMemoryStore()
    mode = offline_cognitive()
    await mode.run("Remember that our staging database is db-2.", memory=store)
    result = await mode.run("Which database is our staging database?", memory=store)
    assert "From what you told me earlier:" in result.answer and "db-2" in result.answer, result.answer
    assert "What Nexus remembers" not in result.answer
    assert "[semantic]" not in result.answer and "[episodic]" not in result.answer


async def test_episodes_stay_compact_plain_text_and_do_not_snowball():
    store = InMemoryStore()
    mode = offline_cognitive()
    await mode.run("Remember that our staging database is db-2.", memory=store)
    for _ in range(4):
        await mode.run("Which database is our staging database?", memory=store)
    episodes = [i.text for i in store.items if i.kind == EPISODIC]
    asked = [e for e in episodes if e.startswith("Asked: Which database")]
    assert len(asked) == 4 and len({len(e) for e in asked}) == 1, asked
    assert all(len(e) < 400 for e in episodes), episodes
    for episode in episodes:
        assert "**" not in episode and "> " not in episode and "[semantic]" not in episode, episode
        assert "offline model" not in episode, episode
