"""The share dialog's data for the chat page (so the page itself needs one include line)."""

from __future__ import annotations

from typing import Any

from django import template

from teamops.sharing import links_for

register = template.Library()


@register.simple_tag(takes_context=True)
def share_links(context: dict[str, Any], session: Any) -> list[Any]:
    """The chat's links, for its owner only (everyone else gets none)."""
    request = context.get("request")
    if session is None or request is None or request.user.pk != session.owner_id:
        return []
    return links_for(session)
