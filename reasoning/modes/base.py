"""The one interface every agent mode implements, and what a run returns.

A mode is built once from the model client and settings; each run takes the structured
input (question, conversation, attachments), the tools it may use, a sink for its events,
the state to resume from and the person's memory store, and returns a ReasoningResult.
Hosts choose a mode by name (reasoning.modes.create_mode) and know nothing else about it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any, ClassVar

from reasoning.budget import SpendingLimit
from reasoning.context import Checkpoint
from reasoning.events import Sink
from reasoning.llm.base import Usage
from reasoning.memory import MemoryStore
from reasoning.tools.registry import ToolRegistry
from reasoning.tracker import ResearchProgressTracker
from reasoning.types import ComplexityAnalysis, EvaluationResult, ExecutionStrategy, RunInput


class ReasoningFailed(Exception):
    """Nothing could produce an answer. `user_message` is safe and specific to show."""

    def __init__(self, user_message: str) -> None:
        super().__init__(user_message)
        self.user_message = user_message


@dataclass(frozen=True)
class ResumeState:
    """Where an interrupted run picks up: its stored tracker and the next event number."""

    tracker_state: dict[str, Any] | None = None
    next_sequence: int = 1
    # When the run first started (a worker that died before its first checkpoint left no
    # tracker to say so): its latency counts from then.
    started_at: datetime | None = None


@dataclass
class ReasoningResult:
    answer: str
    analysis: ComplexityAnalysis
    initial_strategy: ExecutionStrategy
    final_strategy: ExecutionStrategy
    attempts: int
    quality: float | None
    evaluation: EvaluationResult | None
    escalations: int
    tracker: ResearchProgressTracker
    usage: Usage
    cost: Decimal
    llm_calls: int
    latency_ms: float
    degraded: list[str] = field(default_factory=list)
    kind: str = "answer"
    # Who chose the first strategy: router, analysis, cache, forced, resumed or fallback.
    routed_by: str = ""
    cancelled_calls: int = 0
    calls_by_component: dict[str, int] = field(default_factory=dict)
    # Why the run reflected afterwards (escalation, low_quality, failure), or None.
    reflection_trigger: str | None = None

    @property
    def escalated(self) -> bool:
        return self.escalations > 0


class Mode(ABC):
    """An agent mode. Subclasses may accept extra keyword options for debugging and tests."""

    name: ClassVar[str]

    @abstractmethod
    async def run(
        self,
        run_input: RunInput | str,
        *,
        tools: ToolRegistry | None = None,
        sink: Sink | None = None,
        resume: ResumeState | None = None,
        lessons: Sequence[str] = (),
        checkpoint: Checkpoint | None = None,
        budget: SpendingLimit | None = None,
        memory: MemoryStore | None = None,
    ) -> ReasoningResult:
        """Answer one user turn; raises ReasoningFailed only when no answer can be given.

        `budget` is asked before each escalation: once it is exceeded the run keeps the
        answer of the attempt it is in instead of going deeper. `memory` is the asking
        person's long-term memory; modes without memory ignore it."""
