"""PerceptionAgent (the sensory cortex): what the question asks, names, brings and requires.

Perception is local and costs no model call: the local router reads the question's asks
and complexity (the same reading the adaptive mode routes by), and a few patterns pick out
entities, the resources the person attached or mentioned, and the constraints the answer
must respect (length, format, language, time). The Executive plans from this reading.
"""

from __future__ import annotations

import re
from typing import Any

from reasoning.context import RunContext
from reasoning.modes.cognitive.messaging import Agent, CognitiveContext, CognitiveMessage
from reasoning.routing import Router

_MENTION = re.compile(r"@([\w./\-]+)")
_QUOTED = re.compile(r"[\"“']([^\"”']{2,60})[\"”']")
_NAME = re.compile(r"\b([A-Z][\w\-]*(?:\s+[A-Z][\w\-]*)*)")
_NUMBER = re.compile(r"\b\d[\d,.]*%?")
_CONSTRAINTS = (
    (
        re.compile(
            r"\b(?:in|under|at most|no more than|within)\s+(\d+)\s+(words|sentences|lines|bullets?|points)",
            re.I,
        ),
        "length",
    ),
    (
        re.compile(r"\b(?:as a|in a)\s+(table|list|bullet list|checklist|paragraph|haiku|email)\b", re.I),
        "format",
    ),
    (
        re.compile(r"\bin\s+(English|French|German|Spanish|Italian|Portuguese|Dutch|Japanese|Chinese)\b"),
        "language",
    ),
    (re.compile(r"\b(today|tomorrow|yesterday|this week|last week|next week|by \w+day)\b", re.I), "time"),
    (re.compile(r"\b(without|avoid|don't|do not|never)\s+([\w\s]{3,40})", re.I), "exclusion"),
)
_SENTENCE_START = frozenset(
    {
        "What",
        "How",
        "Why",
        "When",
        "Where",
        "Which",
        "Who",
        "Can",
        "Could",
        "Please",
        "Is",
        "Are",
        "Do",
        "Does",
        "Explain",
        "Compare",
        "Give",
        "List",
        "Tell",
        "Write",
        "The",
        "A",
        "An",
        "I",
        "My",
        "We",
        "Our",
        "Hi",
        "Hello",
        "And",
        "Then",
        "Also",
    }
)


def perceive(question: str, *, attachments: list[dict[str, Any]], conversation: int = 0) -> dict[str, Any]:
    """The reading of one question: intent, entities, resources, constraints, complexity."""
    decision = Router().route(question, attachments=len(attachments), conversation=conversation)
    entities: list[str] = []
    for match in _NAME.finditer(question):
        words = [w for w in match.group(1).split() if w not in _SENTENCE_START]
        if words:
            entities.append(" ".join(words))
    entities += [m.group(1) for m in _QUOTED.finditer(question)]
    entities += _NUMBER.findall(question)
    constraints = []
    for pattern, kind in _CONSTRAINTS:
        for match in pattern.finditer(question):
            constraints.append({"kind": kind, "text": match.group(0).strip()})
    resources = [{"kind": a.get("kind", ""), "title": a.get("title", "")} for a in attachments]
    resources += [
        {"kind": "mention", "title": m}
        for m in _MENTION.findall(question)
        if m not in {a.get("title") for a in attachments}
    ]
    intent = (
        "work" if decision.asks_for_work else "multi_part" if len(decision.reading.asks) > 1 else "question"
    )
    return {
        "intent": intent,
        "asks": list(decision.reading.asks),
        "entities": list(dict.fromkeys(e for e in entities if e))[:12],
        "resources": resources,
        "constraints": constraints,
        "complexity": decision.level.value,
        "analysis": decision.analysis().to_dict(),
        "router": decision.to_dict(),
    }


class PerceptionAgent(Agent):
    name = "perception"

    def __init__(self, ctx: RunContext) -> None:
        self.ctx = ctx

    async def handle(
        self, message: CognitiveMessage, workspace: CognitiveContext
    ) -> tuple[dict[str, Any], str]:
        reading = perceive(
            workspace.user_query,
            attachments=[a.to_dict() for a in self.ctx.attachments],
            conversation=len(workspace.conversation_history),
        )
        workspace.perception = reading
        said = (
            f"intent {reading['intent'].replace('_', '-')}, {reading['complexity']}; "
            f"{len(reading['asks'])} ask(s), "
            f"{len(reading['entities'])} entit(ies), {len(reading['resources'])} resource(s), "
            f"{len(reading['constraints'])} constraint(s)"
        )
        return reading, said
