from __future__ import annotations

from typing import Any

from django import template

from chat.models import ReasoningRun
from chat.presenters import MODE_ICONS, run_mode

register = template.Library()


@register.filter
def mode_of(value: Any) -> str:
    """A mode name from a mode string or a run (None means Ready)."""
    if isinstance(value, str) and value:
        return value
    if isinstance(value, ReasoningRun):
        return run_mode(value)
    return "Ready"


@register.filter
def mode_icon(mode: str) -> str:
    return MODE_ICONS.get(mode, "•")


@register.filter
def css_kind(kind: str) -> str:
    """An event kind as a class name: "tool.called" → "tool-called"."""
    return kind.replace(".", "-")


@register.filter
def phase_label(phase: str) -> str:
    """A trace phase without the engine's identifiers: "Execution (LIGHT_PLANNING)" → "Execution (LIGHT)"."""
    return (phase or "").replace("LIGHT_PLANNING", "LIGHT").replace("DEEP_REASONING", "DEEP")
