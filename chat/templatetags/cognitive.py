"""Template bits of the cognitive mode that the chat page includes in one line each."""

from __future__ import annotations

from typing import Any

from django import template
from django.conf import settings

from chat.models import ChatSession, SessionMode
from reasoning.modes import MODE_NAMES

register = template.Library()

# The agent modes as people read them in the picker (the value sent stays the mode's name).
MODE_LABELS = {
    "adaptive": "Adaptive",
    "reasoning_driven": "Reasoning-driven",
    "cognitive": "Cognitive (multi-agent)",
}


@register.inclusion_tag("chat/_mode_choice.html", takes_context=True)
def mode_choice(context: template.Context, session: ChatSession | None) -> dict[str, Any]:
    """The chat's mode picker, shown only where the operator allows choosing (NEXUS_CHAT_MODE_CHOICE)."""
    allowed = bool(settings.NEXUS_CHAT_MODE_CHOICE and session is not None)
    current = settings.AGENT_MODE
    if allowed:
        current = (
            SessionMode.objects.filter(session=session).values_list("mode", flat=True).first() or current
        )
    return {
        "allowed": allowed,
        "session": session,
        "choices": [
            (name, MODE_LABELS.get(name, name.replace("_", " ").capitalize())) for name in MODE_NAMES
        ],
        "current": current,
        "default": settings.AGENT_MODE,
        "csrf_token": context.get("csrf_token"),
    }
