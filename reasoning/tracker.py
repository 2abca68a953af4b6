"""ResearchProgressTracker: the memory of one run, carried across escalations.

When DIRECT is not good enough and LIGHT takes over (and then DEEP), the next strategy
must know what was tried, why it fell short, which tools already answered, and which plan
steps are done. The tracker holds that, renders it as context text at four verbosity
levels, and serialises to a dict that round-trips exactly (it is stored on the run).
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Callable
from datetime import datetime
from typing import Any

from reasoning.progress import (
    AccumulatedInsights,
    AttemptStatus,
    ExecutionAttempt,
    PlanStep,
    ResearchPlanSkeleton,
    StepStatus,
    ToolExecution,
    find_cycle,
    from_iso,
    to_iso,
    utcnow,
)
from reasoning.types import ComplexityAnalysis, EvaluationResult, ExecutionStrategy, ResearchPlan, require

__all__ = [
    "ExecutionAttempt",
    "PlanStep",
    "ResearchPlanSkeleton",
    "ResearchProgressTracker",
    "ToolExecution",
    "find_cycle",
]

PREVIEW_CHARS = 200
MAX_ATTEMPTS_SHOWN = 3
MAX_RECOMMENDATIONS = 5
MAX_FEEDBACK = 3
MAX_COMPACT_GAPS = 3


def _preview(text: str | None, limit: int = PREVIEW_CHARS) -> str:
    text = (text or "").strip()
    return text if len(text) <= limit else text[:limit] + "..."


class ResearchProgressTracker:
    """Tracks attempts, tool calls, the plan skeleton and insights for one user turn."""

    def __init__(
        self,
        query: str,
        complexity: ComplexityAnalysis,
        *,
        failure_window: float = 300.0,
        now: Callable[[], datetime] = utcnow,
    ) -> None:
        self.query = query
        self.complexity = complexity
        self.now = now
        self.failure_window = failure_window
        self.created_at = now()
        self.attempts: list[ExecutionAttempt] = []
        self.current_attempt: ExecutionAttempt | None = None
        self.current_strategy: ExecutionStrategy | None = None
        self.tool_executions: list[ToolExecution] = []
        self._tool_result_cache: dict[str, str] = {}
        self.plan: ResearchPlanSkeleton | None = None
        self.insights = AccumulatedInsights()

    # --- attempts -------------------------------------------------------------------

    def start_attempt(self, strategy: ExecutionStrategy) -> ExecutionAttempt:
        self.current_strategy = strategy
        self.current_attempt = ExecutionAttempt(strategy=strategy, started_at=self.now())
        self.attempts.append(self.current_attempt)
        return self.current_attempt

    def end_attempt(
        self,
        outcome: str,
        *,
        status: AttemptStatus,
        response: str | None = None,
        evaluation: EvaluationResult | None = None,
        quality_score: float | None = None,
    ) -> None:
        attempt = self.current_attempt
        if attempt is None:
            return
        attempt.completed_at = self.now()
        attempt.status = status
        attempt.response = response
        attempt.evaluation = evaluation
        attempt.quality_score = quality_score
        attempt.outcome = outcome
        if evaluation:
            self.insights.add_from_evaluation(evaluation)

    # --- tools ------------------------------------------------------------------------

    @staticmethod
    def hash_arguments(tool_name: str, arguments: dict[str, Any]) -> str:
        combined = f"{tool_name}:{json.dumps(arguments, sort_keys=True, default=str)}"
        return hashlib.sha256(combined.encode()).hexdigest()[:32]

    def should_execute_tool(
        self, tool_name: str, arguments: dict[str, Any], policy: str = "cache"
    ) -> tuple[bool, str | None]:
        """(True, None) to run the tool; (False, text) to answer from the tracker instead.

        Cached successes are reused; a failure of the same call within the failure window
        is reported again rather than retried; no-cache tools always run.
        """
        if policy == "no-cache":
            return True, None
        arg_hash = self.hash_arguments(tool_name, arguments)
        if arg_hash in self._tool_result_cache:
            return False, self._tool_result_cache[arg_hash]
        now = self.now()
        for execution in reversed(self.tool_executions):
            if execution.result_hash == arg_hash and not execution.success:
                age = (now - execution.executed_at).total_seconds()
                if age < self.failure_window:
                    return False, f"Error: this call failed {age:.0f}s ago: {execution.error}"
                break
        return True, None

    def log_tool_execution(
        self,
        tool_name: str,
        arguments: dict[str, Any],
        *,
        success: bool,
        result: str | None = None,
        error: str | None = None,
        execution_time_ms: float = 0.0,
        step_id: str | None = None,
    ) -> ToolExecution:
        arg_hash = self.hash_arguments(tool_name, arguments)
        execution = ToolExecution(
            tool_name=tool_name,
            arguments=arguments,
            executed_at=self.now(),
            strategy=self.current_strategy,
            success=success,
            result=result,
            error=error,
            execution_time_ms=execution_time_ms,
            result_hash=arg_hash,
            step_id=step_id,
        )
        self.tool_executions.append(execution)
        if success and result is not None:
            self._tool_result_cache[arg_hash] = result
            self.insights.successful_tool_results[tool_name] = result
        elif not success and error:
            self.insights.failed_tool_attempts[tool_name] = error
        if self.current_attempt:
            self.current_attempt.accumulated_results.append(
                result if success and result is not None else f"Error: {error}"
            )
        return execution

    # --- plan -------------------------------------------------------------------------

    def set_plan(self, plan: ResearchPlan, strategy: ExecutionStrategy) -> list[PlanStep]:
        """Create the skeleton, or refine it; returns the steps this call added."""
        now = self.now()
        if self.plan is None:
            steps = _steps_from(plan, existing=set())
            self.plan = ResearchPlanSkeleton(
                created_at=now,
                created_by=strategy,
                query=plan.original_query,
                complexity_analysis=plan.complexity_analysis or self.complexity,
                steps=steps,
                last_updated=now,
            )
            return steps
        return self._refine_plan(plan)

    def _refine_plan(self, new_plan: ResearchPlan) -> list[PlanStep]:
        """Keep completed steps, add new ones, skip pending steps the new plan dropped."""
        require(self.plan, "the plan to refine")
        by_text = {_norm(s.description): s for s in self.plan.steps}
        wanted = {_norm(t.query) for t in new_plan.subtasks}
        for step in self.plan.steps:
            if step.status == "pending" and _norm(step.description) not in wanted:
                step.status = "skipped"
        added = []
        ids = {s.id for s in self.plan.steps}
        renamed: dict[str, str] = {}
        for subtask in new_plan.subtasks:
            existing = by_text.get(_norm(subtask.query))
            if existing is not None:
                renamed[subtask.id] = existing.id
                if existing.status == "skipped":
                    existing.status = "pending"
                continue
            new_id = subtask.id if subtask.id and subtask.id not in ids else f"step_{len(ids) + 1}"
            while new_id in ids:
                new_id = f"{new_id}_r{self.plan.revision_count + 1}"
            renamed[subtask.id] = new_id
            ids.add(new_id)
            step = PlanStep(
                id=new_id,
                description=subtask.query,
                priority=subtask.priority,
                depends_on=list(subtask.dependencies),
                spawned_from=self.plan.current_step_id,
            )
            added.append(step)
        for step in added:
            step.depends_on = [renamed.get(d, d) for d in step.depends_on]
            if not self.plan.add_dynamic_step(step):
                step.depends_on = []
                self.plan.add_dynamic_step(step)
        self.plan.revision_count += 1
        self.plan.last_updated = self.now()
        return added

    def update_step_status(
        self,
        step_id: str,
        status: StepStatus,
        findings: list[str] | None = None,
        tools_used: list[str] | None = None,
    ) -> None:
        if not self.plan:
            return
        step = self.plan.step(step_id)
        if step is None:
            return
        step.status = status
        if status == "in_progress":
            step.started_at = step.started_at or self.now()
            self.plan.current_step_id = step_id
        elif status in ("completed", "failed"):
            step.completed_at = self.now()
            if findings:
                step.findings.extend(findings)
            for tool in tools_used or []:
                if tool not in step.tools_used:
                    step.tools_used.append(tool)
        self.plan.last_updated = self.now()

    # --- context text ---------------------------------------------------------------

    def context_for(self, strategy: ExecutionStrategy) -> str:
        """The seed's decision tree: minimal on a first attempt, then by strategy."""
        if len(self.attempts) <= 1:
            return self.to_minimal_context()
        if strategy == ExecutionStrategy.DIRECT:
            return self.to_compact_context()
        if strategy == ExecutionStrategy.LIGHT_PLANNING:
            return self.to_medium_context()
        return self.to_context_text(strategy)

    def to_minimal_context(self) -> str:
        return f"Query: {self.query}\nComplexity: {self.complexity.complexity_level.value}"

    def to_compact_context(self) -> str:
        completed = len(self.plan.get_completed_steps()) if self.plan else 0
        total = len(self.plan.steps) if self.plan else 0
        parts = [
            f"Progress: {len(self.attempts)} attempts, {len(self.tool_executions)} tool calls, "
            f"{completed}/{total} steps done"
        ]
        if self.insights.knowledge_gaps:
            parts.append("Gaps: " + ", ".join(self.insights.knowledge_gaps[:MAX_COMPACT_GAPS]))
        cached = sorted({e.tool_name for e in self.tool_executions if e.success})
        if cached:
            parts.append("Cached: " + ", ".join(cached))
        return " | ".join(parts)

    def to_medium_context(self) -> str:
        sections = [f"# Research progress\n\n**Query**: {self.query}"]
        sections += self._plan_sections()
        sections += self._tool_summary()
        if self.insights.knowledge_gaps:
            sections.append("\n## Knowledge gaps to address")
            sections += [f"- {gap}" for gap in self.insights.knowledge_gaps]
        return "\n".join(sections)

    def to_context_text(self, strategy: ExecutionStrategy) -> str:
        """Everything, for DEEP: history, plan, tool log, insights, guidance."""
        sections = [
            "# Research progress",
            f"\n**Query**: {self.query}",
            f"**Complexity**: {self.complexity.complexity_level.value}",
            f"**Current execution level**: {strategy.value}",
        ]
        previous = self.attempts[:-1][-MAX_ATTEMPTS_SHOWN:]
        if previous:
            sections.append("\n## Previous attempts")
            for index, attempt in enumerate(previous, 1):
                sections.append(f"\n### Attempt {index}: {attempt.strategy.value}")
                sections.append(f"- Status: {attempt.status}")
                quality = "n/a" if attempt.quality_score is None else f"{attempt.quality_score:.2f}"
                sections.append(f"- Quality: {quality}")
                if attempt.evaluation:
                    sections.append(f"- Evaluation: {_preview(attempt.evaluation.reasoning, 500)}")
                    if attempt.evaluation.missing_aspects:
                        sections.append("- Missing: " + ", ".join(attempt.evaluation.missing_aspects))
                sections.append(f"- Outcome: {attempt.outcome}")
        sections += self._plan_sections()
        sections += self._tool_summary(failures=True)
        insights = self.insights
        if insights.confirmed_facts:
            sections.append("\n## Confirmed facts")
            sections += [f"- {fact}" for fact in insights.confirmed_facts]
        if insights.knowledge_gaps:
            sections.append("\n## Knowledge gaps")
            sections += [f"- {gap}" for gap in insights.knowledge_gaps]
        if insights.quality_feedback:
            sections.append("\n## Feedback on earlier answers")
            sections += [f"- {_preview(f, 500)}" for f in insights.quality_feedback[-MAX_FEEDBACK:]]
        if strategy != ExecutionStrategy.DIRECT:
            sections.append("\n## Guidance")
            sections.append("- Build on the completed steps and their findings above.")
            sections.append("- Focus on the knowledge gaps.")
            sections.append("- Do not repeat tool calls listed above; their results are known.")
            if insights.recommended_improvements:
                sections.append("- Recommended next questions:")
                sections += [f"  - {r}" for r in insights.recommended_improvements[:MAX_RECOMMENDATIONS]]
        return "\n".join(sections)

    def _plan_sections(self) -> list[str]:
        if not self.plan:
            return []
        completed = self.plan.get_completed_steps()
        pending = self.plan.get_pending_steps()
        out = ["\n## Plan progress", f"{len(completed)}/{len(self.plan.steps)} steps completed"]
        if completed:
            out.append("\n### Completed steps")
            for step in completed:
                out.append(f"- {step.description}")
                if step.findings:
                    out.append(f"  - Findings: {_preview('; '.join(step.findings), 600)}")
                if step.tools_used:
                    out.append(f"  - Tools used: {', '.join(step.tools_used)}")
        if pending:
            out.append("\n### Pending steps")
            out += [f"- {step.description}" for step in pending]
        return out

    def _tool_summary(self, *, failures: bool = False) -> list[str]:
        if not self.tool_executions:
            return []
        ok = [e for e in self.tool_executions if e.success]
        bad = [e for e in self.tool_executions if not e.success]
        out = [
            "\n## Tool calls so far",
            f"{len(self.tool_executions)} calls ({len(ok)} successful, {len(bad)} failed)",
        ]
        by_tool: dict[str, list[ToolExecution]] = defaultdict(list)
        for execution in ok:
            by_tool[execution.tool_name].append(execution)
        for name, executions in by_tool.items():
            latest = executions[-1]
            out.append(f"- {name}: {len(executions)} call(s); latest result: {_preview(latest.result)}")
        if failures and bad:
            out.append("\n### Failed tool calls")
            out += [f"- {e.tool_name}: {_preview(e.error)}" for e in bad]
        return out

    # --- persistence ----------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        current = self.attempts.index(self.current_attempt) if self.current_attempt in self.attempts else None
        return {
            "query": self.query,
            "complexity": self.complexity.to_dict(),
            "created_at": to_iso(self.created_at),
            "failure_window": self.failure_window,
            "attempts": [a.to_dict() for a in self.attempts],
            "current_attempt": current,
            "current_strategy": self.current_strategy.value if self.current_strategy else None,
            "tool_executions": [t.to_dict() for t in self.tool_executions],
            "tool_result_cache": dict(self._tool_result_cache),
            "plan": self.plan.to_dict() if self.plan else None,
            "insights": self.insights.to_dict(),
        }

    @classmethod
    def from_dict(
        cls, data: dict[str, Any], *, now: Callable[[], datetime] = utcnow
    ) -> ResearchProgressTracker:
        tracker = cls(
            data["query"],
            ComplexityAnalysis.from_dict(data["complexity"]),
            failure_window=data["failure_window"],
            now=now,
        )
        tracker.created_at = from_iso(data["created_at"])  # type: ignore[assignment]
        tracker.attempts = [ExecutionAttempt.from_dict(a) for a in data["attempts"]]
        index = data["current_attempt"]
        tracker.current_attempt = tracker.attempts[index] if index is not None else None
        strategy = data["current_strategy"]
        tracker.current_strategy = ExecutionStrategy(strategy) if strategy else None
        tracker.tool_executions = [ToolExecution.from_dict(t) for t in data["tool_executions"]]
        tracker._tool_result_cache = dict(data["tool_result_cache"])
        tracker.plan = ResearchPlanSkeleton.from_dict(data["plan"]) if data["plan"] else None
        tracker.insights = AccumulatedInsights.from_dict(data["insights"])
        return tracker


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def _steps_from(plan: ResearchPlan, existing: set[str]) -> list[PlanStep]:
    steps = []
    for index, subtask in enumerate(plan.subtasks):
        step_id = subtask.id or f"step_{index + 1}"
        while step_id in existing:
            step_id += "_"
        existing.add(step_id)
        steps.append(
            PlanStep(
                id=step_id,
                description=subtask.query,
                priority=subtask.priority,
                depends_on=list(subtask.dependencies),
            )
        )
    return steps
