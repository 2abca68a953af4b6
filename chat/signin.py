"""Sign-in throttling (django-axes): which address counts, what a paused sign-in shows, and
what a successful sign-in forgets.

Axes can reset the failures "of the user" on success, but it matches its lockout parameters
one by one, so one success would also wipe every failure from the same address, for any user
name: an attacker with an account of their own could guess someone else's password without
end, signing in as themselves between guesses. Here a success forgets only that user name's
failures from that address (the person's own typos).

Axes pauses a user name at one address after NEXUS_LOGIN_FAILURE_LIMIT wrong passwords. Paused
everywhere at that limit, a name could be kept out by anyone: five wrong guesses at "admin"
locked the admin out. A name gets a limit across every address, NEXUS_LOGIN_NAME_FAILURE_LIMIT,
each address counted up to the first limit, so that only guesses from many addresses reach it.
An address gets a limit of its own, NEXUS_LOGIN_ADDRESS_FAILURE_LIMIT, ten times larger by
default: a whole office signs in from one address (behind a proxy or a NAT; embedded, everyone
is 127.0.0.1), and with one limit for both, five wrong guesses at made-up names locked every
colleague out.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from axes.backends import AxesStandaloneBackend
from axes.exceptions import AxesBackendPermissionDenied
from axes.models import AccessAttempt
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import PBKDF2PasswordHasher
from django.contrib.auth.middleware import LoginRequiredMiddleware
from django.contrib.auth.signals import user_logged_in, user_logged_out
from django.db import connection
from django.db.models import F, Sum, Value
from django.db.models.functions import Least
from django.db.models.signals import post_save
from django.dispatch import receiver
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.utils.cache import patch_cache_control

from chat.inputs import middleware_from
from chat.sink import account_changed


def client_address(request: HttpRequest) -> str:
    """The address sign-in throttling counts. Behind the proxy (NEXUS_BEHIND_PROXY) it is the
    last X-Forwarded-For entry, the one the proxy itself added; earlier entries come from the
    client and could be anything. Without a proxy the header is ignored."""
    if settings.NEXUS_BEHIND_PROXY:
        forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")[-1].strip()
        if forwarded:
            return forwarded
    return request.META.get("REMOTE_ADDR", "")


def _failures(**where: str) -> int:
    """Wrong passwords within the lockout time matching `where`, each (name, address) pair's
    counted up to the first limit: one name failing on and on at one address (a phone retrying
    an old password; someone hammering their own paused account) is that pair's lockout, not
    the whole office's nor the name's everywhere."""
    since = timezone.now() - settings.AXES_COOLOFF_TIME
    attempts = AccessAttempt.objects.filter(attempt_time__gte=since, **where)
    capped = Least(F("failures_since_start"), Value(settings.AXES_FAILURE_LIMIT))
    return attempts.aggregate(failures=Sum(capped))["failures"] or 0


def address_failures(request: HttpRequest) -> int:
    """Wrong passwords from the request's address, for any user name."""
    return _failures(ip_address=client_address(request))


def name_failures(username: str) -> int:
    """Wrong passwords for one user name, from every address."""
    return _failures(username=username)


class SignInThrottle(AxesStandaloneBackend):
    """django-axes' pause per user name (AXES_LOCKOUT_PARAMETERS), and one per address at its
    own, larger limit (see the module's docstring)."""

    def authenticate(
        self, request: HttpRequest, username: str | None = None, password: str | None = None, **kwargs: Any
    ) -> None:
        super().authenticate(request, username, password, **kwargs)
        if not settings.AXES_ENABLED:
            return
        if address_failures(request) >= settings.NEXUS_LOGIN_ADDRESS_FAILURE_LIMIT:
            request.axes_locked_out = True  # the axes middleware answers with login_locked_out
            raise AxesBackendPermissionDenied("too many failed sign-ins from this address")
        if username and name_failures(username) >= settings.NEXUS_LOGIN_NAME_FAILURE_LIMIT:
            request.axes_locked_out = True
            raise AxesBackendPermissionDenied("too many failed sign-ins for this user name")


# Passwords hashed at once in this process: one per core uses the machine, more only share it.
_HASHING = threading.BoundedSemaphore(os.cpu_count() or 1)


