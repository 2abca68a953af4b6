"""Error pages in plain words. The 500 handler: a database that is away (restarting,
unreachable, or every pooled connection taken) is said with a 503, since nothing was saved and
the same request shortly after will work; anything else is the usual 500 page. The 400
handler: a form too large to read (text pasted past DATA_UPLOAD_MAX_MEMORY_SIZE) says so,
where Django showed a bare "Bad Request (400)". The CSRF failure view: a form from a page loaded
before its browser signed in again elsewhere (which renews the token) is refused in words that
say so, and a sign-in form whose browser is signed in by now goes where it was going, where
Django showed "CSRF verification failed. Request aborted." """

from __future__ import annotations

import logging
import sys

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import resolve_url
from django.template import loader
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.defaults import bad_request as django_bad_request
from django.views.defaults import server_error as django_server_error

DATABASE_AWAY = (
    "Nexus cannot reach its database right now (it is away or too busy), so nothing was saved. "
    "Try again in a moment; "
    "if it keeps happening, tell your admin."
)
RETRY_AFTER_SECONDS = 10
STALE_FORM = (
    "This page was out of date, so nothing was sent: you signed in or out in another tab or "
    "window since it was loaded. Reload the page and try again."
)
FOREIGN_FORM = (
    "That was refused: it did not come from a Nexus page at this address. Open Nexus at its own "
    "address and try again; if you did, tell your admin (the server's log says why)."
)
NO_COOKIE = (
    "That was refused because this browser sent no Nexus cookie: allow cookies for this site "
    "(Nexus needs them to keep you signed in), then reload the page and try again."
)
# Django's reasons for a request from another page than the site's own (the rest: a token or
# cookie that is missing or no longer matches, which a page from before a sign-in sends).
FOREIGN_REASONS = ("Origin checking failed", "Referer checking failed")
# What the database driver raises when the server restarts or drops the connection.
DATABASE_LOST = (OperationalError, InterfaceError)


def _database_away(exc: BaseException | None) -> bool:
    from psycopg_pool import PoolTimeout

    while exc is not None:
        if isinstance(exc, (*DATABASE_LOST, PoolTimeout)):
            return True
        exc = exc.__cause__
    return False


class DatabaseAwayLogged(logging.Filter):
    """A request answered 503 because the database was away (a restart, a burst) is logged as
    one WARNING line, not an ERROR with a traceback: an expected outage made daphne's log look
    like a crash, once per request that came in meanwhile."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.ERROR and record.exc_info and _database_away(record.exc_info[1]):
            record.msg = f"{record.getMessage()} (the database is away: {record.exc_info[1]})"
            record.args = None
            record.exc_info = record.exc_text = None
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True


def server_error(request: HttpRequest) -> HttpResponse:
    """handler500. Django calls it while handling the exception, so `sys.exc_info()` is it."""
    if not _database_away(sys.exc_info()[1]):
        return django_server_error(request)
    return _plain_page(request, DATABASE_AWAY, 503, **{"Retry-After": str(RETRY_AFTER_SECONDS)})


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    """handler400."""
    if not isinstance(exception, RequestDataTooBig):
        return django_bad_request(request, exception)
    limit = (settings.DATA_UPLOAD_MAX_MEMORY_SIZE or 0) / 1_000_000
    message = (
        f"That was too large to send: a form's text may be at most about {limit:.1f} MB, and "
        "nothing was saved. Put a long document in a .md or .txt file and upload the file."
    )
    if not request.headers.get("HX-Request"):  # htmx left the text where it was
        message += " Your browser's Back button returns to what you typed."
    return _plain_page(request, message, 413)


def _plain_page(request: HttpRequest, message: str, status: int, **headers: str) -> HttpResponse:
    if request.headers.get("HX-Request"):  # the page shows a short plain-text body as it is
        plain = "text/plain; charset=utf-8"
        return HttpResponse(message, status=status, content_type=plain, headers=headers)
    # Drawn without the request: its context processors would ask the database again.
    page = loader.get_template("error.html").render({"message": message})
    return HttpResponse(page, status=status, headers=headers)


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """CSRF_FAILURE_VIEW. A sign-in form whose browser is signed in by now (another tab signed
    in first) goes where it was going, as a signed-in visit to the sign-in page does: it is a
    redirect within this site and signs nobody in."""
    landing = {reverse("login"): settings.LOGIN_REDIRECT_URL, reverse("admin:login"): "admin:index"}
    user = getattr(request, "user", None)  # None if a CSRF check ever runs before sign-in's
    if request.method == "POST" and request.path in landing and user is not None and user.is_authenticated:
        target = request.POST.get("next") or request.GET.get("next") or ""
        if not url_has_allowed_host_and_scheme(
            target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
        ):
            target = resolve_url(landing[request.path])
        return HttpResponseRedirect(target)
    if reason.startswith(FOREIGN_REASONS):
        return _plain_page(request, FOREIGN_FORM, 403)
    return _plain_page(request, STALE_FORM if request.COOKIES else NO_COOKIE, 403)
