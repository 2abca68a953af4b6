"""Daphne's access log without what stands for access or for a person's words.

Daphne writes a line per request with its whole path and query string, straight to its stream
(not through `logging`, so the secrets filter never saw it). A share link's token in the path
opens the shared chat for anyone with an account, so whoever could read the server's output
could read every shared chat; a query string holds what people searched for. Those parts are
masked (chat.logging.mask_request); the rest of the line stays as daphne wrote it.
"""

from __future__ import annotations

from typing import Any

from daphne.access import AccessLogGenerator

from chat.logging import mask_request

_write_entry = AccessLogGenerator.write_entry


def _masked_entry(
    self: AccessLogGenerator, host: Any, date: Any, request: str, *args: Any, **kwargs: Any
) -> None:
    _write_entry(self, host, date, mask_request(request), *args, **kwargs)


def install() -> None:
    """Mask the lines of daphne's access log, whichever stream the command line gave it (the
    logger is made before the application is loaded, so its class is changed, not replaced)."""
    AccessLogGenerator.write_entry = _masked_entry  # type: ignore[method-assign]
