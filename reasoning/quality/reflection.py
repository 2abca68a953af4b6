"""The reflection agent: after a run, what worked, what did not, and what to do next time."""

from __future__ import annotations

from typing import Any

from reasoning.context import RunContext
from reasoning.quality.outputs import REFLECTION


class ReflectionAgent:
    def __init__(self, run: RunContext) -> None:
        self.run = run
        self.llm = run.llm("reflection")

    async def reflect(self, query: str, summary: dict[str, Any]) -> dict[str, Any]:
        steps = (
            "\n".join(f"- [{s['status']}] {s['description']}" for s in summary.get("steps", []))
            or "(no plan)"
        )
        tools = (
            "\n".join(
                f"- {t['tool']}: {'ok' if t['success'] else 'failed: ' + (t['error'] or '')}"
                for t in summary.get("tools", [])
            )
            or "(no tool calls)"
        )
        system, prompt = self.run.prompt(
            "reasoning/reflection.txt",
            query=query,
            strategies=summary["strategies"],
            quality=summary["quality"],
            escalations=summary["escalations"],
            steps=steps,
            tools=tools,
            degraded=summary["degraded"] or "none",
        )
        return await self.llm.structured(
            REFLECTION, system=system, prompt=prompt, max_tokens=1200, hints={"query": query, **summary}
        )
