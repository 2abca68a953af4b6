"""Recording what staff do with other people's conversations and with the configuration.

`record` is the one way in; call it from the view or admin action that did the thing, after
it succeeded. A failure to record never hides the action's own error, but it is logged.
"""

from __future__ import annotations

import logging
from typing import Any

from django.http import HttpRequest

from chat.models import StaffAuditEntry

log = logging.getLogger(__name__)


def client_ip(request: HttpRequest) -> str | None:
    """The address Django saw: REMOTE_ADDR, which the proxy settings already make trustworthy."""
    return request.META.get("REMOTE_ADDR") or None


def record(
    request: HttpRequest,
    action: str,
    object_type: str,
    object_id: object = "",
    summary: str = "",
    **details: Any,
) -> StaffAuditEntry | None:
    """Append one entry for what `request.user` just did."""
    user = request.user
    try:
        return StaffAuditEntry.objects.create(
            actor=user if user.is_authenticated else None,
            actor_name=user.get_username() if user.is_authenticated else "anonymous",
            action=action,
            object_type=object_type,
            object_id=str(object_id)[:64],
            summary=(summary or f"{action} {object_type} {object_id}".strip())[:500],
            details=details,
            ip_address=client_ip(request),
        )
    except Exception:
        log.exception("Could not record a staff audit entry (%s %s %s)", action, object_type, object_id)
        return None
