"""The admin as an audit tool: every run, what it did, in order, read-only.

Record pages are read-only for everyone (they are evidence); only superusers may delete.
Querysets select and prefetch what the pages show, so the number of queries does not grow
with the number of rows.
"""

from __future__ import annotations

import json
from typing import Any

from django.contrib import admin
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.db.models import Count, OuterRef, QuerySet, Subquery
from django.db.models.functions import Coalesce
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.text import Truncator

from chat import admin_trail as trail
from chat import staff_audit
from chat.admin_audit import ViewAuditedAdmin, changelist_queryset, export_download, filters_of
from chat.audit import runs_export, runs_export_lines, runs_for_export, runs_summary_csv
from chat.converters import parse_id
from chat.models import (
    AnswerFeedback,
    Attempt,
    ChatSession,
    Critique,
    LLMCall,
    Message,
    Plan,
    PlanStep,
    ReasoningRun,
    ToolExecution,
    TraceEvent,
)
from chat.search import run_matches

admin.site.site_header = "Nexus audit"
# The run list is wide (a dozen columns beside the filters): the page keeps its width for it;
# the app list is one click away on the admin's home page.
admin.site.enable_nav_sidebar = False
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


class OwnerFilter(admin.SimpleListFilter):
    """Whose runs: read from the sessions table, not a DISTINCT over every run (which grows
    with the run table and showed in the search benchmark)."""

    title = "owner"
    parameter_name = "owner"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        owners = ChatSession.objects.order_by().values_list("owner_id", flat=True).distinct()
        users = get_user_model().objects.filter(pk__in=owners).order_by("username")
        return [(str(user.pk), user.get_username()) for user in users]

    def queryset(self, request: HttpRequest, queryset: QuerySet[ReasoningRun]) -> QuerySet[ReasoningRun]:
        owner = parse_id(self.value())
        if owner is not None:
            return queryset.filter(session__owner_id=owner)
        return queryset


def _feedback_count(rating: int) -> Coalesce:
    """How many people rated a run this way, as a subquery (no GROUP BY over the run list)."""
    counted = (
        AnswerFeedback.objects.filter(run=OuterRef("pk"), rating=rating)
        .order_by()
        .values("run")
        .annotate(n=Count("pk"))
        .values("n")[:1]
    )
    return Coalesce(Subquery(counted), 0)


