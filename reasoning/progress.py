"""The records the tracker keeps: attempts, tool executions, plan steps and the plan skeleton.

Each record serialises to a JSON-safe dict and back exactly; `find_cycle` guards the plan's
dependency graph wherever steps are added.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from typing import Any, Literal

from reasoning.types import ComplexityAnalysis, EvaluationResult, ExecutionStrategy

AttemptStatus = Literal["in_progress", "completed", "failed", "escalated"]
StepStatus = Literal["pending", "in_progress", "completed", "skipped", "failed"]


def utcnow() -> datetime:
    return datetime.now(UTC)


def to_iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def from_iso(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


@dataclass
class ExecutionAttempt:
    strategy: ExecutionStrategy
    started_at: datetime
    completed_at: datetime | None = None
    status: AttemptStatus = "in_progress"
    response: str | None = None
    accumulated_results: list[str] = field(default_factory=list)
    evaluation: EvaluationResult | None = None
    quality_score: float | None = None
    outcome: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "strategy": self.strategy.value,
            "started_at": to_iso(self.started_at),
            "completed_at": to_iso(self.completed_at),
            "status": self.status,
            "response": self.response,
            "accumulated_results": list(self.accumulated_results),
            "evaluation": self.evaluation.to_dict() if self.evaluation else None,
            "quality_score": self.quality_score,
            "outcome": self.outcome,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ExecutionAttempt:
        return cls(
            strategy=ExecutionStrategy(data["strategy"]),
            started_at=from_iso(data["started_at"]),  # type: ignore[arg-type]
            completed_at=from_iso(data["completed_at"]),
            status=data["status"],
            response=data["response"],
            accumulated_results=list(data["accumulated_results"]),
            evaluation=EvaluationResult.from_dict(data["evaluation"]) if data["evaluation"] else None,
            quality_score=data["quality_score"],
            outcome=data["outcome"],
        )


@dataclass
class ToolExecution:
    tool_name: str
    arguments: dict[str, Any]
    executed_at: datetime
    strategy: ExecutionStrategy | None
    success: bool
    result: str | None
    error: str | None
    execution_time_ms: float
    result_hash: str  # hash of tool name + arguments, for de-duplication
    step_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "tool_name": self.tool_name,
            "arguments": self.arguments,
            "executed_at": to_iso(self.executed_at),
            "strategy": self.strategy.value if self.strategy else None,
            "success": self.success,
            "result": self.result,
            "error": self.error,
            "execution_time_ms": self.execution_time_ms,
            "result_hash": self.result_hash,
            "step_id": self.step_id,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ToolExecution:
        return cls(
            tool_name=data["tool_name"],
            arguments=data["arguments"],
            executed_at=from_iso(data["executed_at"]),  # type: ignore[arg-type]
            strategy=ExecutionStrategy(data["strategy"]) if data["strategy"] else None,
            success=data["success"],
            result=data["result"],
            error=data["error"],
            execution_time_ms=data["execution_time_ms"],
            result_hash=data["result_hash"],
            step_id=data.get("step_id"),
        )


@dataclass
class PlanStep:
    id: str
    description: str
    status: StepStatus = "pending"
    priority: int = 2
    started_at: datetime | None = None
    completed_at: datetime | None = None
    findings: list[str] = field(default_factory=list)
    tools_used: list[str] = field(default_factory=list)
    depends_on: list[str] = field(default_factory=list)
    spawned_from: str | None = None

    def to_dict(self) -> dict[str, Any]:
        # Written out rather than dataclasses.asdict: every checkpoint serialises every step,
        # and asdict's generic deep copy was most of what a checkpoint cost.
        return {
            "id": self.id,
            "description": self.description,
            "status": self.status,
            "priority": self.priority,
            "started_at": to_iso(self.started_at),
            "completed_at": to_iso(self.completed_at),
            "findings": list(self.findings),
            "tools_used": list(self.tools_used),
            "depends_on": list(self.depends_on),
            "spawned_from": self.spawned_from,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PlanStep:
        return cls(
            id=data["id"],
            description=data["description"],
            status=data["status"],
            priority=data["priority"],
            started_at=from_iso(data["started_at"]),
            completed_at=from_iso(data["completed_at"]),
            findings=list(data["findings"]),
            tools_used=list(data["tools_used"]),
            depends_on=list(data["depends_on"]),
            spawned_from=data["spawned_from"],
        )


@dataclass
class ResearchPlanSkeleton:
    created_at: datetime
    created_by: ExecutionStrategy
    query: str
    complexity_analysis: ComplexityAnalysis
    steps: list[PlanStep]
    current_step_id: str | None = None
    revision_count: int = 0
    last_updated: datetime | None = None

    def get_completed_steps(self) -> list[PlanStep]:
        return [s for s in self.steps if s.status == "completed"]

    def get_pending_steps(self) -> list[PlanStep]:
        return [s for s in self.steps if s.status == "pending"]

    def step(self, step_id: str) -> PlanStep | None:
        return next((s for s in self.steps if s.id == step_id), None)

    def ready_steps(self) -> list[PlanStep]:
        """Pending steps whose dependencies have all finished (in plan order)."""
        done = {s.id for s in self.steps if s.status in ("completed", "failed", "skipped")}
        known = {s.id for s in self.steps}
        return [
            s
            for s in self.steps
            if s.status == "pending" and all(d in done or d not in known for d in s.depends_on)
        ]

    def has_cycle(self) -> bool:
        return find_cycle({s.id: s.depends_on for s in self.steps}) is not None

    def add_dynamic_step(self, step: PlanStep, after_step_id: str | None = None) -> bool:
        """Insert a step found during execution; refuse it (False) if it would make a cycle."""
        graph = {s.id: list(s.depends_on) for s in self.steps}
        graph[step.id] = list(step.depends_on)
        if step.id in {s.id for s in self.steps} or find_cycle(graph) is not None:
            return False
        index = len(self.steps)
        if after_step_id is not None:
            for i, existing in enumerate(self.steps):
                if existing.id == after_step_id:
                    index = i + 1
        self.steps.insert(index, step)
        return True

    def to_dict(self) -> dict[str, Any]:
        return {
            "created_at": to_iso(self.created_at),
            "created_by": self.created_by.value,
            "query": self.query,
            "complexity_analysis": self.complexity_analysis.to_dict(),
            "steps": [s.to_dict() for s in self.steps],
            "current_step_id": self.current_step_id,
            "revision_count": self.revision_count,
            "last_updated": to_iso(self.last_updated),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ResearchPlanSkeleton:
        return cls(
            created_at=from_iso(data["created_at"]),  # type: ignore[arg-type]
            created_by=ExecutionStrategy(data["created_by"]),
            query=data["query"],
            complexity_analysis=ComplexityAnalysis.from_dict(data["complexity_analysis"]),
            steps=[PlanStep.from_dict(s) for s in data["steps"]],
            current_step_id=data["current_step_id"],
            revision_count=data["revision_count"],
            last_updated=from_iso(data["last_updated"]),
        )


def find_cycle(graph: dict[str, list[str]]) -> list[str] | None:
    """A dependency cycle as a list of ids (first id repeated at the end), or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for dep in graph.get(node, []):
            if dep not in graph:
                continue
            if state.get(dep) == 1:
                return [*stack[stack.index(dep) :], dep]
            if state.get(dep) is None:
                found = visit(dep)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in graph:
        if state.get(node) is None:
            found = visit(node)
            if found:
                return found
    return None


@dataclass
class AccumulatedInsights:
    confirmed_facts: list[str] = field(default_factory=list)
    partial_findings: list[str] = field(default_factory=list)
    knowledge_gaps: list[str] = field(default_factory=list)
    quality_feedback: list[str] = field(default_factory=list)
    recommended_improvements: list[str] = field(default_factory=list)
    successful_tool_results: dict[str, str] = field(default_factory=dict)
    failed_tool_attempts: dict[str, str] = field(default_factory=dict)

    def add_from_evaluation(self, evaluation: EvaluationResult) -> None:
        for gap in evaluation.missing_aspects:
            if gap not in self.knowledge_gaps:
                self.knowledge_gaps.append(gap)
        if evaluation.reasoning:
            self.quality_feedback.append(evaluation.reasoning)
        for query in evaluation.additional_queries:
            if query not in self.recommended_improvements:
                self.recommended_improvements.append(query)

    def to_dict(self) -> dict[str, Any]:
        values = {item.name: getattr(self, item.name) for item in fields(self)}
        return {name: dict(v) if isinstance(v, dict) else list(v) for name, v in values.items()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AccumulatedInsights:
        return cls(**{k: (dict(v) if isinstance(v, dict) else list(v)) for k, v in data.items()})
