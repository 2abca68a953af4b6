"""ReasoningConfig: every knob of the engine, loaded and checked once at start-up."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from reasoning.types import ExecutionStrategy


class ConfigError(ValueError):
    """A setting has a bad value. `variable` names the environment variable to fix."""

    def __init__(self, variable: str, message: str) -> None:
        super().__init__(f"{variable}: {message}")
        self.variable = variable


# Default model names per provider: (main model, analysis model).
DEFAULT_MODELS = {
    "anthropic": ("claude-sonnet-4-6", "claude-haiku-4-5"),
    "openai": ("gpt-4o-mini", None),
    "offline": ("nexus-offline", None),
}


@dataclass
class ReasoningConfig:
    # Iteration control
    max_iterations: int = 3
    min_confidence: float = 0.7
    # Complexity routing: the local router decides when it is at least this sure; otherwise
    # the analysis model is asked (and cached)
    simple_threshold: float = 0.3
    complex_threshold: float = 0.7
    router_min_confidence: float = 0.7
    # Start a DIRECT answer while the analysis model is still deciding (discarded if it picks
    # a deeper strategy)
    speculative_direct: bool = True
    # A DIRECT answer to a question the router is sure is simple, resting on a tool's result,
    # is checked locally against that result (no evaluator call when the check is sure)
    local_answer_check: bool = True
    # A one-call answer (a first DIRECT, a light answer covering every part) gets the tools its
    # question plainly needs run first (calculator, clock, document search), not a tool round
    foresight: bool = True
    # Self-correction: the quality an answer needs at each strategy to be shown
    min_quality_direct: float = 0.6
    min_quality_light: float = 0.7
    min_quality_deep: float = 0.5
    # Models; None means "the main model"
    model: str = "claude-sonnet-4-6"
    analysis_model: str | None = "claude-haiku-4-5"
    planning_model: str | None = None
    evaluation_model: str | None = None
    synthesis_model: str | None = None
    # Prompt caching on system prompt and tool definitions
    enable_caching: bool = True
    # Prompt files, relative to the prompts directory
    complexity_prompt_path: str = "reasoning/complexity_analysis.txt"
    planning_prompt_path: str = "reasoning/planning.txt"
    evaluation_prompt_path: str = "reasoning/evaluation.txt"
    synthesis_prompt_path: str = "reasoning/synthesis.txt"
    filter_prompt_path: str = "reasoning/filter.txt"
    quality_prompt_path: str = "reasoning/quality_check.txt"
    system_prompt_path: str = "reasoning/system.txt"
    # Plan size and execution
    max_subtasks: int = 5
    min_subtasks: int = 1
    parallel_execution: bool = True
    max_parallel_steps: int = 4
    # Analysis cache
    cache_analysis: bool = True
    analysis_cache_ttl: int = 3600
    # Tools
    max_tool_rounds: int = 8
    tool_timeout: float = 30.0
    max_tool_result_chars: int = 20_000
    tool_failure_window: float = 300.0
    # LLM calls
    max_tokens: int = 4096
    llm_max_retries: int = 4
    llm_timeout: float = 120.0
    # Answer drafts stream as answer.delta events, at most one per this many milliseconds
    stream_batch_ms: int = 50
    # Quality layers (critic, meta-agent, reflection) and execution style
    enable_critic: bool = True
    max_critique_rounds: int = 2
    critique_approval_threshold: float = 0.8
    enable_meta: bool = True
    enable_reflection: bool = True
    max_lessons: int = 3
    execution_style: str = "adaptive"
    # Debugging
    force_strategy: ExecutionStrategy | None = None
    debug_mode: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.validate()

    def quality_threshold(self, strategy: ExecutionStrategy) -> float:
        """The minimum quality an answer from `strategy` needs to be approved."""
        return {
            ExecutionStrategy.DIRECT: self.min_quality_direct,
            ExecutionStrategy.LIGHT_PLANNING: self.min_quality_light,
            ExecutionStrategy.DEEP_REASONING: self.min_quality_deep,
        }[strategy]

    def model_for(self, component: str) -> str:
        """The model a component calls; unset components use the main model."""
        chosen = {
            "analysis": self.analysis_model,
            "planning": self.planning_model,
            "critic": self.planning_model,
            "evaluation": self.evaluation_model,
            "reflection": self.evaluation_model,
            "meta": self.evaluation_model,
            "synthesis": self.synthesis_model,
            "filter": self.synthesis_model,
        }.get(component)
        return chosen or self.model

    def validate(self) -> None:
        for name in (
            "min_confidence",
            "simple_threshold",
            "complex_threshold",
            "min_quality_direct",
            "min_quality_light",
            "min_quality_deep",
            "critique_approval_threshold",
            "router_min_confidence",
        ):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ConfigError(_ENV_NAMES[name], f"must be between 0 and 1, got {value}")
        if self.simple_threshold >= self.complex_threshold:
            raise ConfigError(
                "SIMPLE_THRESHOLD",
                f"must be below COMPLEX_THRESHOLD ({self.simple_threshold} >= {self.complex_threshold})",
            )
        for name in (
            "max_iterations",
            "min_subtasks",
            "max_parallel_steps",
            "max_tool_rounds",
            "max_tokens",
            "max_tool_result_chars",
        ):
            if getattr(self, name) < 1:
                raise ConfigError(_ENV_NAMES[name], f"must be at least 1, got {getattr(self, name)}")
        for name in (
            "analysis_cache_ttl",
            "llm_max_retries",
            "max_critique_rounds",
            "max_lessons",
            "stream_batch_ms",
        ):
            if getattr(self, name) < 0:
                raise ConfigError(_ENV_NAMES[name], f"must not be negative, got {getattr(self, name)}")
        for name in ("tool_timeout", "llm_timeout"):
            if getattr(self, name) <= 0:
                raise ConfigError(_ENV_NAMES[name], f"must be positive, got {getattr(self, name)}")
        if self.max_subtasks < self.min_subtasks:
            raise ConfigError("MAX_SUBTASKS", f"must be at least MIN_SUBTASKS ({self.min_subtasks})")
        if self.execution_style not in ("adaptive", "reasoning_driven"):
            raise ConfigError(
                "EXECUTION_STYLE",
                f"must be 'adaptive' or 'reasoning_driven', got {self.execution_style!r}",
            )
        if not self.model:
            raise ConfigError("CLAUDE_MODEL", "must not be empty")

    @classmethod
    def from_env(
        cls, env: Mapping[str, str] | None = None, *, provider: str = "anthropic"
    ) -> ReasoningConfig:
        """Read the seed's variable names; a bad value raises ConfigError naming it."""
        env = os.environ if env is None else env
        main_default, analysis_default = DEFAULT_MODELS.get(provider, DEFAULT_MODELS["anthropic"])
        main_var = {"openai": "OPENAI_MODEL", "offline": "OFFLINE_MODEL"}.get(provider, "CLAUDE_MODEL")
        values: dict[str, Any] = {}
        values["model"] = env.get(main_var) or main_default
        values["analysis_model"] = env.get("ANALYSIS_MODEL") or analysis_default
        for name in fields(cls):
            var = _ENV_NAMES.get(name.name)
            if var is None or name.name in ("model", "analysis_model") or var not in env:
                continue
            raw = env[var]
            parser = _PARSERS.get(name.name, _parse_str)
            try:
                values[name.name] = parser(raw)
            except ValueError as exc:
                raise ConfigError(var, f"{exc} (got {raw!r})") from None
        return cls(**values)


