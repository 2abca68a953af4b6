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
                violation_error_message="A budget is for one person or for one group: choose one of the two.",
            ),
            models.CheckConstraint(
                condition=Q(limit__gte=0),
                name="budget_limit_not_negative",
                violation_error_message="The limit cannot be negative.",
            ),
            models.UniqueConstraint(
                fields=["user", "period", "metric"],
                condition=Q(user__isnull=False),
                name="one_budget_per_user",
                violation_error_message="This person already has a budget for that period and measure.",
            ),
            models.UniqueConstraint(
                fields=["group", "period", "metric"],
                condition=Q(group__isnull=False),
                name="one_budget_per_group",
                violation_error_message="This group already has a budget for that period and measure.",
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


# Upper bounds (ms) of the latency histogram's buckets; the last bucket is open-ended.
# Percentiles on the dashboard are read from these counts (interpolated within a bucket).
LATENCY_BOUNDS_MS = (
    250, 500, 750, 1000, 1500, 2000, 3000, 4000, 5000, 7500,
    10000, 15000, 20000, 30000, 45000, 60000, 90000, 120000, 180000,
)  # fmt: skip
LATENCY_FIELDS = tuple(f"lat_{index:02d}" for index in range(len(LATENCY_BOUNDS_MS) + 1))


def _latency_histogram() -> dict[str, models.Field]:
    return {name: models.PositiveIntegerField(default=0) for name in LATENCY_FIELDS}


class UsageDay(models.Model):
    """Finished runs rolled up per day, person, model and final strategy, so the dashboard
    reads a few thousand rows instead of every run. Filled when a run finishes (and by
    `manage.py usage_rollup` for older runs); never changed by hand."""

    day = models.DateField()
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    model = models.CharField(max_length=120, blank=True)
    strategy = models.CharField(max_length=20, blank=True)
    runs = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    escalated = models.PositiveIntegerField(default=0)
    input_tokens = models.BigIntegerField(default=0)
    output_tokens = models.BigIntegerField(default=0)
    cache_read_tokens = models.BigIntegerField(default=0)
    cache_write_tokens = models.BigIntegerField(default=0)
    cost = models.DecimalField(max_digits=16, decimal_places=6, default=Decimal(0))
    quality_sum = models.FloatField(default=0.0)
    quality_n = models.PositiveIntegerField(default=0)
    q_low = models.PositiveIntegerField(default=0)
    q_fair = models.PositiveIntegerField(default=0)
    q_good = models.PositiveIntegerField(default=0)
    q_high = models.PositiveIntegerField(default=0)
    q_none = models.PositiveIntegerField(default=0)
    locals().update(_latency_histogram())

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["day", "user", "model", "strategy"], name="one_usage_row_per_group"
            )
        ]
        indexes = [models.Index(fields=["day"], name="usage_day")]

    def __str__(self) -> str:
        return f"{self.day} user {self.user_id} {self.model} {self.strategy}: {self.runs} runs"


class CallDay(models.Model):
    """Model calls of finished runs per day, person and the model that was called."""

    day = models.DateField()
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    model = models.CharField(max_length=120, blank=True)
    calls = models.PositiveIntegerField(default=0)
    input_tokens = models.BigIntegerField(default=0)
    output_tokens = models.BigIntegerField(default=0)
    cache_read_tokens = models.BigIntegerField(default=0)
    cache_write_tokens = models.BigIntegerField(default=0)
    cost = models.DecimalField(max_digits=16, decimal_places=6, default=Decimal(0))
    locals().update(_latency_histogram())

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["day", "user", "model"], name="one_call_row_per_group")
        ]
        indexes = [models.Index(fields=["day"], name="call_day")]

    def __str__(self) -> str:
        return f"{self.day} user {self.user_id} {self.model}: {self.calls} calls"


class CountedRun(models.Model):
    """A run already rolled up (a run is counted once, however often recording is tried).
    No foreign key: deleting a chat does not un-count its spending."""

    run_id = models.BigIntegerField(primary_key=True)
    batch = models.CharField(max_length=32, db_index=True)

    def __str__(self) -> str:
        return f"run {self.run_id} (counted)"


class SharedLink(models.Model):
    """A read-only link to one chat for signed-in teammates, made by the chat's owner.

    The token is the only key (unguessable, 32 bytes); revoking keeps the row so the owner
    still sees who opened it."""

    session = models.ForeignKey("chat.ChatSession", on_delete=models.CASCADE, related_name="shared_links")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    token = models.CharField(max_length=64, unique=True)
    include_trace = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"link to chat {self.session_id}{' (revoked)' if self.revoked_at else ''}"

    @property
    def active(self) -> bool:
        return self.revoked_at is None


class SharedLinkOpening(models.Model):
    """Who opened a shared link: first and last time, and how often."""

    link = models.ForeignKey(SharedLink, on_delete=models.CASCADE, related_name="openings")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    first_opened_at = models.DateTimeField(default=timezone.now)
    last_opened_at = models.DateTimeField(default=timezone.now)
    times = models.PositiveIntegerField(default=1)

    class Meta:
        ordering = ["-last_opened_at"]
        constraints = [models.UniqueConstraint(fields=["link", "user"], name="one_opening_row_per_person")]

    def __str__(self) -> str:
        return f"{self.user} opened {self.link}"
