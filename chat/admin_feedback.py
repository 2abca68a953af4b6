"""Admin pages for what people said about answers and for the staff audit log."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from chat.admin import ReadOnlyMixin
from chat.admin_audit import ViewAuditedAdmin, export_audit_csv, export_audit_jsonl
from chat.models import AnswerFeedback, StaffAuditEntry


@admin.register(AnswerFeedback)
class AnswerFeedbackAdmin(ViewAuditedAdmin, ReadOnlyMixin, admin.ModelAdmin):
    audit_object_type = "feedback"
    list_display = ["run", "user", "rating", "comment", "updated_at"]
    list_filter = ["rating", "updated_at"]
    search_fields = ["comment", "user__username"]
    list_select_related = ["run", "user"]
    raw_id_fields = ["run", "user"]
    date_hierarchy = "updated_at"


@admin.register(StaffAuditEntry)
class StaffAuditEntryAdmin(admin.ModelAdmin):
    """Superusers only, and only to read: the people it watches cannot edit it."""

    list_display = ["created_at", "actor_name", "action", "object_type", "object_id", "summary", "ip_address"]
    list_filter = ["action", "object_type", "created_at"]
    search_fields = ["actor_name", "summary", "object_id"]
    date_hierarchy = "created_at"
    readonly_fields = [f.name for f in StaffAuditEntry._meta.fields]
    actions = [export_audit_csv, export_audit_jsonl]

    def has_module_permission(self, request: HttpRequest) -> bool:
        return request.user.is_active and request.user.is_superuser

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return request.user.is_active and request.user.is_superuser

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
