"""Nexus's reasoning engine: plain async Python, driven by arguments, reporting by events."""

from reasoning.config import ConfigError, ReasoningConfig
from reasoning.events import CallbackSink, Event, ListSink
from reasoning.modes import Mode, ReasoningFailed, ReasoningResult, ResumeState, create_mode
from reasoning.modes.adaptive import AdaptiveReasoningLoop
from reasoning.tracker import ResearchProgressTracker
from reasoning.types import (
    Attachment,
    ComplexityAnalysis,
    ComplexityLevel,
    EvaluationResult,
    ExecutionStrategy,
    ResearchPlan,
    RunInput,
    SubTask,
)

__all__ = [
    "AdaptiveReasoningLoop",
    "Attachment",
    "CallbackSink",
    "ComplexityAnalysis",
    "ComplexityLevel",
    "ConfigError",
    "EvaluationResult",
    "Event",
    "ExecutionStrategy",
    "ListSink",
    "Mode",
    "ReasoningConfig",
    "ReasoningFailed",
    "ReasoningResult",
    "ResearchPlan",
    "ResearchProgressTracker",
    "ResumeState",
    "RunInput",
    "SubTask",
    "create_mode",
]
