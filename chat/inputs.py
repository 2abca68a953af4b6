"""Checks on text people type, shared by every service that stores it.

PostgreSQL cannot store a NUL character in text (it raises DataError, a 500 for the user);
SQLite can, so a NUL accepted here would also make the two deployments disagree. Text with
one is refused with a message instead of being silently altered; a query string with one is
refused by the middleware below before any view (the admin's searches and filters too) sees it.
"""

from __future__ import annotations

import json
import math
import unicodedata
from collections.abc import Callable
from typing import Any

from asgiref.sync import iscoroutinefunction
from django import forms
from django.core.exceptions import ValidationError
from django.forms.fields import InvalidJSONInput
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import render
from django.urls import Resolver404, resolve
from django.utils.decorators import sync_and_async_middleware

from chat.converters import MAX_ID


def refuse_nul(text: str, *, what: str) -> str:
    """`text` unchanged, or a ValidationError naming `what` when it holds a NUL character."""
    if "\x00" in (text or ""):
        raise ValidationError(f"{what} contains a NUL character (\\x00), which cannot be stored; remove it.")
    return text


def finite_number(raw: str) -> float:
    """A float from text people typed: ValueError for NaN, infinities and numbers too large for
    a float, which Python parses but a JSON column refuses (an IntegrityError, a 500)."""
    value = float(raw)
    if not math.isfinite(value):
        raise ValueError(f"{raw!r} is not a finite number")
    return value


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def strict_json(text: str) -> Any:
    """JSON people typed, as a JSON column stores it: ValueError for NaN and Infinity (not JSON,
    though Python's parser takes them), numbers too large for a float, nesting deep enough to
    exhaust the parser, half a character (a lone surrogate escape, "\\ud800"): stored, it could
    not be written out as UTF-8, and every page and download showing it failed; and a NUL
    character, which PostgreSQL cannot store."""
    try:
        value = json.loads(text, parse_constant=_not_json, parse_float=finite_number)
    except RecursionError:
        raise ValueError("nested too deeply") from None
    if _holds_unstorable_text(value):
        raise ValueError("it holds half a character (a lone surrogate escape) or a NUL character")
    return value


