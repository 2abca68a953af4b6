"""Answer drafts: streamed in batches, a draft until approved, identifiable when discarded."""

from __future__ import annotations

from collections.abc import AsyncIterator

from reasoning.llm.base import LLMError, LLMRequest, LLMResponse, RetryPolicy
from reasoning.llm.scripted import ScriptedClient
from tests.reasoning.helpers import engine, plan, quality, run, tool

LONG_ANSWER = "The capital of France is Paris, on the Seine, and it has been for a long time. " * 3


def folded(events) -> dict[str, str]:
    """Draft texts rebuilt from their deltas by offset, as a page would."""
    drafts: dict[str, str] = {}
    for event in events:
        p = event.payload
        text = drafts.get(p["draft"], "")
        assert p["offset"] == len(text), "batches arrive in order, each starting where the last ended"
        drafts[p["draft"]] = text + p["text"]
    return drafts


async def test_text_streams_in_batches_and_folds_back_into_the_answer():
    llm = ScriptedClient(
        by_component={"agent": [LONG_ANSWER], "evaluation": [quality(True, 0.9)]}, chunk=6, chunk_delay=0.004
    )
    result, sink = await run(engine(llm, stream_batch_ms=30), "What is the capital of France?")
    deltas = sink.of("answer.delta")
    chunks = -(-len(LONG_ANSWER) // 6)
    assert 1 < len(deltas) < chunks / 2, f"{len(deltas)} batches for {chunks} chunks"
    assert folded(deltas) == {deltas[0].payload["draft"]: result.answer}
    assert all(d.level == "trace" and d.payload["attempt"] == 1 for d in deltas)


async def test_a_rejected_draft_is_discarded_with_its_quality_and_the_next_attempt_streams_anew():
    llm = ScriptedClient(
        by_component={
            "agent": ["Only half an answer.", "Part one.", "Part two."],
            "evaluation": [quality(False, 0.45, "part two"), quality(True, 0.9)],
            "planning": [plan("Part one", "Part two")],
        }
    )
    result, sink = await run(engine(llm), "Tell me about both parts")
    rejected = sink.of("answer.discarded")[0].payload
    assert rejected["reason"] == "quality" and rejected["quality"] == 0.45 and rejected["threshold"] == 0.6
    assert rejected["missing_aspects"] == ["part two"] and rejected["text"] == "Only half an answer."
    assert sink.of("quality.completed")[0].payload["draft"] == rejected["draft"]
    final = sink.of("answer.final")[0].payload
    assert final["draft"] not in (None, rejected["draft"])
    assert folded(sink.of("answer.delta"))[final["draft"]] == result.answer
    assert [d.payload["attempt"] for d in sink.of("answer.delta")] == [1, 2]


async def test_text_written_before_a_tool_call_is_not_the_answer():
    llm = ScriptedClient(
        by_component={
            "agent": [
                {**tool("calculator", expression="17*23"), "text": "Let me calculate that."},
                "It is 391.",
            ],
            "evaluation": [quality(True, 0.95)],
        }
    )
    result, sink = await run(engine(llm), "What is 17*23?")
    discarded = sink.of("answer.discarded")[0].payload
    assert discarded["reason"] == "tool_call" and discarded["text"] == "Let me calculate that."
    assert result.answer == "It is 391." and sink.of("answer.final")[0].payload["draft"] != discarded["draft"]


class CutMidStream(ScriptedClient):
    """Streams half an answer, then fails as an overloaded server would; the retry succeeds."""

    def __init__(self) -> None:
        super().__init__(
            by_component={"agent": ["Paris."], "evaluation": [quality(True, 0.9)]},
            retry=RetryPolicy(max_retries=2, base_delay=0.0, max_delay=0.0),
        )
        self.cut = False

    async def stream(self, request: LLMRequest) -> AsyncIterator[str | LLMResponse]:
        if request.component == "agent" and not self.cut:
            self.cut = True
            yield "Par"
            raise LLMError("overloaded", kind="overloaded")
        async for item in super().stream(request):
            yield item


async def test_a_call_retried_mid_stream_voids_what_it_had_streamed():
    result, sink = await run(engine(CutMidStream()), "What is the capital of France?")
    voided = sink.of("answer.discarded")[0].payload
    assert voided["reason"] == "retry" and voided["text"] == "Par"
    final = sink.of("answer.final")[0].payload["draft"]
    assert final != voided["draft"] and folded(sink.of("answer.delta"))[final] == result.answer == "Paris."
