"""Cross-person leaks found in review: what one person's run learnt reaching another's."""

from __future__ import annotations

from reasoning import AdaptiveReasoningLoop, ReasoningConfig, RunInput
from reasoning.cache import MemoryCache
from reasoning.llm.scripted import ScriptedClient
from reasoning.tools.registry import ToolRegistry
from reasoning.types import Attachment
from tests.reasoning.helpers import ALWAYS_ANALYSE, QUALITY_LAYERS_OFF, analysis, quality, run

SECRET = "Project Falcon buys Acme for 40M"


async def test_an_analysis_made_with_one_persons_chat_is_not_reused_for_anothers_question():
    """The analysis cache is shared by everyone (Redis in a team) and keyed by the question's
    words alone; an analysis made with a chat's earlier turns and attachments speaks of them
    (its rationale is on the trace panel), so a teammate asking the same short follow-up
    ("summarise it") was shown another person's private context, and routed by it."""
    cache = MemoryCache()
    llm = ScriptedClient(
        by_component={
            "analysis": [analysis("medium", rationale=f"Summarise the attached memo: {SECRET}"), analysis()],
            "agent": ["a", "b", "c", "d", "e", "f"],
            "evaluation": [quality(True, 0.9)] * 6,
            "planning": [{"steps": []}] * 3,
        }
    )
    loop = AdaptiveReasoningLoop(
        llm,
        ToolRegistry(),
        ReasoningConfig(analysis_cache_ttl=600, **{**QUALITY_LAYERS_OFF, **ALWAYS_ANALYSE}),
        analysis_cache=cache,
    )
    private = RunInput.of(
        "Summarise it",
        conversation=[{"role": "user", "content": SECRET}, {"role": "assistant", "content": "Noted."}],
        attachments=[Attachment("document", "Falcon memo", SECRET)],
    )
    await loop.run(private)
    _, sink = await run(loop, "summarise it")
    shown = sink.of("analysis.completed")[0].payload
    assert SECRET not in str(shown["analysis"])
    assert shown["cached"] is False
    assert len(llm.requests_for("analysis")) == 2


def test_a_memory_shared_with_the_team_never_names_its_owners_chat_to_others(alice, bob):
    """Staff share a memory item's words with the team; the title of the chat it came from
    stays its owner's (the Memory page says only "someone else's chat"), but every teammate
    whose run recalled it read the title on their trace panel."""
    from chat.memory import memory_recall
    from chat.models import ChatSession, Memory
    from reasoning.memory import SEMANTIC

    private = ChatSession.objects.create(owner=alice, title="My divorce: talking to the lawyer")
    Memory.objects.create(
        owner=alice, kind=SEMANTIC, text="The release train leaves every second Wednesday", session=private
    )
    Memory.objects.update(shared=True)
    assert [m.chat for m in memory_recall(user=alice, query="When does the release train leave?")] == [
        private.title
    ]
    recalled = memory_recall(user=bob, query="When does the release train leave?")
    assert [m.text for m in recalled] == ["The release train leaves every second Wednesday"]
    assert recalled[0].chat == ""
