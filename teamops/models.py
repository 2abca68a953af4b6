"""Budgets and the spending counters they are checked against."""

from __future__ import annotations

from decimal import Decimal

from django.conf import settings
from django.contrib.auth.models import Group
from django.db import models
from django.db.models import Q
from django.utils import timezone


class Period(models.TextChoices):
    DAY = "day", "Daily"
    MONTH = "month", "Monthly"


class Budget(models.Model):
    """A limit on one person's, or one group's combined, spending per day or month.

    Set by staff in the admin. A group budget counts every member's spending together; a
    person in several groups is bound by each of them and by their own."""

    class Metric(models.TextChoices):
        TOKENS = "tokens", "Tokens"
        COST = "cost", "Cost (USD)"

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="budgets"
    )
    group = models.ForeignKey(Group, null=True, blank=True, on_delete=models.CASCADE, related_name="budgets")
    period = models.CharField(max_length=8, choices=Period.choices, default=Period.DAY)
    metric = models.CharField(max_length=8, choices=Metric.choices, default=Metric.TOKENS)
    limit = models.DecimalField(
        max_digits=16, decimal_places=4, help_text="Tokens (all kinds, cache included) or US dollars."
    )
    enabled = models.BooleanField(default=True)
    note = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["group__name", "user__username", "period", "metric"]
        constraints = [
            models.CheckConstraint(
                condition=Q(user__isnull=False, group__isnull=True)
                | Q(user__isnull=True, group__isnull=False),
                name="budget_user_xor_group",
            ),
            models.CheckConstraint(condition=Q(limit__gte=0), name="budget_limit_not_negative"),
            models.UniqueConstraint(
                fields=["user", "period", "metric"],
                condition=Q(user__isnull=False),
                name="one_budget_per_user",
            ),
            models.UniqueConstraint(
                fields=["group", "period", "metric"],
                condition=Q(group__isnull=False),
                name="one_budget_per_group",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.get_period_display()} {self.get_metric_display().lower()} budget of {self.holder}"

    @property
    def holder(self) -> str:
        return f"group {self.group.name}" if self.group_id else str(self.user)


class UsageCounter(models.Model):
    """What one person spent in one day or month: incremented atomically with every model
    call (an UPDATE … SET tokens = tokens + n), so any number of workers count correctly.
    Kept apart from the run rows so deleting a chat does not give the budget back."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="usage_counters"
    )
    period = models.CharField(max_length=8, choices=Period.choices)
    start = models.DateField()
    tokens = models.BigIntegerField(default=0)
    cost = models.DecimalField(max_digits=16, decimal_places=6, default=Decimal(0))
    calls = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "period", "start"], name="one_counter_per_user_period")
        ]

    def __str__(self) -> str:
        return f"{self.user} {self.period} {self.start}: {self.tokens} tokens, ${self.cost}"
