"""Synthesizer: keep the relevant findings, then write one answer from them."""

from __future__ import annotations

from typing import Any

from reasoning.agent import unfinished_notice
from reasoning.context import RunContext
from reasoning.evaluator import format_results
from reasoning.llm.base import LLMRequest, TextSink
from reasoning.structured import FILTER

MAX_KEPT = 7


class Synthesizer:
    def __init__(self, run: RunContext) -> None:
        self.run = run
        self.llm = run.llm("synthesis")
        self.filter_llm = run.llm("filter")

    async def filter_results(self, query: str, results: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The relevant findings, most important first; all of them if the model keeps none."""
        if len(results) <= 1:
            return list(results)
        system, prompt = self.run.prompt(
            self.run.config.filter_prompt_path, query=query, results=format_results(results)
        )
        data = await self.filter_llm.structured(
            FILTER, system=system, prompt=prompt, max_tokens=1024, hints={"query": query, "results": results}
        )
        ranked = sorted(data["kept"], key=lambda item: -item["relevance"])
        kept = []
        for item in ranked:
            index = item["id"] - 1
            if 0 <= index < len(results) and results[index] not in kept:
                kept.append(results[index])
        return kept[:MAX_KEPT] or list(results)

    async def synthesize(
        self,
        query: str,
        results: list[dict[str, Any]],
        mode: str = "deep",
        *,
        on_text: TextSink | None = None,
    ) -> str:
        system, prompt = self.run.prompt(
            self.run.config.synthesis_prompt_path,
            query=query,
            results=format_results(results),
            mode=mode,
        )
        response = await self.llm.complete(
            LLMRequest(
                messages=[{"role": "user", "content": prompt}],
                system=system,
                max_tokens=self.run.config.max_tokens,
                hints={"query": query, "results": results, "mode": mode},
            ),
            on_text=on_text,
        )
        if not response.text.strip():
            raise ValueError("the synthesis came back empty")
        return unfinished_notice(response)
