"""Budgets: counting spending, refusing a run that would start past a limit, and telling the
engine (through reasoning.budget.SpendingLimit) when a running run crosses one.

Periods follow TIME_ZONE: a day starts at local midnight, a month on the 1st.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from functools import reduce
from typing import Any

from channels.db import database_sync_to_async
from django.contrib.auth.models import Group
from django.db import connection
from django.db.models import Q, Sum
from django.utils import formats, timezone

from teamops.models import Budget, Period, UsageCounter


def period_start(period: str, now: datetime | None = None) -> date:
    today = timezone.localdate(now or timezone.now())
    return today if period == Period.DAY else today.replace(day=1)


def period_end(period: str, now: datetime | None = None) -> datetime:
    """When the period that contains `now` ends (the next one starts), as an aware datetime."""
    start = period_start(period, now)
    if period == Period.DAY:
        following = start + timedelta(days=1)
    else:
        following = (start.replace(day=28) + timedelta(days=4)).replace(day=1)
    return timezone.make_aware(datetime.combine(following, time.min))


# Creates each period's counter or adds to it, in one statement whichever worker comes first.
COUNTER_UPSERT = (
    'INSERT INTO teamops_usagecounter (user_id, period, "start", tokens, cost, calls) VALUES {rows} '
    'ON CONFLICT (user_id, period, "start") DO UPDATE SET '
    "tokens = teamops_usagecounter.tokens + excluded.tokens, "
    "cost = teamops_usagecounter.cost + excluded.cost, calls = teamops_usagecounter.calls + excluded.calls"
)


@dataclass(frozen=True)
class Charge:
    """Some model calls' spending by one person, at one moment."""

    user_id: int
    tokens: int
    cost: Decimal
    calls: int = 1
    at: datetime | None = None


def usage_charges(charges: Iterable[Charge]) -> None:
    """Add spending to each person's day and month counters, atomically, in one upsert.

    The counters' rows are locked in one order, by person and period, whatever order the charges
    came in: each worker's event writer charges the people whose runs it stored, inside the
    batch's transaction, and two workers charging the same two people in opposite orders
    deadlocked (PostgreSQL broke it after its one-second deadlock timeout, so every run in both
    batches showed its events a second late, and one batch was written again)."""
    totals: dict[tuple[int, str, date], list[Any]] = {}
    for charge in charges:
        for period in (Period.DAY, Period.MONTH):
            key = (charge.user_id, str(period), period_start(period, charge.at))
            total = totals.setdefault(key, [0, Decimal(0), 0])
            total[0] += charge.tokens
            total[1] += charge.cost
            total[2] += charge.calls
    if not totals:
        return
    field = UsageCounter._meta.get_field
    start, cost = field("start"), field("cost")
    values: list[object] = []
    for (user_id, period, day), (tokens, spent, calls) in sorted(totals.items()):
        values += [
            user_id,
            period,
            start.get_db_prep_save(day, connection),
            tokens,
            cost.get_db_prep_save(spent, connection),
            calls,
        ]
    rows = ", ".join(["(%s, %s, %s, %s, %s, %s)"] * len(totals))
    with connection.cursor() as cursor:
        cursor.execute(COUNTER_UPSERT.format(rows=rows), values)


def usage_charge(
    *, user_id: int, tokens: int, cost: Decimal, at: datetime | None = None, calls: int = 1
) -> None:
    """Add `calls` model calls' spending to the person's day and month counters."""
    usage_charges([Charge(user_id, tokens, cost, calls, at)])


