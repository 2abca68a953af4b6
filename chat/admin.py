"""The admin as an audit tool: every run, what it did, in order, read-only.

Record pages are read-only for everyone (they are evidence); only superusers may delete.
Querysets select and prefetch what the pages show, so the number of queries does not grow
with the number of rows.
"""

from __future__ import annotations

import json
from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.text import Truncator

from chat.audit import runs_export
from chat.models import (
    Attempt,
    ChatSession,
    Critique,
    LLMCall,
    Message,
    Plan,
    PlanStep,
    ReasoningRun,
    Reflection,
    ToolExecution,
    TraceEvent,
)

admin.site.site_header = "Nexus audit"
admin.site.site_title = "Nexus audit"
admin.site.index_title = "Reasoning runs and their trail"


def _staff_detail(payload: Any) -> str:
    """The full reason behind a public error (a tool server's own words, secrets redacted)."""
    detail = payload.get("detail") if isinstance(payload, dict) else None
    return format_html('<div class="nexus-detail">detail: {}</div>', detail) if detail else ""


class ReadOnlyMixin:
    """Audit rows: viewable by staff, never added or edited; deleted only by superusers."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return request.user.is_superuser


class ReadOnlyInline(ReadOnlyMixin):
    extra = 0
    can_delete = False
    show_change_link = False

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return list(self.fields or [])

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class AttemptInline(ReadOnlyInline, admin.TabularInline):
    model = Attempt
    fields = [
        "number",
        "strategy",
        "status",
        "quality_score",
        "approved",
        "outcome",
        "started_at",
        "completed_at",
    ]


class ToolExecutionInline(ReadOnlyInline, admin.TabularInline):
    model = ToolExecution
    fields = [
        "created_at",
        "strategy",
        "step_id",
        "server",
        "tool",
        "arguments",
        "success",
        "cached",
        "duration_ms",
        "result_summary",
        "error",
    ]

    @admin.display(description="result")
    def result_summary(self, obj: ToolExecution) -> str:
        return Truncator(obj.result).chars(160)


class LLMCallInline(ReadOnlyInline, admin.TabularInline):
    model = LLMCall
    fields = [
        "created_at",
        "component",
        "provider",
        "model",
        "input_tokens",
        "output_tokens",
        "cache_read_tokens",
        "cache_write_tokens",
        "latency_ms",
        "retries",
        "stop_reason",
        "cost",
        "error",
    ]


class CritiqueInline(ReadOnlyInline, admin.TabularInline):
    model = Critique
    fields = [
        "round",
        "quick",
        "overall_score",
        "feasibility_score",
        "correctness_score",
        "efficiency_score",
        "safety_score",
        "recommendation",
        "issues",
        "rationale",
    ]


class ReflectionInline(ReadOnlyInline, admin.StackedInline):
    model = Reflection
    fields = ["confidence", "lessons", "insights", "improvements", "created_at"]


class EscalatedFilter(admin.SimpleListFilter):
    title = "escalated"
    parameter_name = "escalated"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("yes", "Escalated"), ("no", "Not escalated")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[ReasoningRun]) -> QuerySet[ReasoningRun]:
        if self.value() == "yes":
            return queryset.filter(escalation_count__gt=0)
        if self.value() == "no":
            return queryset.filter(escalation_count=0)
        return queryset


@admin.register(ReasoningRun)
class ReasoningRunAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = [
        "id",
        "question",
        "owner",
        "status",
        "initial_strategy",
        "final_strategy",
        "escalation_count",
        "quality",
        "total_tokens",
        "cost",
        "latency_ms",
        "created_at",
    ]
    list_display_links = ["id", "question"]
    list_filter = [
        "status",
        "initial_strategy",
        "final_strategy",
        EscalatedFilter,
        ("session__owner", admin.RelatedOnlyFieldListFilter),
        "created_at",
    ]
    search_fields = ["user_message__content", "query", "session__owner__username"]
    list_select_related = ["session__owner", "user_message"]
    list_per_page = 50
    actions = ["export_json"]
    inlines = [AttemptInline, ToolExecutionInline, LLMCallInline, CritiqueInline, ReflectionInline]
    fieldsets = [
        (None, {"fields": ["session_link", "question", "attached", "status", "error", "answer"]}),
        (
            "Analysis",
            {
                "fields": [
                    "complexity_level",
                    "initial_strategy",
                    "final_strategy",
                    "rationale",
                    "confidence",
                    "estimated_iterations",
                    "requires_research",
                    "requires_synthesis",
                    "multi_part_query",
                    "tool_count_estimate",
                ]
            },
        ),
        (
            "Outcome",
            {
                "fields": [
                    "escalation_count",
                    "final_quality",
                    "answer_kind",
                    "provider",
                    "model",
                    "input_tokens",
                    "output_tokens",
                    "cache_read_tokens",
                    "cache_write_tokens",
                    "cost",
                    "latency_ms",
                    "worker",
                    "delivery_count",
                    "created_at",
                    "started_at",
                    "finished_at",
                ]
            },
        ),
        ("Plan", {"fields": ["plan_table"]}),
        ("Quality layers", {"fields": ["quality_layers"]}),
        ("Agents (cognitive mode)", {"classes": ["collapse"], "fields": ["agents_timeline"]}),
        ("Timeline", {"fields": ["timeline"]}),
        ("Tracker state", {"classes": ["collapse"], "fields": ["tracker_json"]}),
    ]

    def get_queryset(self, request: HttpRequest) -> QuerySet[ReasoningRun]:
        return super().get_queryset(request).select_related("session__owner", "user_message")

    def get_object(self, request: HttpRequest, object_id: str, from_field: str | None = None) -> Any:
        queryset = self.get_queryset(request).prefetch_related("plans__steps", "events", "answers")
        try:
            return queryset.get(pk=object_id)
        except (ReasoningRun.DoesNotExist, ValueError):
            return None

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return [f for fieldset in self.fieldsets for f in fieldset[1]["fields"]]

    @admin.display(description="question", ordering="user_message__content")
    def question(self, obj: ReasoningRun) -> str:
        return Truncator(obj.user_message.content).chars(80)

    @admin.display(description="owner", ordering="session__owner__username")
    def owner(self, obj: ReasoningRun) -> str:
        return obj.session.owner.get_username()

    @admin.display(description="quality", ordering="final_quality")
    def quality(self, obj: ReasoningRun) -> str:
        return "–" if obj.final_quality is None else f"{obj.final_quality:.2f}"

    @admin.display(description="tokens")
    def total_tokens(self, obj: ReasoningRun) -> int:
        return obj.total_tokens

    @admin.display(description="session")
    def session_link(self, obj: ReasoningRun) -> str:
        return format_html(
            "{} (#{}, owner {})", obj.session.title, obj.session_id, obj.session.owner.get_username()
        )

    @admin.display(description="answer")
    def answer(self, obj: ReasoningRun) -> str:
        answers = list(obj.answers.all())
        return answers[0].content if answers else "–"

    @admin.display(description="attached")
    def attached(self, obj: ReasoningRun) -> str:
        """What travelled beside the question (mentioned documents, command context)."""
        items = [
            f"{item.get('kind', 'document')}: {item.get('title', '')} "
            f"({len(item.get('content') or ''):,} characters)"
            for item in obj.attachments or []
        ]
        return "; ".join(items) or "–"

    @admin.display(description="plan steps")
    def plan_table(self, obj: ReasoningRun) -> str:
        rows = [
            (
                plan.revision,
                plan.created_by,
                step.step_id,
                step.status,
                ", ".join(step.depends_on),
                Truncator(step.description).chars(120),
                ", ".join(step.tools_used),
            )
            for plan in obj.plans.all()
            for step in plan.steps.all()
        ]
        if not rows:
            return "–"
        return format_html(
            '<table class="nexus-audit"><thead><tr><th>rev</th><th>by</th><th>step</th><th>status</th>'
            "<th>depends on</th><th>description</th><th>tools</th></tr></thead><tbody>{}</tbody></table>",
            format_html_join(
                "",
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                rows,
            ),
        )

    @admin.display(description="meta-agent and confidence")
    def quality_layers(self, obj: ReasoningRun) -> str:
        rows = []
        for event in obj.events.all():
            p = event.payload or {}
            if event.kind == "meta.assessment":
                rows.append(
                    (
                        event.sequence,
                        f"meta ({p.get('assessment', '')})",
                        f"confidence {p.get('confidence', 0):.2f}; {p.get('feedback', '')}; concerns: "
                        f"{', '.join(p.get('concerns', [])) or 'none'}",
                    )
                )
            elif event.kind == "confidence.assessed":
                rows.append((event.sequence, f"decision: {p.get('action')}", p.get("reasoning", "")))
        if not rows:
            return "–"
        return format_html(
            '<table class="nexus-audit"><tbody>{}</tbody></table>',
            format_html_join("", "<tr><td>#{}</td><td>{}</td><td>{}</td></tr>", rows),
        )

    @admin.display(description="trace")
    def timeline(self, obj: ReasoningRun) -> str:
        events = list(obj.events.all())
        if not events:
            return "–"
        start = events[0].created_at
        rows = [
            (
                e.sequence,
                f"+{(e.created_at - start).total_seconds():.2f}s",
                e.phase,
                e.kind,
                e.level,
                Truncator(json.dumps(e.payload, ensure_ascii=False)).chars(240),
                _staff_detail(e.payload),
            )
            for e in events
        ]
        return format_html(
            '<table class="nexus-audit"><thead><tr><th>#</th><th>time</th><th>phase</th><th>kind</th>'
            "<th>level</th><th>payload</th></tr></thead><tbody>{}</tbody></table>",
            format_html_join(
                "",
                "<tr><td>{}</td><td>{}</td><td>{}</td><td><code>{}</code></td>"
                "<td>{}</td><td><code>{}</code>{}</td></tr>",
                rows,
            ),
        )

    @admin.display(description="agents' conversation")
    def agents_timeline(self, obj: ReasoningRun) -> str:
        """The cognitive mode's messages: who asked whom what, and how long the answer took."""
        rows = [
            (
                e.sequence,
                e.payload.get("type", ""),
                e.payload.get("sender", ""),
                e.payload.get("recipient", ""),
                e.payload.get("action", ""),
                "" if e.payload.get("duration_ms") is None else f"{e.payload['duration_ms']:.1f} ms",
                e.payload.get("summary", ""),
            )
            for e in obj.events.all()
            if e.kind == "agent.message"
        ]
        if not rows:
            return "–"
        return format_html(
            '<table class="nexus-audit"><thead><tr><th>#</th><th>type</th><th>from</th><th>to</th>'
            "<th>action</th><th>took</th><th>said</th></tr></thead><tbody>{}</tbody></table>",
            format_html_join("", "<tr>" + "<td>{}</td>" * 7 + "</tr>", rows),
        )

    @admin.display(description="tracker state")
    def tracker_json(self, obj: ReasoningRun) -> str:
        return format_html("<pre>{}</pre>", json.dumps(obj.tracker_state, indent=2, ensure_ascii=False))

    @admin.action(description="Export selected runs as JSON")
    def export_json(self, request: HttpRequest, queryset: QuerySet[ReasoningRun]) -> HttpResponse:
        document = runs_export(queryset)
        response = HttpResponse(
            json.dumps(document, indent=2, ensure_ascii=False), content_type="application/json"
        )
        stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
        response["Content-Disposition"] = f'attachment; filename="nexus-runs-{stamp}.json"'
        return response


