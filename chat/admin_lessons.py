"""Lessons in the admin: reflections, and the team lessons staff promote from them.

A reflection's lessons reach only its user's later runs until staff read them and promote
them (an action needing the *add team lesson* permission); each team lesson links back to the
run it came from, and staff reword or delete it there.
"""

from __future__ import annotations

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html
from django.utils.text import Truncator

from chat import staff_audit
from chat.admin import RunChildAdmin
from chat.admin_audit import ChangeAuditedAdmin
from chat.lessons import lessons_promote
from chat.models import ReasoningRun, Reflection, TeamLesson


def _run_link(run: ReasoningRun | None) -> str:
    if run is None:
        return "–"
    url = reverse("admin:chat_reasoningrun_change", args=[run.pk])
    return format_html('<a href="{}">run {}</a>: {}', url, run.pk, Truncator(run.query).chars(80))


@admin.register(Reflection)
class ReflectionAdmin(RunChildAdmin):
    list_display = ["run_id", "confidence", "lesson_count", "created_at"]
    readonly_fields = ["source", "lessons", "insights", "improvements", "confidence", "created_at"]
    exclude = ["run"]
    actions = ["promote_lessons"]

    @admin.display(description="lessons")
    def lesson_count(self, obj: Reflection) -> int:
        return len(obj.lessons)

    @admin.display(description="source run")
    def source(self, obj: Reflection) -> str:
        return _run_link(obj.run)

    def has_promote_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("chat.add_teamlesson")

    @admin.action(
        description="Promote their lessons to the team (after reading them)", permissions=["promote"]
    )
    def promote_lessons(self, request: HttpRequest, queryset: QuerySet[Reflection]) -> None:
        reflections = list(queryset)
        added = lessons_promote(reflections=reflections, by=request.user)
        staff_audit.record(
            request,
            "add",
            "team lesson",
            "",
            f"Promoted {added} lesson(s) to the team from {len(reflections)} reflection(s)",
            added=added,
            runs=[r.run_id for r in reflections],
        )
        self.message_user(
            request,
            f"{added} lesson(s) now reach every user's planner; edit or remove them under Team lessons.",
        )


@admin.register(TeamLesson)
class TeamLessonAdmin(ChangeAuditedAdmin, admin.ModelAdmin):
    """Reviewed lessons every user's planner receives; staff reword or delete them here."""

    audit_object_type = "team lesson"
    audit_value_fields = ("text",)
    list_display = ["text", "source", "promoted_by", "promoted_at"]
    list_select_related = ["source_run", "promoted_by"]
    search_fields = ["text"]
    fields = ["text", "source", "promoted_by", "promoted_at"]
    readonly_fields = ["source", "promoted_by", "promoted_at"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # lessons are promoted from a run's reflection, so their source is known

    @admin.display(description="source run")
    def source(self, obj: TeamLesson) -> str:
        return _run_link(obj.source_run)
