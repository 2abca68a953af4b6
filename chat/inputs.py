"""Checks on text people type, shared by every service that stores it.

PostgreSQL cannot store a NUL character in text (it raises DataError, a 500 for the user);
SQLite can, so a NUL accepted here would also make the two deployments disagree. Text with
one is refused with a message instead of being silently altered; a query string with one is
refused by the middleware below before any view (the admin's searches and filters too) sees it.
"""

from __future__ import annotations

from typing import Any

from asgiref.sync import iscoroutinefunction
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.utils.decorators import sync_and_async_middleware


def refuse_nul(text: str, *, what: str) -> str:
    """`text` unchanged, or a ValidationError naming `what` when it holds a NUL character."""
    if "\x00" in (text or ""):
        raise ValidationError(f"{what} contains a NUL character (\\x00), which cannot be stored; remove it.")
    return text


@sync_and_async_middleware
def refuse_nul_in_address(get_response: Any) -> Any:
    """Middleware: a query string with a NUL character is a 400 that says so, for every page
    at once (admin searches and filters included), before any of it reaches a query."""

    def refused(request: HttpRequest) -> HttpResponse | None:
        for key, values in request.GET.lists():
            if "\x00" in key or any("\x00" in value for value in values):
                return HttpResponseBadRequest(
                    "The address contains a NUL character (%00), which cannot be used; remove it.",
                    content_type="text/plain; charset=utf-8",
                )
        return None

    if iscoroutinefunction(get_response):

        async def middleware(request: HttpRequest) -> HttpResponse:
            return refused(request) or await get_response(request)

        return middleware

    def sync_middleware(request: HttpRequest) -> HttpResponse:
        return refused(request) or get_response(request)

    return sync_middleware
