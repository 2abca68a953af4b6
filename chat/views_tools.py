"""What a tool server returned beside its text: images shown in the panel, binary resources
offered as downloads. Only the run's owner may fetch them; nothing is ever rendered as a
page (a sandboxing policy, no type sniffing), and an image is served only when its bytes are
still what its type says."""

from __future__ import annotations

import base64
import re

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django.views.decorators.http import require_GET

from chat.models import ToolExecution
from reasoning.tools.mcp import IMAGE_SIGNATURES, IMAGE_TYPES


@require_GET
def tool_part(request: HttpRequest, run_id: int, sequence: int, index: int) -> HttpResponse:
    execution = get_object_or_404(
        ToolExecution, run_id=run_id, event_sequence=sequence, run__session__owner=request.user
    )
    parts = execution.parts or []
    if index >= len(parts) or parts[index].get("type") not in ("image", "blob"):
        raise Http404("no such part")
    part = parts[index]
    data = base64.b64decode(part.get("data") or "")
    mime = str(part.get("mime_type") or "")
    if part["type"] == "image":
        if mime not in IMAGE_TYPES or not data.startswith(IMAGE_SIGNATURES[mime]):
            raise Http404("not an image that may be shown")
        response = HttpResponse(data, content_type=mime)
        response["Content-Disposition"] = "inline"
    else:
        response = HttpResponse(data, content_type="application/octet-stream")
        name = (
            re.sub(r"[^\w.\-]+", "_", str(part.get("uri") or "download").rsplit("/", 1)[-1])[:80]
            or "download"
        )
        response["Content-Disposition"] = f'attachment; filename="{name}"'
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = "default-src 'none'; sandbox"
    response["Cache-Control"] = "private, max-age=3600"
    return response
