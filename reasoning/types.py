"""The engine's shared vocabulary: strategies, analyses, plans and evaluations."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class ComplexityLevel(StrEnum):
    SIMPLE = "simple"
    MEDIUM = "medium"
    COMPLEX = "complex"


class ExecutionStrategy(StrEnum):
    DIRECT = "direct"
    LIGHT_PLANNING = "light_planning"
    DEEP_REASONING = "deep_reasoning"

    @property
    def label(self) -> str:
        """The mode name a person reads in the status line."""
        return _LABELS[self]

    def next(self) -> ExecutionStrategy | None:
        """The strategy to escalate to, or None at the deepest level."""
        order = list(ExecutionStrategy)
        index = order.index(self)
        return order[index + 1] if index + 1 < len(order) else None

    @classmethod
    def parse(cls, value: str) -> ExecutionStrategy:
        """Accept the seed's spellings: 'direct', 'light', 'LIGHT_PLANNING', 'deep'."""
        text = value.strip().lower().replace("-", "_").replace(" ", "_")
        aliases = {
            "direct": cls.DIRECT,
            "light": cls.LIGHT_PLANNING,
            "light_planning": cls.LIGHT_PLANNING,
            "deep": cls.DEEP_REASONING,
            "deep_reasoning": cls.DEEP_REASONING,
        }
        if text not in aliases:
            raise ValueError(f"unknown strategy {value!r}; use direct, light or deep")
        return aliases[text]


_LABELS = {
    ExecutionStrategy.DIRECT: "Direct",
    ExecutionStrategy.LIGHT_PLANNING: "Light Reasoning",
    ExecutionStrategy.DEEP_REASONING: "Deep Reasoning",
}


@dataclass
class ComplexityAnalysis:
    complexity_level: ComplexityLevel
    reasoning_required: bool
    recommended_strategy: ExecutionStrategy
    rationale: str
    estimated_iterations: int = 1
    confidence: float = 0.0
    requires_research: bool = False
    requires_synthesis: bool = False
    multi_part_query: bool = False
    tool_count_estimate: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "complexity_level": self.complexity_level.value,
            "reasoning_required": self.reasoning_required,
            "recommended_strategy": self.recommended_strategy.value,
            "rationale": self.rationale,
            "estimated_iterations": self.estimated_iterations,
            "confidence": self.confidence,
            "requires_research": self.requires_research,
            "requires_synthesis": self.requires_synthesis,
            "multi_part_query": self.multi_part_query,
            "tool_count_estimate": self.tool_count_estimate,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ComplexityAnalysis:
        return cls(
            complexity_level=ComplexityLevel(data["complexity_level"]),
            reasoning_required=bool(data["reasoning_required"]),
            recommended_strategy=ExecutionStrategy(data["recommended_strategy"]),
            rationale=data["rationale"],
            estimated_iterations=int(data["estimated_iterations"]),
            confidence=float(data["confidence"]),
            requires_research=bool(data["requires_research"]),
            requires_synthesis=bool(data["requires_synthesis"]),
            multi_part_query=bool(data["multi_part_query"]),
            tool_count_estimate=int(data["tool_count_estimate"]),
        )


@dataclass
class SubTask:
    """One step of a plan. `id` lets other steps depend on it."""

    query: str
    priority: int = 2
    tool_hints: list[str] = field(default_factory=list)
    dependencies: list[str] = field(default_factory=list)
    id: str = ""

    @property
    def description(self) -> str:
        return self.query

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "query": self.query,
            "priority": self.priority,
            "tool_hints": list(self.tool_hints),
            "dependencies": list(self.dependencies),
        }


@dataclass
class ResearchPlan:
    original_query: str
    subtasks: list[SubTask]
    max_iterations: int = 3
    estimated_complexity: str = "medium"
    complexity_analysis: ComplexityAnalysis | None = None
    strategy_summary: str = ""
    lessons_used: list[str] = field(default_factory=list)
    confidence: float = 0.7

    @property
    def current_step(self) -> SubTask | None:
        return self.subtasks[0] if self.subtasks else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "original_query": self.original_query,
            "subtasks": [s.to_dict() for s in self.subtasks],
            "max_iterations": self.max_iterations,
            "estimated_complexity": self.estimated_complexity,
            "strategy_summary": self.strategy_summary,
            "lessons_used": list(self.lessons_used),
        }


@dataclass
class EvaluationResult:
    is_complete: bool
    confidence: float
    reasoning: str
    additional_queries: list[str] = field(default_factory=list)
    missing_aspects: list[str] = field(default_factory=list)
    # The evaluator's view on whether a deeper strategy could do better: an honest "this
    # cannot be known" is not improved by more planning, so it is not escalated.
    deeper_would_help: bool = True

    def to_dict(self) -> dict[str, Any]:
        return {
            "is_complete": self.is_complete,
            "confidence": self.confidence,
            "reasoning": self.reasoning,
            "additional_queries": list(self.additional_queries),
            "missing_aspects": list(self.missing_aspects),
            "deeper_would_help": self.deeper_would_help,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EvaluationResult:
        return cls(
            is_complete=bool(data["is_complete"]),
            confidence=float(data["confidence"]),
            reasoning=data["reasoning"],
            additional_queries=list(data.get("additional_queries", [])),
            missing_aspects=list(data.get("missing_aspects", [])),
            deeper_would_help=bool(data.get("deeper_would_help", True)),
        )


ATTACHMENT_KINDS = ("document", "resource", "command")


@dataclass(frozen=True)
class Attachment:
    """Context the person attached to a question: a mentioned document or resource, or the
    text a /command expanded to. Never part of the question: analysis, planning and quality
    checks read the question; answering reads the attachments too."""

    kind: str
    title: str
    content: str
    source: str = ""

    def __post_init__(self) -> None:
        if self.kind not in ATTACHMENT_KINDS:
            raise ValueError(
                f"unknown attachment kind {self.kind!r}; use one of {', '.join(ATTACHMENT_KINDS)}"
            )

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "title": self.title, "content": self.content, "source": self.source}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Attachment:
        return cls(
            kind=str(data.get("kind") or "document"),
            title=str(data.get("title") or ""),
            content=str(data.get("content") or ""),
            source=str(data.get("source") or ""),
        )


@dataclass(frozen=True)
class RunInput:
    """What one run answers, as separate fields: the question exactly as asked, the earlier
    turns of the conversation, and attachments."""

    question: str
    conversation: tuple[dict[str, Any], ...] = ()
    attachments: tuple[Attachment, ...] = ()

    @classmethod
    def of(
        cls,
        question: str,
        conversation: list[dict[str, Any]] | tuple[dict[str, Any], ...] = (),
        attachments: list[Attachment] | tuple[Attachment, ...] = (),
    ) -> RunInput:
        return cls(question, tuple(conversation), tuple(attachments))


class EngineStateError(RuntimeError):
    """An engine step ran before the state it needs existed: a bug in the engine, not bad input.

    A real exception rather than `assert`, which `python -O` removes."""


def require[T](value: T | None, what: str) -> T:
    """`value`, or EngineStateError naming `what` when it is missing."""
    if value is None:
        raise EngineStateError(f"{what} is missing")
    return value
