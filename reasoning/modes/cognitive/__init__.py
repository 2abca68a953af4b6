"""The cognitive mode (seed 002): Cortex, Perception, Memory, Executive and Motor agents."""

from reasoning.modes.cognitive.messaging import CognitiveBus, CognitiveContext, CognitiveMessage, MessageType
from reasoning.modes.cognitive.mode import CognitiveMode

__all__ = ["CognitiveBus", "CognitiveContext", "CognitiveMessage", "CognitiveMode", "MessageType"]