@dataclass(frozen=True)
class BudgetState:
    budget: Budget
    used: Decimal
    resets_at: datetime

    @property
    def exceeded(self) -> bool:
        return self.used >= self.budget.limit

    @property
    def fraction(self) -> float:
        return float(self.used / self.budget.limit) if self.budget.limit else 1.0

    def message(self) -> str:
        """What the person reads when this budget stops them."""
        budget = self.budget
        whose = f'Your group "{budget.group.name}"\'s' if budget.group_id else "Your"
        period = "daily" if budget.period == Period.DAY else "monthly"
        when = timezone.localtime(self.resets_at)
        reset = f"{formats.date_format(when, 'j M Y')} at {when:%H:%M} {when.tzname()}"
        return (
            f"{whose} {period} budget of {amount(budget.metric, budget.limit)} is used up "
            f"({amount(budget.metric, self.used)} spent). It resets on {reset}."
        )


def amount(metric: str, value: Decimal) -> str:
    if metric == Budget.Metric.COST:
        return f"${value:,.2f}"
    return f"{int(value):,} tokens"


def budgets_for(user_id: int) -> list[Budget]:
    """The enabled budgets that bind this person: their own and their groups'."""
    groups = Group.objects.filter(user__pk=user_id)
    return list(
        Budget.objects.filter(enabled=True)
        .filter(Q(user_id=user_id) | Q(group__in=groups))
        .select_related("group", "user")
    )


def _counted(budget: Budget, now: datetime | None) -> Q:
    """The usage counters a budget adds up in its current period: its person's, or each
    member's of its group (found by a subquery: a join with every group of the counter's
    user would count a counter once for each of them)."""
    if budget.user_id:
        spent_by = Q(user_id=budget.user_id)
    else:
        members = Group.user_set.through.objects.filter(group_id=budget.group_id)
        spent_by = Q(user_id__in=members.values("user_id"))
    return Q(period=budget.period, start=period_start(budget.period, now)) & spent_by


def _field(budget: Budget) -> str:
    return "tokens" if budget.metric == Budget.Metric.TOKENS else "cost"


def budget_state(budget: Budget, now: datetime | None = None) -> BudgetState:
    """How much of `budget` is spent in the current period (one aggregate query)."""
    return budget_states(budget, now=now)[0]


def budget_states(*budgets: Budget, now: datetime | None = None) -> list[BudgetState]:
    """How much of each budget is spent in its current period: one aggregate query, with a
    sum for each."""
    if not budgets:
        return []
    counted = [_counted(budget, now) for budget in budgets]
    sums = {f"b{i}": Sum(_field(budget), filter=counted[i]) for i, budget in enumerate(budgets)}
    used = UsageCounter.objects.filter(reduce(operator.or_, counted)).aggregate(**sums)
    return [
        BudgetState(budget, Decimal(used[f"b{i}"] or 0), period_end(budget.period, now))
        for i, budget in enumerate(budgets)
    ]


def budget_states_for(user_id: int, now: datetime | None = None) -> list[BudgetState]:
    """Every budget that binds this person, with what is spent of it: two queries."""
    return budget_states(*budgets_for(user_id), now=now)


# Whether any budget is enabled at all, in a statement written by hand: it is asked before
# every message and by every running run, and the ORM's exists() cost several times its
# database work in CPU.
ANY_BUDGET = "SELECT 1 FROM teamops_budget WHERE enabled = %s LIMIT 1"


def refusal_for(user_id: int, now: datetime | None = None) -> str | None:
    """Why this person may not start a run now (the budget that resets last), or None.

    Asked before every message and by running runs; most teams set no budget at all, and one
    cheap statement says so."""
    with connection.cursor() as cursor:
        cursor.execute(ANY_BUDGET, [True])
        if cursor.fetchone() is None:
            return None
    exceeded = [state for state in budget_states_for(user_id, now) if state.exceeded]
    if not exceeded:
        return None
    return max(exceeded, key=lambda state: state.resets_at).message()


class UserSpendingLimit:
    """The engine's SpendingLimit for one person's run, read from the shared counters."""

    def __init__(self, user_id: int) -> None:
        self.user_id = user_id

    async def exceeded(self) -> str | None:
        return await database_sync_to_async(refusal_for)(self.user_id)
