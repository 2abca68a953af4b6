"""Percentiles computed by the database: PERCENTILE_CONT on PostgreSQL, and the same
function registered into SQLite (the embedded deployment), so no view loops over rows."""

from __future__ import annotations

import math
from typing import Any

from django.db.models import Aggregate, FloatField, Value


class Percentile(Aggregate):
    """The continuous percentile `fraction` (0..1) of an expression, per group."""

    function = "PERCENTILE_CONT"
    name = "Percentile"
    output_field = FloatField()
    allow_distinct = False

    def __init__(self, expression: Any, fraction: float, **extra: Any) -> None:
        super().__init__(expression, Value(float(fraction)), **extra)

    def as_postgresql(self, compiler: Any, connection: Any, **extra: Any) -> tuple[str, list[Any]]:
        expression, fraction = self.get_source_expressions()[:2]
        value_sql, value_params = compiler.compile(expression)
        fraction_sql, fraction_params = compiler.compile(fraction)
        sql = f"PERCENTILE_CONT({fraction_sql}) WITHIN GROUP (ORDER BY {value_sql})"
        params = [*fraction_params, *value_params]
        if self.filter is not None:
            filter_sql, filter_params = compiler.compile(self.filter)
            sql += f" FILTER (WHERE {filter_sql})"
            params += filter_params
        return sql, params

    def as_sqlite(self, compiler: Any, connection: Any, **extra: Any) -> tuple[str, list[Any]]:
        return super().as_sql(compiler, connection, function="NEXUS_PERCENTILE", **extra)


class _SqlitePercentile:
    """SQLite aggregate with PERCENTILE_CONT's interpolation."""

    def __init__(self) -> None:
        self.values: list[float] = []
        self.fraction = 0.5

    def step(self, value: float | None, fraction: float) -> None:
        self.fraction = fraction
        if value is not None:
            self.values.append(float(value))

    def finalize(self) -> float | None:
        if not self.values:
            return None
        ordered = sorted(self.values)
        position = self.fraction * (len(ordered) - 1)
        low, high = math.floor(position), math.ceil(position)
        return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def register_sqlite_functions(sender: Any, connection: Any, **kwargs: Any) -> None:
    """connection_created receiver: give SQLite the percentile aggregate."""
    if connection.vendor == "sqlite":
        connection.connection.create_aggregate("NEXUS_PERCENTILE", 2, _SqlitePercentile)
