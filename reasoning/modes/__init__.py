"""Agent modes behind one interface (reasoning/modes/base.py). Hosts pick one by name."""

from __future__ import annotations

from pathlib import Path

from reasoning.cache import AnalysisCache
from reasoning.config import ReasoningConfig
from reasoning.llm.base import LLMClient
from reasoning.modes.base import Mode, ReasoningFailed, ReasoningResult, ResumeState

__all__ = ["MODE_NAMES", "Mode", "ReasoningFailed", "ReasoningResult", "ResumeState", "create_mode"]

MODE_NAMES = ("adaptive", "reasoning_driven", "cognitive")


def create_mode(
    name: str,
    llm: LLMClient,
    config: ReasoningConfig,
    *,
    analysis_cache: AnalysisCache | None = None,
    prompts_dir: Path | None = None,
) -> Mode:
    """The mode called `name` (AGENT_MODE), built from the model client and settings."""
    from reasoning.modes.adaptive import AdaptiveReasoningLoop, ReasoningDrivenMode
    from reasoning.modes.cognitive import CognitiveMode

    modes: dict[str, type[AdaptiveReasoningLoop] | type[CognitiveMode]] = {
        "adaptive": AdaptiveReasoningLoop,
        "reasoning_driven": ReasoningDrivenMode,
        "cognitive": CognitiveMode,
    }
    if name not in modes:
        raise ValueError(f"unknown agent mode {name!r}; valid modes: {', '.join(MODE_NAMES)}")
    return modes[name](llm, None, config, analysis_cache=analysis_cache, prompts_dir=prompts_dir)
