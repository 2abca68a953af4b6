"""Memory in the admin: episodes and facts, each on its own page, and promotion to the team.

An item is its owner's until staff read it and share it with the team (an action needing the
*change memory* permission); a shared item is recalled for everyone's runs. Sharing happens
only through that action, which records who shared it. Staff may reword a shared item (what
every run may be told), and the edit goes to the staff audit log with its new wording; a
private item's words are its owner's alone, as a private document's are: staff who could
reword it could tell that person's runs anything.
"""

from __future__ import annotations

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.text import Truncator

from chat import staff_audit
from chat.admin_audit import ChangeAuditedAdmin, ViewAuditedAdmin
from chat.memory import memories_erase, memory_promote
from chat.models import EpisodicMemory, Memory, SemanticMemory, StaffAuditEntry
from reasoning.text import counted


class MemoryAdmin(ChangeAuditedAdmin, ViewAuditedAdmin, admin.ModelAdmin):
    audit_object_type = "memory"
    audit_value_fields = ("text", "confidence")
    kind = ""
    list_display = ["id", "owner", "summary", "source", "confidence", "shared", "created_at"]
    list_filter = ["shared"]
    search_fields = ["text", "owner__username", "source"]
    readonly_fields = ["owner", "kind", "session", "run", "shared", "promoted_by", "created_at"]
    actions = ["promote"]
    list_select_related = ["owner"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Memory]:
        return super().get_queryset(request).filter(kind=self.kind)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def get_readonly_fields(self, request: HttpRequest, obj: Memory | None = None) -> list[str]:
        fields = list(super().get_readonly_fields(request, obj))
        if obj is not None and not obj.shared:
            fields += ["text", "confidence"]
        return fields

    def delete_model(self, request: HttpRequest, obj: Memory) -> None:
        memories_erase({obj.pk})  # with the episodes that could repeat it, as on the Memory page

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Memory]) -> None:
        memories_erase(set(queryset.values_list("pk", flat=True)))

    @admin.display(description="text")
    def summary(self, obj: Memory) -> str:
        return Truncator(obj.text).chars(100)

    @admin.action(description="Share with the team (after reading them)", permissions=["change"])
    def promote(self, request: HttpRequest, queryset: QuerySet[Memory]) -> None:
        chosen = sorted(queryset.filter(shared=False).values_list("pk", flat=True))
        count = memory_promote(memories=queryset, by=request.user)
        if count:
            staff_audit.record(
                request,
                StaffAuditEntry.Action.CHANGE,
                "memory",
                "",
                f"Shared {counted(count, 'memory item')} with the team",
                memory_ids=chosen,
            )
        self.message_user(
            request,
            f"{counted(count, 'item')} {'is' if count == 1 else 'are'} now recalled for everyone.",
        )


@admin.register(EpisodicMemory)
class EpisodicMemoryAdmin(MemoryAdmin):
    kind = Memory.Kind.EPISODIC


@admin.register(SemanticMemory)
class SemanticMemoryAdmin(MemoryAdmin):
    kind = Memory.Kind.SEMANTIC
