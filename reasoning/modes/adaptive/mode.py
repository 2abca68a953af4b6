"""The adaptive mode (seed 000, with seed 001's tracker, 003's execution style and 004's
quality layers): the engine's first implementation of the Mode interface."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from reasoning.budget import SpendingLimit
from reasoning.cache import AnalysisCache
from reasoning.config import ReasoningConfig
from reasoning.context import Checkpoint, ModelSet, RunContext
from reasoning.events import Emitter, Sink
from reasoning.llm.base import LLMClient
from reasoning.memory import MemoryStore
from reasoning.modes.adaptive.run import AdaptiveRun
from reasoning.modes.base import Mode, ReasoningResult, ResumeState
from reasoning.tools.registry import ToolRegistry
from reasoning.types import ExecutionStrategy, RunInput


class AdaptiveReasoningLoop(Mode):
    """The engine. Dependencies come in as arguments; results go out as events."""

    name = "adaptive"

    def __init__(
        self,
        llm: LLMClient,
        tools: ToolRegistry | None = None,
        config: ReasoningConfig | None = None,
        *,
        analysis_cache: AnalysisCache | None = None,
        prompts_dir: Path | None = None,
    ) -> None:
        self.config = config or ReasoningConfig()
        self.models = ModelSet(llm, self.config)
        self.tools = tools
        self.analysis_cache = analysis_cache
        self.prompts_dir = prompts_dir

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
        force_strategy: ExecutionStrategy | None = None,
    ) -> ReasoningResult:
        """Answer one turn. `force_strategy` (or FORCE_REASONING_STRATEGY) skips routing, for
        debugging and benchmarks. The adaptive mode keeps no long-term memory (`memory` is
        ignored; lessons are its procedural memory)."""
        resume = resume or ResumeState()
        ctx = RunContext(
            config=self.config,
            models=self.models,
            emitter=Emitter(sink, start_sequence=resume.next_sequence),
            prompts_dir=self.prompts_dir,
            run_input=RunInput(run_input) if isinstance(run_input, str) else run_input,
            tools=tools or self.tools,
            lessons=list(lessons),
            checkpoint=checkpoint,
            budget=budget,
            first_started=resume.started_at,
        )
        run = AdaptiveRun(
            ctx,
            analysis_cache=self.analysis_cache,
            force=force_strategy or self.config.force_strategy,
            tracker_state=resume.tracker_state,
            # Events of an earlier delivery are stored: the run goes on where it stopped, even
            # when it stopped before its first checkpoint.
            resumed=resume.tracker_state is not None or resume.next_sequence > 1,
        )
        return await run.execute()


class ReasoningDrivenMode(AdaptiveReasoningLoop):
    """The adaptive mode executing in seed 003's style: structured reasoning decides the
    tool calls and when a turn ends, and reviews its own draft."""

    name = "reasoning_driven"

    def __init__(
        self,
        llm: LLMClient,
        tools: ToolRegistry | None = None,
        config: ReasoningConfig | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            llm, tools, replace(config or ReasoningConfig(), execution_style="reasoning_driven"), **kwargs
        )