def _holds_unstorable_text(value: Any) -> bool:
    """Whether a parsed JSON value has a string (a key or a value) with a lone surrogate, or a
    NUL character (PostgreSQL's jsonb refuses "\\u0000": a 500 there); walked without
    recursion, since the parser allows nesting as deep as Python's own limit."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            if "\x00" in item:
                return True
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return True
        elif isinstance(item, dict):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return False


class StrictJSONFormField(forms.JSONField):
    """The admin's JSON field, parsing as `strict_json` does: Django's raised RecursionError on
    absurd nesting (a 500, and again while drawing the refused form) and took a lone surrogate,
    which the form then failed to draw."""

    def to_python(self, value: Any) -> Any:
        if self.disabled or value in self.empty_values or isinstance(value, list | dict | int | float):
            return super().to_python(value)
        try:
            return strict_json(value)
        except json.JSONDecodeError:
            raise ValidationError(
                self.error_messages["invalid"], code="invalid", params={"value": value}
            ) from None
        except ValueError as exc:  # JSON that cannot be stored: say why
            raise ValidationError(f"Enter JSON that can be stored: {exc}.", code="invalid") from None

    def bound_data(self, data: Any, initial: Any) -> Any:
        if self.disabled or data is None:
            return super().bound_data(data, initial)
        try:
            return strict_json(data)
        except (TypeError, ValueError):
            return InvalidJSONInput(data)


# Invisible characters that reorder what follows them: in a title they make "txt.exe" read
# as "exe.txt". Titles never need them, so they are dropped.
BIDI_CONTROLS = dict.fromkeys(map(ord, "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f"))
# Control characters (C0 and C1, a bell, an escape) that no title shows: they travel into
# completions, the admin and downloads' names, so titles drop them with the direction controls.
TITLE_DROPPED = BIDI_CONTROLS | dict.fromkeys(
    c for c in [*range(0x20), *range(0x7F, 0xA0)] if chr(c) not in "\t\n\r"
)
# In a message: the embeddings and overrides, which make text read backwards to whoever it is
# shown to (a shared chat's "fo latipac eht"); the marks a right-to-left writer uses stay.
BIDI_OVERRIDES = dict.fromkeys(map(ord, "\u202a\u202b\u202c\u202d\u202e"))


def upright(value: Any) -> Any:
    """Model or tool text (a string, or JSON holding strings) without the embeddings and
    overrides: shown in a chat, "report\u202egnp.exe" read as "reportexe.png". The isolates
    (U+2066-2069) and marks stay, as in messages: they cannot reach past their own text and
    mixed-direction writing needs them."""
    if isinstance(value, str):
        return value.translate(BIDI_OVERRIDES)
    if isinstance(value, dict):
        return {upright(k): upright(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [upright(v) for v in value]
    return value


def shown_with_controls(text: str) -> str:
    """`text` with its direction controls written out ("\\u202e"): a name that must be shown
    exactly, as it is matched, without reading differently from what it is."""
    return "".join(f"\\u{ord(c):04x}" if ord(c) in BIDI_CONTROLS else c for c in str(text))


TITLE_CHARS = 200


def visible(text: str) -> bool:
    """Whether a text shows anything: not only spaces and invisible format characters (a
    right-to-left override and a zero-width space made an empty bubble and a blank title)."""
    return any(not ch.isspace() and unicodedata.category(ch) not in ("Cf", "Cc") for ch in text)


def clean_title(title: str, *, what: str = "The title", cut: bool = False) -> str:
    """A title as shown everywhere: one line, no direction overrides or control characters, at
    most 200 characters (a longer one is refused, not silently cut, unless `cut`: a title taken
    from a file's name, which nobody typed); "" when nothing in it shows."""
    cleaned = " ".join(refuse_nul(title or "", what=what).translate(TITLE_DROPPED).split())
    if not visible(cleaned):
        return ""
    if len(cleaned) > TITLE_CHARS and cut:
        return cleaned[: TITLE_CHARS - 1].rstrip() + "…"
    if len(cleaned) > TITLE_CHARS:
        raise ValidationError(f"{what} is {len(cleaned):,} characters; shorten it to {TITLE_CHARS} or fewer.")
    return cleaned


def _no_answer(request: HttpRequest) -> None:
    return None


def _unchanged(request: HttpRequest, response: HttpResponse) -> HttpResponse:
    return response


def middleware_from(
    *,
    check: Callable[[HttpRequest], HttpResponse | None] = _no_answer,
    then: Callable[[HttpRequest, HttpResponse], HttpResponse] = _unchanged,
) -> Any:
    """Middleware for sync and async stacks alike, from plain functions: `check(request)`
    answers instead of the view (or returns None), `then(request, response)` adjusts the
    answer on its way out."""

    @sync_and_async_middleware
    def factory(get_response: Any) -> Any:
        if iscoroutinefunction(get_response):

            async def middleware(request: HttpRequest) -> HttpResponse:
                return then(request, check(request) or await get_response(request))

            return middleware

        def sync_middleware(request: HttpRequest) -> HttpResponse:
            return then(request, check(request) or get_response(request))

        return sync_middleware

    return factory


def _bad_request(text: str) -> HttpResponse:
    return HttpResponseBadRequest(text, content_type="text/plain; charset=utf-8")


def _nul_in_address(request: HttpRequest) -> HttpResponse | None:
    for key, values in request.GET.lists():
        if "\x00" in key or any("\x00" in value for value in values):
            return _bad_request(
                "The address contains a NUL character (%00), which cannot be used; remove it."
            )
    return None


def _malformed_admin_selection(request: HttpRequest) -> HttpResponse | None:
    """An admin action posted with row ids that are not ids: Django's admin would filter on
    them and fail with a 500; say what is wrong instead."""
    if request.method != "POST" or not request.path_info.startswith("/admin/"):
        return None
    selected = request.POST.getlist("_selected_action")
    if not selected:
        return None
    try:
        model_admin = getattr(resolve(request.path_info).func, "model_admin", None)
    except Resolver404:
        return None
    if model_admin is None:
        return None
    pk = model_admin.model._meta.pk
    for value in selected:
        try:
            number = pk.to_python(value)
        except ValidationError:
            number = None
        if number is None or (isinstance(number, int) and not 0 <= number <= MAX_ID):
            return _bad_request("The selected rows are not valid ids; reload the list and select them again.")
    return None


def _oversized_ids_in_admin_address(request: HttpRequest) -> HttpResponse | None:
    """An admin filter (`?id__in=`, `?owner=` and the like) naming an id no column can hold:
    SQLite's driver raised OverflowError (a 500) where Django's own guard does not reach (`in`
    and foreign-key lookups). The search box (`q`) may hold any number."""
    if not request.path_info.startswith("/admin/"):
        return None
    for key, values in request.GET.lists():
        if key == "q":
            continue
        for value in values:
            for part in value.split(","):
                if part.isascii() and part.isdigit() and int(part) > MAX_ID:
                    return _bad_request(
                        f"{key}={part} is not an id that can exist; remove it from the address."
                    )
    return None


# A query string with a NUL character is a 400 that says so, for every page at once (admin
# searches and filters included), before any of it reaches a query.
refuse_nul_in_address = middleware_from(check=_nul_in_address)
refuse_malformed_admin_selection = middleware_from(check=_malformed_admin_selection)
refuse_oversized_admin_ids = middleware_from(check=_oversized_ids_in_admin_address)


def _explain_wrong_method(request: HttpRequest, response: HttpResponse) -> HttpResponse:
    """A page opened at an address that only a button posts to (a delete, a rename, a send,
    typed or followed from history): Django answers 405 with an empty body, a blank page.
    Say what the address is for instead; requests from scripts and htmx keep the bare 405."""
    if response.status_code != 405 or response.content or request.method not in ("GET", "HEAD"):
        return response
    if getattr(request, "htmx", False) or request.path_info.startswith("/admin/"):
        return response
    page = render(request, "405.html", status=405)
    page["Allow"] = response.get("Allow", "")
    return page


explain_wrong_method = middleware_from(then=_explain_wrong_method)