@admin.register(TraceEvent)
class TraceEventAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ["run_id", "sequence", "created_at", "phase", "kind", "level", "payload_summary"]
    list_filter = ["kind", "level"]
    search_fields = ["kind", "phase"]
    ordering = ["-run_id", "sequence"]
    list_per_page = 100
    readonly_fields = ["run", "sequence", "created_at", "phase", "kind", "level", "payload"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[TraceEvent]:
        return super().get_queryset(request).select_related("run")

    @admin.display(description="payload")
    def payload_summary(self, obj: TraceEvent) -> str:
        return Truncator(json.dumps(obj.payload, ensure_ascii=False)).chars(160)


class RunChildAdmin(ReadOnlyMixin, admin.ModelAdmin):
    """Run-scoped rows listed on their own, for searching across runs."""

    list_per_page = 100

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        return super().get_queryset(request).select_related("run")


@admin.register(Attempt)
class AttemptAdmin(RunChildAdmin):
    list_display = ["run_id", "number", "strategy", "status", "quality_score", "approved", "outcome"]
    list_filter = ["strategy", "status"]


@admin.register(ToolExecution)
class ToolExecutionAdmin(RunChildAdmin):
    list_display = ["run_id", "created_at", "server", "tool", "success", "cached", "duration_ms", "strategy"]
    list_filter = ["server", "tool", "success", "cached"]
    search_fields = ["tool", "server", "argument_hash"]


@admin.register(LLMCall)
class LLMCallAdmin(RunChildAdmin):
    list_display = [
        "run_id",
        "created_at",
        "component",
        "provider",
        "model",
        "input_tokens",
        "output_tokens",
        "cache_read_tokens",
        "cache_write_tokens",
        "latency_ms",
        "cost",
    ]
    list_filter = ["component", "provider", "model"]


@admin.register(Critique)
class CritiqueAdmin(RunChildAdmin):
    list_display = ["run_id", "round", "overall_score", "recommendation", "quick", "created_at"]
    list_filter = ["recommendation", "quick"]


class PlanStepInline(ReadOnlyInline, admin.TabularInline):
    model = PlanStep
    fields = [
        "position",
        "step_id",
        "status",
        "priority",
        "depends_on",
        "spawned_from",
        "description",
        "tools_used",
        "started_at",
        "completed_at",
    ]


@admin.register(Plan)
class PlanAdmin(RunChildAdmin):
    list_display = ["run_id", "revision", "created_by", "mode", "created_at"]
    list_filter = ["created_by", "mode"]
    inlines = [PlanStepInline]


@admin.register(ChatSession)
class ChatSessionAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ["id", "title", "owner", "created_at", "updated_at"]
    list_select_related = ["owner"]
    search_fields = ["title", "owner__username"]
    list_filter = [("owner", admin.RelatedOnlyFieldListFilter)]
    readonly_fields = ["owner", "title", "created_at", "updated_at"]


@admin.register(Message)
class MessageAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ["id", "session", "role", "preview", "run_id", "created_at"]
    list_select_related = ["session"]
    list_filter = ["role"]
    search_fields = ["content"]
    readonly_fields = ["session", "role", "content", "run", "created_at"]

    @admin.display(description="content")
    def preview(self, obj: Message) -> str:
        return Truncator(obj.content).chars(100)


# Lessons, tool servers and documents, and accounts are configured in their own modules.
from chat import admin_accounts, admin_feedback, admin_lessons, admin_memory, admin_tools  # noqa: E402, F401