def _parse_bool(raw: str) -> bool:
    text = raw.strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off", ""):
        return False
    raise ValueError("must be true or false")


def _parse_int(raw: str) -> int:
    try:
        return int(raw.strip())
    except ValueError:
        raise ValueError("must be a whole number") from None


def _parse_float(raw: str) -> float:
    try:
        return float(raw.strip())
    except ValueError:
        raise ValueError("must be a number") from None


def _parse_str(raw: str) -> str | None:
    return raw.strip() or None


def _parse_strategy(raw: str) -> ExecutionStrategy | None:
    if not raw.strip():
        return None
    return ExecutionStrategy.parse(raw)


_ENV_NAMES = {
    "max_iterations": "MAX_REASONING_ITERATIONS",
    "min_confidence": "MIN_CONFIDENCE",
    "simple_threshold": "SIMPLE_THRESHOLD",
    "complex_threshold": "COMPLEX_THRESHOLD",
    "min_quality_direct": "MIN_QUALITY_DIRECT",
    "min_quality_light": "MIN_QUALITY_LIGHT",
    "min_quality_deep": "MIN_QUALITY_DEEP",
    "model": "CLAUDE_MODEL",
    "analysis_model": "ANALYSIS_MODEL",
    "planning_model": "PLANNING_MODEL",
    "evaluation_model": "EVALUATION_MODEL",
    "synthesis_model": "SYNTHESIS_MODEL",
    "enable_caching": "REASONING_ENABLE_CACHING",
    "complexity_prompt_path": "COMPLEXITY_PROMPT_PATH",
    "planning_prompt_path": "PLANNING_PROMPT_PATH",
    "evaluation_prompt_path": "EVALUATION_PROMPT_PATH",
    "synthesis_prompt_path": "SYNTHESIS_PROMPT_PATH",
    "filter_prompt_path": "FILTER_PROMPT_PATH",
    "quality_prompt_path": "QUALITY_PROMPT_PATH",
    "system_prompt_path": "SYSTEM_PROMPT_PATH",
    "max_subtasks": "MAX_SUBTASKS",
    "min_subtasks": "MIN_SUBTASKS",
    "parallel_execution": "PARALLEL_EXECUTION",
    "max_parallel_steps": "MAX_PARALLEL_STEPS",
    "cache_analysis": "CACHE_ANALYSIS",
    "analysis_cache_ttl": "ANALYSIS_CACHE_TTL",
    "max_tool_rounds": "MAX_TOOL_ROUNDS",
    "tool_timeout": "TOOL_TIMEOUT_SECONDS",
    "max_tool_result_chars": "MAX_TOOL_RESULT_CHARS",
    "tool_failure_window": "TOOL_FAILURE_WINDOW_SECONDS",
    "max_tokens": "LLM_MAX_TOKENS",
    "llm_max_retries": "LLM_MAX_RETRIES",
    "llm_timeout": "LLM_TIMEOUT_SECONDS",
    "enable_critic": "ENABLE_CRITIC",
    "max_critique_rounds": "MAX_CRITIQUE_ROUNDS",
    "critique_approval_threshold": "CRITIQUE_APPROVAL_THRESHOLD",
    "enable_meta": "ENABLE_META_AGENT",
    "enable_reflection": "ENABLE_REFLECTION",
    "max_lessons": "MAX_LESSONS",
    "router_min_confidence": "ROUTER_MIN_CONFIDENCE",
    "speculative_direct": "SPECULATIVE_DIRECT",
    "local_answer_check": "LOCAL_ANSWER_CHECK",
    "foresight": "TOOL_FORESIGHT",
    "stream_batch_ms": "STREAM_BATCH_MS",
    "execution_style": "EXECUTION_STYLE",
    "force_strategy": "FORCE_REASONING_STRATEGY",
    "debug_mode": "DEBUG",
}

_BOOL = ("enable_caching", "parallel_execution", "cache_analysis", "debug_mode")
_BOOL += ("enable_critic", "enable_meta", "enable_reflection", "speculative_direct")
_BOOL += ("local_answer_check", "foresight")
_INT = ("max_iterations", "max_subtasks", "min_subtasks", "max_parallel_steps")
_INT += ("analysis_cache_ttl", "max_tool_rounds", "max_tool_result_chars", "max_tokens")
_INT += ("llm_max_retries", "max_critique_rounds", "max_lessons", "stream_batch_ms")
_FLOAT = ("min_confidence", "simple_threshold", "complex_threshold", "min_quality_direct")
_FLOAT += ("min_quality_light", "min_quality_deep", "tool_timeout", "tool_failure_window")
_FLOAT += ("llm_timeout", "critique_approval_threshold", "router_min_confidence")

_PARSERS: dict[str, Callable[[str], Any]] = {
    **dict.fromkeys(_BOOL, _parse_bool),
    **dict.fromkeys(_INT, _parse_int),
    **dict.fromkeys(_FLOAT, _parse_float),
    "force_strategy": _parse_strategy,
    "execution_style": lambda raw: raw.strip().lower(),
}
