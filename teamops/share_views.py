"""Sharing a chat: the owner creates and revokes links (from the chat's share dialog);
any signed-in teammate with the link reads the chat, never indexed, never editable."""

from __future__ import annotations

from django.contrib import messages as flash
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from chat import services
from teamops import sharing
from teamops.models import SharedLink


@require_POST
def link_create(request: HttpRequest, session_id: int) -> HttpResponse:
    session = services.session_get_for_user(request.user, session_id)
    link = sharing.link_create(
        session=session, user=request.user, include_trace=request.POST.get("include_trace") == "on"
    )
    url = request.build_absolute_uri(reverse("teamops:shared", args=[link.token]))
    flash.success(request, f"Anyone signed in with this link can read this chat: {url}")
    return redirect("chat:session", session_id=session.pk)


@require_POST
def link_revoke(request: HttpRequest, session_id: int, link_id: int) -> HttpResponse:
    session = services.session_get_for_user(request.user, session_id)
    link = get_object_or_404(SharedLink, pk=link_id, session=session)
    sharing.link_revoke(link=link)
    flash.success(request, "The link is revoked: it no longer opens this chat.")
    return redirect("chat:session", session_id=session.pk)


@require_GET
def shared(request: HttpRequest, token: str) -> HttpResponse:
    link = sharing.link_open(token=token, user=request.user)
    response = render(
        request,
        "teamops/shared.html",
        {"link": link, "session": link.session, "turns": sharing.shared_turns(link, request.user)},
    )
    # Never indexed, never followed, never cached by a shared proxy, and the token never
    # leaks through a Referer header to a page the answer links to.
    response["X-Robots-Tag"] = "noindex, nofollow, noarchive"
    response["Cache-Control"] = "private, no-store"
    response["Referrer-Policy"] = "no-referrer"
    return response
