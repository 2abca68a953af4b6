"""The adaptive mode: routing, DIRECT / LIGHT / DEEP strategies, quality gates, escalation."""

from reasoning.modes.adaptive.mode import AdaptiveReasoningLoop, ReasoningDrivenMode

__all__ = ["AdaptiveReasoningLoop", "ReasoningDrivenMode"]
