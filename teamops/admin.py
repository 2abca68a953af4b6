"""Budgets in the admin: staff set them, see how much of each is spent, and every change is
recorded in the staff audit log."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from chat import staff_audit
from chat.models import StaffAuditEntry
from teamops.budgets import amount, budget_state
from teamops.models import Budget

Action = StaffAuditEntry.Action


@admin.register(Budget)
class BudgetAdmin(admin.ModelAdmin):
    list_display = ["holder", "period", "metric", "limit_shown", "spent", "resets", "enabled"]
    list_select_related = ["user", "group"]
    list_filter = ["period", "metric", "enabled", "group"]
    search_fields = ["user__username", "group__name", "note"]
    fields = ["user", "group", "period", "metric", "limit", "enabled", "note"]

    @admin.display(description="Limit")
    def limit_shown(self, budget: Budget) -> str:
        return amount(budget.metric, budget.limit)

    @admin.display(description="Spent this period")
    def spent(self, budget: Budget) -> str:
        state = budget_state(budget)
        return f"{amount(budget.metric, state.used)} ({state.fraction:.0%})"

    @admin.display(description="Resets")
    def resets(self, budget: Budget) -> str:
        return f"{budget_state(budget).resets_at:%Y-%m-%d %H:%M %Z}"

    def save_model(self, request: HttpRequest, obj: Budget, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        staff_audit.record(
            request,
            Action.CHANGE if change else Action.ADD,
            "budget",
            obj.pk,
            f"{obj}: {amount(obj.metric, obj.limit)}{'' if obj.enabled else ' (disabled)'}",
            changed=sorted(form.changed_data) if form is not None else [],
        )

    def delete_model(self, request: HttpRequest, obj: Budget) -> None:
        summary, pk = str(obj), obj.pk
        super().delete_model(request, obj)
        staff_audit.record(request, Action.DELETE, "budget", pk, summary)

    def delete_queryset(self, request: HttpRequest, queryset: Any) -> None:
        deleted = [(budget.pk, str(budget)) for budget in queryset]
        super().delete_queryset(request, queryset)
        for pk, summary in deleted:
            staff_audit.record(request, Action.DELETE, "budget", pk, summary)
