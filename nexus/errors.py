"""The 500 handler: a database that is away (restarting, unreachable, or every pooled
connection taken) is said in plain words with a 503, since nothing was saved and the same
request shortly after will work; anything else is the usual 500 page."""

from __future__ import annotations

import logging
import sys

from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse
from django.template import loader
from django.views.defaults import server_error as django_server_error

logger = logging.getLogger(__name__)

DATABASE_AWAY = (
    "Nexus cannot reach its database right now, so nothing was saved. Try again in a moment; "
    "if it keeps happening, tell your admin."
)
RETRY_AFTER_SECONDS = 10


def _database_away(exc: BaseException | None) -> bool:
    from psycopg_pool import PoolTimeout

    while exc is not None:
        if isinstance(exc, OperationalError | InterfaceError | PoolTimeout):
            return True
        exc = exc.__cause__
    return False


def server_error(request: HttpRequest) -> HttpResponse:
    """handler500. Django calls it while handling the exception, so `sys.exc_info()` is it."""
    if not _database_away(sys.exc_info()[1]):
        return django_server_error(request)
    headers = {"Retry-After": str(RETRY_AFTER_SECONDS)}
    if request.headers.get("HX-Request"):  # the page shows a short plain-text body as it is
        return HttpResponse(
            DATABASE_AWAY, status=503, content_type="text/plain; charset=utf-8", headers=headers
        )
    # Drawn without the request: its context processors would ask the database again.
    page = loader.get_template("503.html").render({"message": DATABASE_AWAY})
    return HttpResponse(page, status=503, headers=headers)
