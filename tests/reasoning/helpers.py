"""Builders for scripted model replies, so engine tests read like the conversation."""

from __future__ import annotations

from typing import Any

from reasoning import AdaptiveReasoningLoop, ListSink, ReasoningConfig
from reasoning.llm.scripted import ScriptedClient
from reasoning.tools.local import LocalToolProvider, builtin_provider
from reasoning.tools.registry import ToolRegistry


def analysis(level: str = "simple", score: float | None = None, **extra: Any) -> dict[str, Any]:
    scores = {"simple": 0.1, "medium": 0.5, "complex": 0.9}
    strategy = {"simple": "direct", "medium": "light_planning", "complex": "deep_reasoning"}[level]
    return {
        "complexity_level": level,
        "complexity_score": scores[level] if score is None else score,
        "recommended_strategy": strategy,
        "rationale": f"{level} question",
        "confidence": 0.9,
        "estimated_iterations": 2,
        **extra,
    }


def quality(
    ok: bool, confidence: float, *missing: str, reasoning: str = "", deeper: bool | None = None
) -> dict[str, Any]:
    """A quality verdict; `deeper` says whether a deeper strategy would help (unsaid: the seed's
    rule, escalate when below the threshold)."""
    verdict = {
        "is_sufficient": ok,
        "confidence": confidence,
        "reasoning": reasoning or ("good" if ok else "weak"),
        "missing_aspects": list(missing),
    }
    return verdict if deeper is None else {**verdict, "deeper_would_help": deeper}


def plan(*steps: str | tuple[str, list[str]], **extra: Any) -> dict[str, Any]:
    subtasks = []
    for index, step in enumerate(steps, 1):
        description, depends = (step, []) if isinstance(step, str) else step
        subtasks.append(
            {
                "id": f"step_{index}",
                "description": description,
                "priority": "high",
                "tools": [],
                "depends_on": depends,
            }
        )
    return {"subtasks": subtasks, "estimated_complexity": "medium", "strategy_summary": "do it", **extra}


def complete(ok: bool = True, confidence: float = 0.9, *queries: str) -> dict[str, Any]:
    return {
        "is_complete": ok,
        "confidence": confidence,
        "reasoning": "checked",
        "missing_aspects": list(queries),
        "additional_queries": list(queries),
    }


def critique(score, *severities, recommendation=None):
    return {
        "overall_score": score,
        "feasibility_score": score,
        "correctness_score": score,
        "efficiency_score": score,
        "safety_score": 1.0,
        "issues": [
            {
                "severity": s,
                "category": "logic",
                "description": f"{s} issue",
                "suggestion": "fix it",
                "affected_steps": [],
            }
            for s in severities
        ],
        "strengths": [],
        "suggestions": [],
        "recommendation": recommendation or ("approve" if score >= 0.8 else "revise"),
        "rationale": "because",
    }


def meta(confidence, *concerns, replan=False, question=""):
    return {
        "reasoning_quality": confidence,
        "confidence": confidence,
        "concerns": list(concerns),
        "should_replan": replan,
        "should_think_deeper": False,
        "recommended_passes": 1,
        "feedback": "ok",
        "clarifying_question": question,
    }


def tool(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool": name, "input": arguments}


QUALITY_LAYERS_OFF = {"enable_critic": False, "enable_meta": False, "enable_reflection": False}
# The local router is never sure, so the analysis model is always asked (and nothing starts
# speculatively): for tests about the analyzer itself.
ALWAYS_ANALYSE = {"router_min_confidence": 1.0, "speculative_direct": False}


def engine(llm: ScriptedClient, *, tools: ToolRegistry | None = None, **config: Any) -> AdaptiveReasoningLoop:
    """An engine whose quality layers are off unless a test turns them on (so scripts stay short)."""
    registry = tools or ToolRegistry([builtin_provider()])
    return AdaptiveReasoningLoop(llm, registry, ReasoningConfig(**{**QUALITY_LAYERS_OFF, **config}))


class CountingTools(LocalToolProvider):
    """A provider whose tools count how often they really ran."""

    def __init__(self) -> None:
        super().__init__("counting")
        self.calls: dict[str, int] = {}

    def counted(self, name: str, result: str, *, cache_policy: str = "cache") -> None:
        def run(**arguments: Any) -> str:
            self.calls[name] = self.calls.get(name, 0) + 1
            return f"{result} {sorted(arguments.items())}"

        self.add(
            name,
            run,
            description=name,
            input_schema={"type": "object", "properties": {"q": {"type": "string"}}},
            cache_policy=cache_policy,
        )  # type: ignore[arg-type]


async def run(engine_: AdaptiveReasoningLoop, query: str, **kwargs: Any) -> tuple[Any, ListSink]:
    sink = ListSink()
    result = await engine_.run(query, sink=sink, **kwargs)
    return result, sink
