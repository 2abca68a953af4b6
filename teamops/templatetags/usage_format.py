"""Number formats for the usage pages."""

from __future__ import annotations

from typing import Any

from django import template

from teamops.usage import strategy_label

register = template.Library()
register.filter("strategy_label", strategy_label)


@register.filter
def percent(value: Any) -> str:
    return "—" if value is None else f"{float(value):.0%}"


@register.filter
def usd(value: Any) -> str:
    if value is None:
        return "—"
    amount = float(value)
    return f"${amount:,.4f}" if 0 < amount < 0.01 else f"${amount:,.2f}"


@register.filter
def ms(value: Any) -> str:
    if value is None:
        return "—"
    return f"{float(value) / 1000:.1f} s" if float(value) >= 1000 else f"{float(value):.0f} ms"


@register.filter
def thousands(value: Any) -> str:
    return "—" if value is None else f"{int(value):,}"


@register.filter
def get(row: dict[str, Any], key: str) -> Any:
    return row.get(key)
