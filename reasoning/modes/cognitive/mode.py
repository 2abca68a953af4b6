"""The cognitive mode (seed 002): five agents on a message bus, with long-term memory."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from reasoning.budget import SpendingLimit
from reasoning.cache import AnalysisCache
from reasoning.config import ReasoningConfig
from reasoning.context import Checkpoint, ModelSet, RunContext
from reasoning.events import Emitter, Sink
from reasoning.llm.base import LLMClient
from reasoning.memory import MemoryStore
from reasoning.modes.base import Mode, ReasoningResult, ResumeState
from reasoning.modes.cognitive.cortex import CortexCoordinator
from reasoning.tools.registry import ToolRegistry
from reasoning.types import RunInput


class CognitiveMode(Mode):
    """Perception, Memory, Executive and Motor agents coordinated by the Cortex. `memory` is
    the store the host bound to the person asking (None: the run remembers nothing)."""

    name = "cognitive"

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
    ) -> ReasoningResult:
        """Answer one turn, remembering through `memory` (the person's store, or none)."""
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
        cortex = CortexCoordinator(ctx, memory=memory, tracker_state=resume.tracker_state)
        return await cortex.run()
