from __future__ import annotations

import re
import secrets
from typing import Any

from django import template

from chat.inputs import upright
from chat.models import ReasoningRun
from chat.presenters import MODE_ICONS, STRATEGY_SHORT, plain_text, run_mode, without_document_addresses
from reasoning.tools.labels import humanize_tool_names, tool_label

register = template.Library()


@register.simple_tag
def page_key() -> str:
    """A fresh name for what a form on this page asks for (a new chat): the same when the form
    is posted twice, a new one when the page is drawn again."""
    return secrets.token_hex(16)


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


_ENUMS = {"DEEP_REASONING": "Deep", "LIGHT_PLANNING": "Light", "DIRECT": "Direct"}
_ENUM = re.compile(r"\b(" + "|".join(_ENUMS) + r")\b")
_STEP = re.compile(r"^step[_-]?(\d+)$", re.IGNORECASE)


@register.filter
def phase_label(phase: str) -> str:
    """A trace phase without the engine's enums: "Execution (LIGHT_PLANNING)" → "Execution (Light)"."""
    return _ENUM.sub(lambda m: _ENUMS[m.group(1)], phase or "")


@register.filter
def plain(text: Any) -> str:
    """Free text for people (a model's reasoning, a reason, a lesson): tool names as labels."""
    return plain_text(upright(str(text if text is not None else "")))


# How the engine records an exception (reasoning.calls.describe_error): "TypeName: message".
_UNREADABLE = re.compile(r"^StructuredOutputError: [^:]*: unreadable \w+ reply\b")
_TYPED = re.compile(r"^(?P<type>[A-Z]\w*(?:Error|Exception|Failed|Timeout|Exceeded))\b:?\s*")
# Errors in Nexus's own code: their message means something only to its developers.
_INTERNAL = {"KeyError", "TypeError", "AttributeError", "IndexError", "AssertionError", "NameError"}
_CONNECTION = re.compile(r"Closed|Broken|EndOfStream|Connect|Disconnect|Reset")
INTERNAL_ERROR = "An unexpected error inside Nexus (staff can see the details in the admin)."


@register.filter
def error_words(text: Any) -> str:
    """An error the engine recorded, for people: the panel showed "StructuredOutputError:
    analysis: unreadable record_complexity_analysis reply: ..." as it was stored (the admin
    keeps it so). A model's unreadable reply, a timeout, a lost connection and a bug of
    Nexus's own get a sentence; any other error its message, without its type's name."""
    raw = str(text if text is not None else "").strip()
    if _UNREADABLE.match(raw):
        return "The model's reply was not in the form asked for, so it could not be used."
    typed = _TYPED.match(raw)
    if typed is None:
        return plain(raw)
    kind, rest = typed["type"], raw[typed.end() :]
    if kind == "CancelledError" or kind.endswith(("Timeout", "TimeoutError")):
        return "It took longer than allowed."
    if kind in _INTERNAL:
        return INTERNAL_ERROR
    if rest:
        return plain(rest)
    if _CONNECTION.search(kind):
        return "The connection was lost."
    return "It failed without saying why (staff can see the details in the admin)."


@register.filter
def as_sent(text: Any) -> str:
    """A tool server's own text (a result, a progress message): shown as it sent it."""
    return without_document_addresses(upright(str(text if text is not None else "")))


@register.filter
def tool_name(tool: Any, server: Any = "") -> str:
    """A tool and its server as people read them: ("calculator", "nexus") → "Calculator (Nexus)"."""
    return tool_label(upright(str(tool or "")), upright(str(server or "")))


@register.filter(name="upright")
def upright_filter(text: Any) -> str:
    """A tool server's words (a question it asks) without direction overrides (see upright)."""
    return upright(str(text if text is not None else ""))


@register.filter
def words(identifier: Any) -> str:
    """An engine identifier as words: "meta_agent" → "meta agent", "light_planning" → "Light"."""
    text = str(identifier if identifier is not None else "")
    return STRATEGY_SHORT.get(text) or humanize_tool_names(text).replace("_", " ")


@register.filter
def step_label(step_id: Any) -> str:
    """A plan step as people count them: "step_2" → "Step 2" (other ids as words)."""
    text = str(step_id if step_id is not None else "")
    match = _STEP.match(text)
    return f"Step {match.group(1)}" if match else text.replace("_", " ")
