"""Nexus's reasoning engine: plain async Python, driven by arguments, reporting by events."""

from reasoning.config import ConfigError, ReasoningConfig
from reasoning.events import CallbackSink, Event, ListSink
from reasoning.loop import AdaptiveReasoningLoop, ReasoningFailed, ReasoningResult
from reasoning.tracker import ResearchProgressTracker
from reasoning.types import (
    ComplexityAnalysis,
    ComplexityLevel,
    EvaluationResult,
    ExecutionStrategy,
    ResearchPlan,
    SubTask,
)

__all__ = [
    "AdaptiveReasoningLoop",
    "CallbackSink",
    "ComplexityAnalysis",
    "ComplexityLevel",
    "ConfigError",
    "EvaluationResult",
    "Event",
    "ExecutionStrategy",
    "ListSink",
    "ReasoningConfig",
    "ReasoningFailed",
    "ReasoningResult",
    "ResearchPlan",
    "ResearchProgressTracker",
    "SubTask",
]
