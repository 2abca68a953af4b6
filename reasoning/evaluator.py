"""Evaluator: is the research complete, and is this answer good enough to show?"""

from __future__ import annotations

from typing import Any

from reasoning.context import RunContext
from reasoning.structured import EVALUATION, QUALITY
from reasoning.types import ComplexityAnalysis, EvaluationResult, ExecutionStrategy

RESPONSE_CHARS_IN_PROMPT = 30_000


class Evaluator:
    def __init__(self, run: RunContext) -> None:
        self.run = run
        self.llm = run.llm("evaluation")

    async def evaluate(self, query: str, results: list[dict[str, Any]], plan_text: str) -> EvaluationResult:
        """Research completeness: do the findings so far answer the question?"""
        system, prompt = self.run.prompt(
            self.run.config.evaluation_prompt_path,
            query=query,
            results=format_results(results),
            plan=plan_text or "(no plan)",
        )
        data = await self.llm.structured(
            EVALUATION,
            system=system,
            prompt=prompt,
            max_tokens=1024,
            hints={"query": query, "results": results},
        )
        return EvaluationResult(
            is_complete=data["is_complete"],
            confidence=data["confidence"],
            reasoning=data["reasoning"],
            additional_queries=data["additional_queries"],
            missing_aspects=data["missing_aspects"],
        )

    async def evaluate_response_quality(
        self,
        query: str,
        response: str,
        strategy_used: ExecutionStrategy,
        expected_complexity: ComplexityAnalysis | None,
        *,
        attachments: str = "(none)",
    ) -> EvaluationResult:
        """Self-correction: is the answer sufficient? The strategy's threshold applies on top.
        `attachments` names what the person attached (the answer may rely on it)."""
        threshold = self.run.config.quality_threshold(strategy_used)
        system, prompt = self.run.prompt(
            self.run.config.quality_prompt_path,
            query=query,
            response=_clip(response),
            strategy=strategy_used.value.upper(),
            complexity=expected_complexity.complexity_level.value if expected_complexity else "unknown",
            attachments=attachments,
        )
        data = await self.llm.structured(
            QUALITY,
            system=system,
            prompt=prompt,
            max_tokens=1024,
            hints={
                "query": query,
                "response": response,
                "strategy": strategy_used.value,
                "threshold": threshold,
            },
        )
        confidence = data["confidence"]
        return EvaluationResult(
            is_complete=data["is_sufficient"] and confidence >= threshold,
            confidence=confidence,
            reasoning=data["reasoning"],
            missing_aspects=data["missing_aspects"],
            deeper_would_help=data["deeper_would_help"],
        )


def format_results(results: list[dict[str, Any]], limit: int = 6000) -> str:
    if not results:
        return "(no findings yet)"
    blocks = []
    for index, result in enumerate(results, 1):
        text = str(result.get("result", ""))
        if len(text) > limit:
            text = text[:limit] + " [...]"
        blocks.append(f"[{index}] {result.get('query', '')}\n{text}")
    return "\n\n".join(blocks)


def _clip(text: str, limit: int = RESPONSE_CHARS_IN_PROMPT) -> str:
    return text if len(text) <= limit else text[:limit] + "\n[... answer truncated for review ...]"