@admin.register(ReasoningRun)
class ReasoningRunAdmin(ViewAuditedAdmin, ReadOnlyMixin, admin.ModelAdmin):
    audit_list_name = "runs"
    """A run's page reads top-down: the summary card, then each part of the trail in a
    collapsible section whose title says how many rows it holds."""

    audit_object_type = "run"
    list_display = [
        "id",
        "question",
        "owner",
        "status",
        "strategies",
        "quality",
        "total_tokens",
        "spent",
        "time",
        "created",
    ]
    list_display_links = ["id", "question"]
    list_filter = [
        "status",
        "initial_strategy",
        "final_strategy",
        EscalatedFilter,
        OwnerFilter,
        "created_at",
    ]
    search_fields = ["user_message__content", "query", "session__owner__username"]
    list_select_related = ["session__owner", "user_message"]
    list_per_page = 50
    actions = ["export_json"]
    ANALYSIS = [
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
        "attached",
    ]
    OUTCOME = [
        "escalation_count",
        "final_quality",
        "answer_kind",
        "provider",
        "model",
        "worker",
        "delivery_count",
        "created_at",
        "started_at",
        "finished_at",
    ]
    SECTIONS = [
        "summary_card",
        "attempts_table",
        "plan_table",
        "tools_table",
        "calls_table",
        "critiques_table",
        "reflection_block",
        "quality_layers",
        "agents_timeline",
        "timeline",
        "tracker_json",
    ]

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> list[Any]:
        if obj is None:
            return [(None, {"fields": []})]
        steps = sum(len(plan.steps.all()) for plan in obj.plans.all())
        events = obj.events.all()
        layers = sum(1 for e in events if e.kind in ("meta.assessment", "confidence.assessed"))
        collapse = {"classes": ["collapse", "nexus-section"]}
        return [
            (None, {"classes": ["nexus-summary"], "fields": ["summary_card"]}),
            (f"Attempts ({len(obj.attempts.all())})", {**collapse, "fields": ["attempts_table"]}),
            (f"Plan steps ({steps})", {**collapse, "fields": ["plan_table"]}),
            (f"Tool executions ({len(obj.tool_executions.all())})", {**collapse, "fields": ["tools_table"]}),
            (f"LLM calls ({len(obj.llm_calls.all())})", {**collapse, "fields": ["calls_table"]}),
            (f"Critiques ({len(obj.critiques.all())})", {**collapse, "fields": ["critiques_table"]}),
            ("Reflection", {**collapse, "fields": ["reflection_block"]}),
            (f"Meta-agent and confidence ({layers})", {**collapse, "fields": ["quality_layers"]}),
            *self._agents_section(events, collapse),
            (f"Timeline ({len(events)} events)", {**collapse, "fields": ["timeline"]}),
            # Fields, not one table: their labels show (the sections above hide theirs).
            ("Analysis", {"classes": ["collapse"], "fields": self.ANALYSIS}),
            ("Outcome details", {"classes": ["collapse"], "fields": self.OUTCOME}),
            ("Tracker state", {**collapse, "fields": ["tracker_json"]}),
        ]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return [*self.SECTIONS, *self.ANALYSIS, *self.OUTCOME]

    @staticmethod
    def _agents_section(events: Any, collapse: dict[str, Any]) -> list[Any]:
        """The cognitive mode's conversation between agents, for runs that have one."""
        messages = sum(1 for e in events if e.kind == "agent.message")
        if not messages:
            return []
        return [(f"Agents' conversation ({messages} messages)", {**collapse, "fields": ["agents_timeline"]})]

    def get_queryset(self, request: HttpRequest) -> QuerySet[ReasoningRun]:
        up, down = _feedback_count(1), _feedback_count(-1)
        return (
            super()
            .get_queryset(request)
            .select_related("session__owner", "user_message")
            .annotate(feedback_up=up, feedback_down=down, feedback_score=up - down)
        )

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[ReasoningRun], search_term: str
    ) -> tuple[QuerySet[ReasoningRun], bool]:
        """Full text over questions, answers, tool calls and errors (chat/search.py), or the
        owner's exact user name; combined with whatever filters the list has."""
        term = search_term.strip()
        if not term:
            return queryset, False
        owner = ReasoningRun.objects.filter(session__owner__username__iexact=term).values("pk")
        return queryset.filter(run_matches(term, also=owner)), False

    def get_list_display(self, request: HttpRequest) -> list[str]:
        # The feedback column appears once anyone has given feedback: until then it is noise.
        columns = list(super().get_list_display(request))
        if AnswerFeedback.objects.exists():
            columns.insert(columns.index("quality") + 1, "feedback")
        return columns

    def get_urls(self) -> list[Any]:
        diff = path(
            "<path:object_id>/diff/",
            self.admin_site.admin_view(self.diff_view),
            name="chat_reasoningrun_diff",
        )
        export = path(
            "export/", self.admin_site.admin_view(self.bulk_export_view), name="chat_reasoningrun_export"
        )
        return [diff, export, *super().get_urls()]

    def bulk_export_view(self, request: HttpRequest) -> StreamingHttpResponse:
        """Every run the list's current filters, search and date range match, streamed as
        JSON Lines (whole runs, importable) or CSV (one summary row per run)."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        fmt = request.GET.get("format", "jsonl")
        if fmt not in ("jsonl", "csv"):
            raise Http404("Unknown export format.")
        runs = changelist_queryset(self, request)
        return export_download(
            request,
            object_type="run",
            noun="run(s)",
            count=runs.count(),
            fmt=fmt,
            csv_rows=runs_summary_csv(runs),
            json_lines=runs_export_lines(runs),
            filename="nexus-runs",
        )

    def changelist_view(self, request: HttpRequest, extra_context: Any = None) -> HttpResponse:
        # "Export all matching" carries the list's own filters, search and date range.
        query = request.GET.copy()
        export = reverse("admin:chat_reasoningrun_export")
        links = {}
        for fmt in ("jsonl", "csv"):
            query["format"] = fmt
            links[f"export_{fmt}_url"] = f"{export}?{query.urlencode()}"
        # A search reads conversations by their content: ViewAuditedAdmin records who looked for what.
        return super().changelist_view(request, {**(extra_context or {}), **links})

    def get_object(self, request: HttpRequest, object_id: str, from_field: str | None = None) -> Any:
        # What the export reads (attempts, plans and steps, tools, calls, critiques, reflection,
        # events, answers) plus the feedback: a fixed number of queries however long the run.
        queryset = runs_for_export(self.get_queryset(request)).prefetch_related("feedback__user")
        try:
            return queryset.get(pk=object_id)
        except (ReasoningRun.DoesNotExist, ValueError):
            return None

    def diff_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """The rejected drafts beside what replaced them, one block per escalation."""
        run = self.get_object(request, object_id)
        if run is None:
            raise Http404("No such run.")
        if not self.has_view_permission(request, run):
            raise PermissionDenied
        staff_audit.record(
            request, "view", "run", run.pk, f"Compared the attempts of run {run.pk}", page="diff"
        )
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": f"Run {run.pk}: what each escalation changed",
            "run": run,
            "changes": trail.attempt_changes(run),
            "run_url": reverse("admin:chat_reasoningrun_change", args=[run.pk]),
        }
        return TemplateResponse(request, "admin/chat/reasoningrun/diff.html", context)

    def _diff_url(self, obj: ReasoningRun) -> str:
        return reverse("admin:chat_reasoningrun_diff", args=[obj.pk])

    @admin.display(description="question", ordering="user_message__content")
    def question(self, obj: ReasoningRun) -> str:
        text = obj.user_message.content
        return format_html('<span class="nexus-clip" title="{}">{}</span>', text, Truncator(text).chars(90))

    @admin.display(description="owner", ordering="session__owner__username")
    def owner(self, obj: ReasoningRun) -> str:
        return obj.session.owner.get_username()

    @admin.display(description="strategy", ordering="final_strategy")
    def strategies(self, obj: ReasoningRun) -> str:
        first = trail.STRATEGY_SHORT.get(obj.initial_strategy, obj.initial_strategy)
        last = trail.STRATEGY_SHORT.get(obj.final_strategy, obj.final_strategy)
        if first == last and not obj.escalation_count:
            return first
        # The escalations, counted when the arrow alone does not tell (DIRECT → DEEP by LIGHT).
        return f"{first} → {last}" + (f" ({obj.escalation_count})" if obj.escalation_count > 1 else "")

    @admin.display(description="cost", ordering="cost")
    def spent(self, obj: ReasoningRun) -> str:
        return f"${obj.cost:.4f}"

    @admin.display(description="time", ordering="latency_ms")
    def time(self, obj: ReasoningRun) -> str:
        return "–" if obj.latency_ms is None else f"{obj.latency_ms / 1000:.1f} s"

    @admin.display(description="created", ordering="created_at")
    def created(self, obj: ReasoningRun) -> str:
        return timezone.localtime(obj.created_at).strftime("%Y-%m-%d %H:%M")

    @admin.display(description="quality", ordering="final_quality")
    def quality(self, obj: ReasoningRun) -> str:
        return "–" if obj.final_quality is None else f"{obj.final_quality:.2f}"

    @admin.display(description="feedback", ordering="feedback_score")
    def feedback(self, obj: ReasoningRun) -> str:
        up, down = getattr(obj, "feedback_up", 0), getattr(obj, "feedback_down", 0)
        return f"👍 {up} · 👎 {down}" if up or down else "–"

    @admin.display(description="tokens")
    def total_tokens(self, obj: ReasoningRun) -> int:
        return obj.total_tokens

    @admin.display(description="summary")
    def summary_card(self, obj: ReasoningRun) -> str:
        return trail.summary_card(
            obj,
            diff_url=self._diff_url(obj),
            session_url=reverse("admin:chat_chatsession_change", args=[obj.session_id]),
        )

    @admin.display(description="attempts")
    def attempts_table(self, obj: ReasoningRun) -> str:
        return trail.attempts_table(obj, self._diff_url(obj))

    @admin.display(description="tool executions")
    def tools_table(self, obj: ReasoningRun) -> str:
        return trail.tools_table(obj)

    @admin.display(description="LLM calls")
    def calls_table(self, obj: ReasoningRun) -> str:
        return trail.calls_table(obj)

    @admin.display(description="critiques")
    def critiques_table(self, obj: ReasoningRun) -> str:
        return trail.critiques_table(obj)

    @admin.display(description="reflection")
    def reflection_block(self, obj: ReasoningRun) -> str:
        return trail.reflection_block(obj)

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
                trail.long_text(step.description, 160),
                ", ".join(step.tools_used),
            )
            for plan in obj.plans.all()
            for step in plan.steps.all()
        ]
        return trail.table(["rev", "by", "step", "status", "depends on", "description", "tools"], rows)

    @admin.display(description="meta-agent and confidence")
    def quality_layers(self, obj: ReasoningRun) -> str:
        rows = []
        for event in obj.events.all():
            p = event.payload or {}
            if event.kind == "meta.assessment":
                rows.append(
                    (
                        f"#{event.sequence}",
                        f"meta ({p.get('assessment', '')})",
                        f"confidence {p.get('confidence', 0):.2f}; {p.get('feedback', '')}; concerns: "
                        f"{', '.join(p.get('concerns', [])) or 'none'}",
                    )
                )
            elif event.kind == "confidence.assessed":
                rows.append((f"#{event.sequence}", f"decision: {p.get('action')}", p.get("reasoning", "")))
        return trail.table(["event", "layer", "verdict"], rows)

    @admin.display(description="trace")
    def timeline(self, obj: ReasoningRun) -> str:
        events = list(obj.events.all())
        if not events:
            return "–"
        start = events[0].created_at
        diff_url = self._diff_url(obj)
        rows = [
            (
                e.sequence,
                f"+{(e.created_at - start).total_seconds():.2f}s",
                e.phase,
                format_html('<code>{}</code> <a href="{}">compare attempts</a>', e.kind, diff_url)
                if e.kind == "escalation"
                else format_html("<code>{}</code>", e.kind),
                e.level,
                format_html("{}{}", trail.long_text(e.payload, 200), _staff_detail(e.payload)),
            )
            for e in events
        ]
        return trail.table(["#", "time", "phase", "kind", "level", "payload"], rows)

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
        return trail.table(["#", "type", "from", "to", "action", "took", "said"], rows)

    @admin.display(description="tracker state")
    def tracker_json(self, obj: ReasoningRun) -> str:
        return format_html("<pre>{}</pre>", json.dumps(obj.tracker_state, indent=2, ensure_ascii=False))

    @admin.action(description="Export selected runs as JSON")
    def export_json(self, request: HttpRequest, queryset: QuerySet[ReasoningRun]) -> HttpResponse:
        document = runs_export(queryset)
        staff_audit.record(
            request,
            "export",
            "run",
            "",
            f"Exported {len(document['runs'])} selected run(s) as JSON",
            count=len(document["runs"]),
            format="json",
            run_ids=sorted(queryset.values_list("pk", flat=True)),
            filters=filters_of(request),
        )
        response = HttpResponse(
            json.dumps(document, indent=2, ensure_ascii=False), content_type="application/json"
        )
        stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
        response["Content-Disposition"] = f'attachment; filename="nexus-runs-{stamp}.json"'
        return response


@admin.register(TraceEvent)
class TraceEventAdmin(ViewAuditedAdmin, ReadOnlyMixin, admin.ModelAdmin):
    audit_object_type = "trace event"
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


class RunChildAdmin(ViewAuditedAdmin, ReadOnlyMixin, admin.ModelAdmin):
    """Run-scoped rows listed on their own, for searching across runs (a tool result or a
    model call holds the conversation too: opening one is recorded)."""

    list_per_page = 100

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        return super().get_queryset(request).select_related("run")


@admin.register(Attempt)
class AttemptAdmin(RunChildAdmin):
    audit_object_type = "attempt"
    list_display = ["run_id", "number", "strategy", "status", "quality_score", "approved", "outcome"]
    list_filter = ["strategy", "status"]


@admin.register(ToolExecution)
class ToolExecutionAdmin(RunChildAdmin):
    list_display = ["run_id", "created_at", "server", "tool", "success", "cached", "duration_ms", "strategy"]
    list_filter = ["server", "tool", "success", "cached"]
    search_fields = ["tool", "server", "argument_hash"]
    # The parts field holds each image's and download's data (megabytes of base64): the page
    # names them instead.
    exclude = ["parts"]
    readonly_fields = ["returned"]

    @admin.display(description="images, downloads and links")
    def returned(self, obj: ToolExecution) -> str:
        rows = [
            (
                str(part.get("type", "")),
                str(part.get("mime_type") or ""),
                f"{part['bytes']:,} bytes" if isinstance(part.get("bytes"), int) else "",
                str(part.get("uri") or part.get("name") or ""),
            )
            for part in obj.parts or []
            if isinstance(part, dict)
        ]
        return format_html_join("", "<div>{} {} {} {}</div>", rows) if rows else "–"


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
class ChatSessionAdmin(ViewAuditedAdmin, ReadOnlyMixin, admin.ModelAdmin):
    audit_object_type = "session"
    list_display = ["id", "title", "owner", "created_at", "updated_at"]
    list_select_related = ["owner"]
    search_fields = ["title", "owner__username"]
    list_filter = [("owner", admin.RelatedOnlyFieldListFilter)]
    readonly_fields = ["owner", "title", "created_at", "updated_at"]


@admin.register(Message)
class MessageAdmin(ViewAuditedAdmin, ReadOnlyMixin, admin.ModelAdmin):
    audit_object_type = "message"
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
