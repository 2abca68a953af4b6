"""QueryComplexityAnalyzer: triage a question into DIRECT, LIGHT or DEEP work."""

from __future__ import annotations

from typing import Any

from reasoning.cache import AnalysisCache, analysis_key
from reasoning.context import RunContext
from reasoning.structured import ANALYSIS
from reasoning.types import ComplexityAnalysis, ComplexityLevel, ExecutionStrategy

_STRATEGY_FOR = {
    ComplexityLevel.SIMPLE: ExecutionStrategy.DIRECT,
    ComplexityLevel.MEDIUM: ExecutionStrategy.LIGHT_PLANNING,
    ComplexityLevel.COMPLEX: ExecutionStrategy.DEEP_REASONING,
}
QUERY_CHARS_IN_PROMPT = 8000


class QueryComplexityAnalyzer:
    """The seed's analyzer, on the cheap analysis model. The adaptive mode asks it only when
    the local router is unsure (reasoning/routing/)."""

    def __init__(self, run: RunContext, cache: AnalysisCache | None = None) -> None:
        self.run = run
        self.llm = run.llm("analysis")
        self.cache = cache

    def _key(self, query: str, available_tools: list[str]) -> str:
        return analysis_key(query, available_tools, self.llm.client.model)

    def cached(self, query: str, available_tools: list[str]) -> ComplexityAnalysis | None:
        """An earlier analysis of the same question with the same tools, if one is cached."""
        if self.cache is None or not self.run.config.cache_analysis:
            return None
        found = self.cache.get(self._key(query, available_tools))
        return ComplexityAnalysis.from_dict(found) if found is not None else None

    async def analyze(
        self,
        query: str,
        available_tools: list[str],
        conversation_context: str = "",
        *,
        attachments: str = "(none)",
    ) -> ComplexityAnalysis:
        """Ask the analysis model (and cache its verdict). `attachments` names what the person
        attached; their content is context, not part of the question."""
        config = self.run.config
        system, prompt = self.run.prompt(
            config.complexity_prompt_path,
            query=_clip(query),
            tools=", ".join(available_tools) or "(no tools)",
            attachments=attachments,
            context=conversation_context or "(new conversation)",
            simple_threshold=config.simple_threshold,
            complex_threshold=config.complex_threshold,
        )
        data = await self.llm.structured(
            ANALYSIS,
            system=system,
            prompt=prompt,
            max_tokens=1024,
            hints={"query": query, "tools": available_tools, "attachments": attachments != "(none)"},
        )
        analysis = self._from(data)
        # Cached (for everyone) only when it was made from the question and tools alone.
        alone = not conversation_context and attachments == "(none)"
        if self.cache is not None and config.cache_analysis and alone:
            self.cache.set(self._key(query, available_tools), analysis.to_dict(), config.analysis_cache_ttl)
        return analysis

    def _from(self, data: dict[str, Any]) -> ComplexityAnalysis:
        """A complexity score, when given, routes by the configured thresholds."""
        config = self.run.config
        level = ComplexityLevel(data["complexity_level"])
        strategy = ExecutionStrategy(data["recommended_strategy"])
        score = data.get("complexity_score")
        if score is not None:
            if score < config.simple_threshold:
                level = ComplexityLevel.SIMPLE
            elif score > config.complex_threshold:
                level = ComplexityLevel.COMPLEX
            else:
                level = ComplexityLevel.MEDIUM
            strategy = _STRATEGY_FOR[level]
        return ComplexityAnalysis(
            complexity_level=level,
            reasoning_required=strategy != ExecutionStrategy.DIRECT,
            recommended_strategy=strategy,
            rationale=data["rationale"] or f"Assessed as {level.value}.",
            estimated_iterations=data["estimated_iterations"],
            confidence=data["confidence"],
            requires_research=data["requires_research"],
            requires_synthesis=data["requires_synthesis"],
            multi_part_query=data["multi_part_query"],
            tool_count_estimate=data["tool_count_estimate"],
        )


def fallback_analysis(reason: str) -> ComplexityAnalysis:
    """The seed's fallback: treat the question as MEDIUM, with zero confidence."""
    return ComplexityAnalysis(
        complexity_level=ComplexityLevel.MEDIUM,
        reasoning_required=True,
        recommended_strategy=ExecutionStrategy.LIGHT_PLANNING,
        rationale=f"Complexity analysis failed ({reason}); defaulting to medium.",
        estimated_iterations=2,
        confidence=0.0,
    )


def forced_analysis(strategy: ExecutionStrategy, iterations: int) -> ComplexityAnalysis:
    level = {v: k for k, v in _STRATEGY_FOR.items()}[strategy]
    return ComplexityAnalysis(
        complexity_level=level,
        reasoning_required=strategy != ExecutionStrategy.DIRECT,
        recommended_strategy=strategy,
        rationale="Strategy forced by configuration.",
        estimated_iterations=iterations,
        confidence=1.0,
    )


def _clip(text: str, limit: int = QUERY_CHARS_IN_PROMPT) -> str:
    """Very long questions are triaged on their head and tail; the answer sees them whole."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - limit} characters omitted ...]\n{text[-half:]}"