def pooled() -> bool:
    """Whether database connections come from a pool (PostgreSQL), where closing one returns it."""
    return bool(connection.settings_dict.get("OPTIONS", {}).get("pool"))


class PooledPBKDF2PasswordHasher(PBKDF2PasswordHasher):
    """Django's default hasher (the same algorithm and stored hashes), which hashes without
    holding a database connection, at most one hash per core at a time.

    Found by a team review: a sign-in held its pooled connection through about a second of
    hashing, so 22 people signing in at once took all 20 of a daphne's, and every page it
    served, for people signed in long before, waited 10 s and answered 503 ("cannot reach its
    database"). The connection goes back to the pool (PostgreSQL; outside a transaction) and
    the next query takes one again."""

    def encode(self, password: str, salt: str, iterations: int | None = None) -> str:
        if pooled() and not connection.in_atomic_block:
            connection.close()
        with _HASHING:
            return super().encode(password, salt, iterations)


def login_locked_out(
    request: HttpRequest, original_response: HttpResponse | None = None, credentials: dict | None = None
) -> HttpResponse:
    """What django-axes shows when sign-in is paused after too many wrong passwords."""
    minutes = int(settings.AXES_COOLOFF_TIME.total_seconds() // 60)
    return render(request, "registration/locked_out.html", {"minutes": minutes}, status=429)


@receiver(user_logged_in, dispatch_uid="nexus-forget-own-typos")
def forget_own_typos(sender: Any, request: HttpRequest | None, user: Any, **kwargs: Any) -> None:
    if request is not None:
        AccessAttempt.objects.filter(
            username=user.get_username(), ip_address=client_address(request)
        ).delete()


@receiver(user_logged_out, dispatch_uid="nexus-close-signed-out-pages")
def close_signed_out_pages(sender: Any, request: HttpRequest | None, user: Any, **kwargs: Any) -> None:
    """A signed-out browser's open chat pages stop receiving the person's answers."""
    if user is not None and request is not None:
        account_changed(user_id=user.pk, session_key=request.session.session_key)


@receiver(post_save, sender=get_user_model(), dispatch_uid="nexus-recheck-open-pages")
def recheck_open_pages(sender: Any, instance: Any, created: bool, **kwargs: Any) -> None:
    """A new password or a deactivated account ends the sessions made before it: their open
    pages check and close (a sign-in's own save only costs each page one check)."""
    if not created:
        account_changed(user_id=instance.pk)


# Signing in again gives the browser a new CSRF token, which this page does not have: what it
# sends after that is refused as out of date, so the advice is to reload it (a reviewer followed
# "sign in again, then send again" and was refused twice).
SIGNED_OUT = "You are signed out: sign in again (in another tab), then reload this page and try again."
# A message sent (a question, an edit): its text is still in the box, and kept across the reload.
SIGNED_OUT_TYPED = (
    "You are signed out: sign in again (in another tab), then reload this page and send again. "
    "What you typed is kept."
)


class SignedOutAware(LoginRequiredMiddleware):
    """Sign-in required everywhere, as Django's middleware does; but a page's own request
    (htmx) from a browser that signed out in another tab gets a 401 in words, which the page
    shows beside what the person typed, instead of the login page swapped into the chat."""

    def handle_no_permission(self, request: HttpRequest, view_func: Any) -> HttpResponse:
        if request.headers.get("HX-Request") == "true":
            typed = request.method == "POST" and request.POST.get("content", "").strip()
            text = SIGNED_OUT_TYPED if typed else SIGNED_OUT
            return HttpResponse(text, status=401, content_type="text/plain; charset=utf-8")
        return super().handle_no_permission(request, view_func)


def _kept_private(request: HttpRequest, response: HttpResponse) -> HttpResponse:
    if settings.SESSION_COOKIE_NAME in request.COOKIES and not response.has_header("Cache-Control"):
        patch_cache_control(response, private=True, no_store=True)
    return response


# A signed-in browser's pages are never kept by it or by a proxy: Back after deleting a chat, or
# after signing out, asks again and hears that it is gone, instead of showing a copy that looks
# alive (and whose socket is refused). Read off the session cookie, so no response waits for
# the person to be looked up.
private_pages = middleware_from(then=_kept_private)
