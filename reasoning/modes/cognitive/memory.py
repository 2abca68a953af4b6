"""MemoryAgent (the hippocampus): recall what is relevant before planning, store after answering.

Recall reads the store the host bound to the person asking (episodic and semantic items) and
the lessons earlier reflections left (procedural memory); every recalled item is reported in
a `memory.recalled` event, so the person sees what the run remembered. Storing keeps one
episode per answered question (what was asked and what was answered, summarised, with the
chat it happened in) and the facts the person asked Nexus to remember. Learning reflects on a
run that escalated, degraded or fell short, and leaves lessons (procedural memory).
"""

from __future__ import annotations

import re
from typing import Any

from reasoning.agent import summarize
from reasoning.context import RunContext
from reasoning.memory import EPISODIC, PROCEDURAL, RECALL_LIMIT, SEMANTIC, MemoryItem, MemoryStore
from reasoning.modes.cognitive.messaging import PHASE, Agent, CognitiveContext, CognitiveMessage
from reasoning.quality.reflection import ReflectionAgent, run_summary
from reasoning.text import EARLIER_CHAT, counted, plain_text
from reasoning.types import EvaluationResult, ExecutionStrategy, require

EPISODE_CHARS = 300
# "Remember that our staging database is db-2", "note: deploys happen on Tuesdays".
_FACT = re.compile(
    r"^\s*(?:please\s+)?(?:remember|note|keep in mind|for the record)(?:\s+that)?"
    r"\s*[:,]?\s*(.{8,400}?)\s*[.!]?\s*$",
    re.I | re.S,
)


def stated_fact(question: str) -> str | None:
    """The fact a person asks Nexus to remember, or None."""
    match = _FACT.match(question)
    return match.group(1).strip() if match else None


class MemoryAgent(Agent):
    name = "memory"

    def __init__(self, ctx: RunContext, store: MemoryStore | None) -> None:
        self.ctx = ctx
        self.store = store

    async def handle(
        self, message: CognitiveMessage, workspace: CognitiveContext
    ) -> tuple[dict[str, Any], str]:
        if message.action == "recall":
            return await self.recall(workspace)
        if message.action == "store":
            return await self.remember(message.payload, workspace)
        if message.action == "learn":
            return await self.learn(message.payload)
        raise ValueError(f"memory has no action {message.action!r}")

    async def recall(self, workspace: CognitiveContext) -> tuple[dict[str, Any], str]:
        items: list[MemoryItem] = []
        if self.store is not None:
            items = await self.store.recall(workspace.user_query, limit=RECALL_LIMIT)
        procedural = [
            MemoryItem(PROCEDURAL, lesson, source="lesson from an earlier run") for lesson in self.ctx.lessons
        ]
        workspace.memories = items + procedural
        await self.ctx.emit(
            "memory.recalled",
            PHASE,
            items=[i.to_dict() for i in workspace.memories],
            store=self.store is not None,
        )
        counts = {
            kind: sum(1 for i in workspace.memories if i.kind == kind)
            for kind in (EPISODIC, SEMANTIC, PROCEDURAL)
        }
        said = ", ".join(f"{n} {kind}" for kind, n in counts.items())
        return {"items": [i.to_dict() for i in workspace.memories], "counts": counts}, f"recalled {said}"

    async def remember(
        self, payload: dict[str, Any], workspace: CognitiveContext
    ) -> tuple[dict[str, Any], str]:
        if self.store is None:
            return {"stored": []}, "no memory store for this run: nothing kept"
        question, answer = workspace.original_query, payload.get("answer", "")
        # What this run recalled may be repeated in its answer: the episode is derived from it.
        recalled = [i.id for i in workspace.memories if i.kind != PROCEDURAL and i.id is not None]
        told = compact_answer(answer, [i.text for i in workspace.memories if i.kind != PROCEDURAL])
        items = [
            MemoryItem(
                EPISODIC,
                f"Asked: {summarize(plain_text(question), 300)}\nAnswered: {summarize(told, EPISODE_CHARS)}",
                source="chat",
                confidence=float(payload.get("quality") or 0.7),
                sources=recalled,
            )
        ]
        fact = stated_fact(question)
        if fact:
            items.append(MemoryItem(SEMANTIC, fact, source="you said so in chat", confidence=1.0))
        stored = await self.store.remember(items)
        return {"stored": [i.to_dict() for i in stored]}, f"stored {counted(len(stored), 'item')}"

    async def learn(self, payload: dict[str, Any]) -> tuple[dict[str, Any], str]:
        """Procedural memory: reflect on the run (the adaptive mode's ReflectionAgent); the
        host keeps the lessons (`reflection.completed`) for this person's later planners."""
        ctx = self.ctx
        evaluation = payload.get("evaluation")
        summary = run_summary(
            require(ctx.tracker, "the run's tracker"),
            final_strategy=ExecutionStrategy(payload["final"]),
            evaluation=EvaluationResult.from_dict(evaluation) if evaluation else None,
            escalations=int(payload.get("escalations") or 0),
            degraded=ctx.degraded,
            answer=payload.get("answer", ""),
        )
        reflection = await ReflectionAgent(ctx).reflect(ctx.question, summary, trigger=payload["trigger"])
        await ctx.emit(
            "reflection.completed", "Reflection", reflection=reflection, trigger=payload["trigger"]
        )
        lessons = reflection.get("lessons") or []
        return {"lessons": lessons}, f"learned {len(lessons)} lesson(s)"


def compact_answer(answer: str, recalled: list[str]) -> str:
    """An answer as an episode keeps it: plain text, without the blocks that quote what was
    recalled (an episode quoting episodes grew with every exchange) nor italic notices."""
    blocks = [b.strip() for b in re.split(r"\n\s*\n", answer or "") if b.strip()]
    quoted = [any(_repeats(block, text) for text in recalled) for block in blocks]
    kept = [
        block
        for index, block in enumerate(blocks)
        if not quoted[index]
        and not _NOTICE.match(block)
        # an introduction ("From what you told me earlier:") to a dropped block goes with it
        and not (block.endswith(":") and (index + 1 >= len(blocks) or quoted[index + 1]))
    ]
    text = plain_text("\n".join(kept))
    return text or ("Answered from what Nexus remembered." if any(quoted) else "")


_NOTICE = re.compile(r"^(?:-{3,}\s*)?[*_][^*_].*[*_]$|^-{3,}$", re.S)


def _repeats(block: str, recalled: str) -> bool:
    """Does the block quote a recalled item (its first 60 plain characters)?"""
    head = plain_text(recalled)[:60]
    return bool(head) and head in plain_text(block)


def memory_attachment_text(items: list[MemoryItem]) -> str:
    """Recalled memories as material for answering (never as instructions): one per line,
    each with where it came from; an earlier exchange says so."""
    lines = []
    for item in items:
        when = f", {item.created[:10]}" if item.created else ""
        source = f" ({item.source}{when})" if item.source else ""
        said = " ".join(item.text.split())
        lines.append(f"- {EARLIER_CHAT if item.kind == EPISODIC else ''}{said}{source}")
    return "\n".join(lines)
