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
    def __init__(self, run: RunContext, cache: AnalysisCache | None = None) -> None:
        self.run = run
        self.llm = run.llm("analysis")
        self.cache = cache

    async def analyze(
        self, query: str, available_tools: list[str], conversation_context: str = ""
    ) -> tuple[ComplexityAnalysis, bool]:
        """The analysis and whether it came from the cache."""
        config = self.run.config
        key = analysis_key(query, available_tools, self.llm.client.model)
        if self.cache is not None and config.cache_analysis:
            cached = self.cache.get(key)
            if cached is not None:
                return ComplexityAnalysis.from_dict(cached), True
        system, prompt = self.run.prompt(
            config.complexity_prompt_path,
            query=_clip(query),
            tools=", ".join(available_tools) or "(no tools)",
            context=conversation_context or "(new conversation)",
            simple_threshold=config.simple_threshold,
            complex_threshold=config.complex_threshold,
        )
        data = await self.llm.structured(
            ANALYSIS,
            system=system,
            prompt=prompt,
            max_tokens=1024,
            hints={"query": query, "tools": available_tools},
        )
        analysis = self._from(data)
        if self.cache is not None and config.cache_analysis:
            self.cache.set(key, analysis.to_dict(), config.analysis_cache_ttl)
        return analysis, False

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
