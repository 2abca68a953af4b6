"""The chat pages. Views read top to bottom: access helper, early returns, one service call.

Every view needs a signed-in user (LoginRequiredMiddleware) and reaches sessions only
through `session_get_for_user`, so another user's session is a 404.
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.contrib import messages as flash
from django.core.exceptions import ValidationError
from django.db import DatabaseError
from django.http import (
    HttpRequest,
    HttpResponse,
    HttpResponseBadRequest,
    HttpResponseRedirect,
    JsonResponse,
)
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseClientRedirect, reswap, retarget

from chat import documents, limits, mentions, services
from chat.approvals import approvals_decline_for_stopped
from chat.dispatch import DispatchError, dispatch_run
from chat.engine import stop_parked, stop_unattended
from chat.inputs import clean_title
from chat.models import ChatSession, Document, Preference, ReasoningRun
from chat.presenters import chat_list_cursor, preferences_of, session_links, turn_context
from teamops import budgets

logger = logging.getLogger(__name__)

PAGE = "chat/session.html"
MAX_COMPLETION_QUERY = 200
DOCUMENT_SUFFIXES = (".md", ".markdown", ".txt", ".text")


def _preference(request: HttpRequest) -> Preference:
    preference, _ = Preference.objects.get_or_create(user=request.user)
    return preference


def _redirect(request: HttpRequest, url: str) -> HttpResponse:
    return HttpResponseClientRedirect(url) if request.htmx else HttpResponseRedirect(url)


def _error(
    request: HttpRequest, message: str, session_id: int, status: int = 200, *, target: str = "#composer-error"
) -> HttpResponse:
    """An inline error (htmx) in `target`, under the composer unless the form has a place of its
    own, replacing the last one there whatever the form's own swap; or a flash message on a full
    page load."""
    if request.htmx:
        response = render(request, f"{PAGE}#composer-error", {"error": message}, status=status)
        return reswap(retarget(response, target), "innerHTML")
    flash.error(request, message)
    return redirect("chat:session", session_id=session_id)


@require_GET
def home(request: HttpRequest) -> HttpResponse:
    latest = services.session_list_for_user(request.user).values_list("pk", flat=True).first()
    if latest is not None:
        return redirect("chat:session", session_id=latest)
    return _first_page(request)


def _first_page(request: HttpRequest, status: int = 200, **extra: Any) -> HttpResponse:
    """The page of someone with no chat yet: the box that starts one (with `extra`: the text it
    kept and why it was not sent)."""
    context = {"sessions": [], "session": None, "turns": [], "active_run": None, **extra}
    context["trace_open"] = preferences_of(request)["trace_open"]
    return render(request, PAGE, context, status=status)


@require_GET
def session_detail(request: HttpRequest, session_id: int) -> HttpResponse:
    session = services.session_get_for_user(request.user, session_id)
    trace_open = preferences_of(request)["trace_open"]
    thread = services.session_thread(session)
    feedback = services.feedback_by_run(request.user, [t["run"].pk for t in thread if t["answer"]])
    turns = [
        turn_context(
            {**turn, "feedback": feedback.get(turn["run"].pk) if turn["answer"] else None},
            trace_open=trace_open,
            user_id=request.user.pk,
        )
        for turn in thread
    ]
    active = next((t for t in reversed(turns) if t["run"] and t["run"].is_active), None)
    # The status line and tab title say the active run's mode, as its turn worked it out; with
    # none, how the latest shown run ended, as the live page said it (not "Ready" on a reload).
    latest = active or next((t for t in reversed(turns) if t["run"] and t.get("current", True)), None)
    return render(
        request,
        PAGE,
        {
            "sessions": session_links(request.user),
            "session": session,
            "turns": turns,
            "trace_open": trace_open,
            "active_run": active["run"] if active else None,
            "mode": latest["mode"] if latest else "",
        },
    )


@require_GET
def session_list(request: HttpRequest) -> HttpResponse:
    """The next page of the person's chat list, asked for by its "Show older chats" button."""
    after = chat_list_cursor(request.GET.get("after", ""))
    if after is None:
        return HttpResponseBadRequest("That is not a place in your chat list.")
    return render(request, f"{PAGE}#session-rows", {"sessions": session_links(request.user, after)})


@require_POST
def session_new(request: HttpRequest) -> HttpResponse:
    """A new chat; from a chat still empty, that chat (each click on "+ New chat" added
    another empty "New chat" to the list). With a message (the first page's box), the chat
    starts with it, as if it were sent from the chat's own box."""
    content = request.POST.get("content", "")
    key = services.message_key(request.POST.get("key", ""))
    if content.strip():
        posted = services.run_posted_by(request.user, key, content)
        if posted is not None:  # sent again: its first reply was lost, and it was stored
            return _posted_again(request, posted)
        refused = _message_refused(request, content)
        if refused is not None:  # before the chat exists: the first page again, the text kept
            text, status = refused
            # The person's chats in the list (another tab may have started one meanwhile),
            # and the page's own address again (see chat.js).
            return _first_page(
                request,
                status,
                error=text,
                draft=content,
                start_key=key,
                sessions=session_links(request.user),
                address=reverse("chat:home"),
            )
    if content.strip():
        # A first question never makes a second blank chat.
        session = services.session_blank(request.user) or services.session_create(owner=request.user)
        return _message_post(request, session, content, key)
    session = services.session_new(request.user, came_from=request.POST.get("from", ""), key=key)
    return _redirect(request, reverse("chat:session", args=[session.pk]))


@require_POST
def session_rename(request: HttpRequest, session_id: int) -> HttpResponse:
    session = services.session_get_for_user(request.user, session_id)
    try:
        services.session_rename(session=session, title=request.POST.get("title", ""))
    except ValidationError as exc:
        return _error(request, exc.messages[0], session.pk, target="#rename-error")
    if request.htmx:
        # The header, and out of band the chat list and the tab title: renamed everywhere.
        latest = session.runs.order_by("-created_at", "-id").first()
        return render(
            request,
            f"{PAGE}#renamed",
            {
                "session": session,
                "sessions": session_links(request.user),
                "active_run": latest,
            },
        )
    return redirect("chat:session", session_id=session.pk)


@require_POST
def session_delete(request: HttpRequest, session_id: int) -> HttpResponse:
    session = services.session_get_for_user(request.user, session_id)
    try:
        services.session_delete(session=session)
    except ValidationError as exc:
        return _error(request, exc.messages[0], session.pk)
    return _redirect(request, reverse("chat:home"))


def dispatch_stored_run(run: ReasoningRun) -> bool:
    """Hand a run just stored to its executor; False if the queue is unreachable. The run was
    stored as dispatched (message_post), so a dispatch that works costs no second write: the
    UPDATE that recorded it after the fact waited on the row the worker was claiming. One that
    fails is recorded (on `run` too, so its turn offers Retry), and the sweeper hands it on as
    soon as the queue is back."""
    try:
        dispatch_run(run.pk)
    except DispatchError:
        services.runs_mark_dispatched([run.pk], dispatched=False)
        run.dispatched_at = None
        return False
    return True


def _rate_limited(request: HttpRequest, what: str = "messages") -> bool:
    """Whether the user did `what` (messages, uploads) more than the limit allows this minute."""
    return limits.over_limit(request.user.pk, what, settings.NEXUS_RATE_LIMIT_PER_MINUTE)


def _message_refused(request: HttpRequest, content: str | None) -> tuple[str, int] | None:
    """Why a message may not be sent now (and the status to say it with), or None. Counted
    against the rate limit last: a message refused for anything else sent nothing. `content`
    None: the question as it was asked (a regenerate), valid already."""
    if content is not None:
        try:
            services.message_validate(content)
        except ValidationError as exc:
            return exc.messages[0], 400
    refusal = budgets.refusal_for(request.user.pk)
    if refusal is not None:
        return f"{refusal} Your message was not sent.", 400
    if _rate_limited(request):
        return "You are sending messages too quickly; wait a minute and try again.", 429
    return None


@require_POST
def message_create(request: HttpRequest, session_id: int) -> HttpResponse:
    session = services.session_get_for_user(request.user, session_id)
    content = request.POST.get("content", "")
    key = services.message_key(request.POST.get("key", ""))
    posted = services.run_posted_with(session, key)
    if posted is not None:
        if services.same_question(posted, content):
            return _posted_again(request, posted)
        key = ""  # the key named another question: this one is new
    refused = _message_refused(request, content)
    if refused is not None:
        text, status = refused
        return _error(request, text, session.pk, status=429 if status == 429 else 200)
    return _message_post(request, session, content, key)


def _posted_again(request: HttpRequest, run: ReasoningRun) -> HttpResponse:
    """A question sent again under the key it was stored with: its turn as it stands now,
    instead of asking it twice (nothing is counted against the person's rate limit)."""
    if not request.htmx:
        return redirect("chat:session", session_id=run.session_id)
    return _turn_response(request, run, status=True)


def _message_post(request: HttpRequest, session: ChatSession, content: str, key: str) -> HttpResponse:
    """Store and dispatch a message that may be sent, under the page's `key` for it; the turn
    it starts (or, on a full page load, the chat)."""
    old_title = session.title
    try:
        prepared = services.message_prepare(user=request.user, content=content)
        run = services.message_post(
            session=session,
            content=content,
            question=prepared.question,
            attachments=prepared.attachments,
            key=key,
        )
    except ValidationError as exc:
        return _error(request, exc.messages[0], session.pk)
    except services.RunActive as exc:
        limits.refund(request.user.pk, "messages")  # nothing was sent
        posted = services.run_posted_with(session, key)
        if posted is not None:  # the same question, sent twice at once (its first reply lost)
            return _posted_again(request, posted)
        return _error(
            request, f"{exc} Your new message was not sent; send it when the answer is in.", session.pk, 409
        )
    # Said apart from the notes on what was sent: it holds only until the run starts, and the
    # page takes it away then (it stayed under the answer once the queue was back).
    queue_notice = ""
    if not dispatch_stored_run(run):
        queue_notice = (
            "Your message is saved, but the job queue is unreachable right now; Nexus will "
            "answer it as soon as the queue is back."
        )
    notice = " ".join(prepared.notes)
    if not request.htmx:
        for said in (queue_notice, notice):
            if said:
                flash.warning(request, said)
        return redirect("chat:session", session_id=session.pk)
    # A new answer's panel starts collapsed (the status line and the pulse show the work), so
    # an expanded trace never pushes the answer off screen; the remembered state applies on load.
    # The turn shows the run as it was stored: queued, no events yet (the page's socket asks
    # for any that come after, as for every turn it adds).
    turn = turn_context(
        {"message": run.user_message, "run": run, "answer": None, "events": []},
        trace_open=False,
        user_id=request.user.pk,
    )
    retitled = session.title != old_title  # message_post updated `session` to what it stored
    try:
        sessions = session_links(request.user) if retitled else []
    except DatabaseError as exc:  # stored already: the chat list is drawn again on the next page
        logger.warning("could not draw the chat list after a question: %s", exc)
        sessions, retitled = [], False
    context = {
        "turn": turn,
        "notice": notice,
        "queue_notice": queue_notice,
        "session": session,
        "retitled": retitled,
        "sessions": sessions,
        "status_run": run,  # the status line says Queued with the turn, not "Ready" until an event
    }
    return render(request, f"{PAGE}#turn", context)


def _run_for_user(request: HttpRequest, session_id: int, run_id: int) -> ReasoningRun:
    """One of the user's runs (404 for anyone else's)."""
    session = services.session_get_for_user(request.user, session_id)
    return get_object_or_404(
        ReasoningRun.objects.select_related("session", "user_message"), pk=run_id, session=session
    )


def _turn_response(
    request: HttpRequest,
    run: ReasoningRun,
    part: str = "turn",
    *,
    swap_oob: bool = False,
    cleared: str = "",
    status: bool = False,
) -> HttpResponse:
    turn = turn_context(services.turn_of(run), trace_open=False, user_id=request.user.pk)
    context = {"turn": turn, "session": run.session, "swap_oob": swap_oob, "cleared": cleared}
    if status:
        context["status_run"] = run
    return render(request, f"{PAGE}#{part}", context)


@require_POST
def run_stop(request: HttpRequest, session_id: int, run_id: int) -> HttpResponse:
    """Stop a run that is still working; what it had streamed stays on the page."""
    run = _run_for_user(request, session_id, run_id)
    stopped_from = services.run_stop(run)
    run.refresh_from_db()
    if stopped_from == ReasoningRun.Status.AWAITING:
        stop_parked(run)  # no worker holds it to notice the stop
    elif stopped_from == ReasoningRun.Status.QUEUED:
        stop_unattended(run)  # nor a queued one (a worker taking its job later skips it)
    elif stopped_from == ReasoningRun.Status.RUNNING:
        approvals_decline_for_stopped(run.pk)  # its open cards close in every tab
        if services.run_orphaned(run):
            stop_unattended(run)  # its worker died: none is left to tell its pages
    if not request.htmx:
        return redirect("chat:session", session_id=run.session_id)
    return _turn_response(request, run, part="answer")


@require_POST
def run_resend(request: HttpRequest, session_id: int, run_id: int) -> HttpResponse:
    """Regenerate the last answer (no `content`), or edit the last question and ask it again."""
    run = _run_for_user(request, session_id, run_id)
    content = request.POST.get("content")
    # An edit's refusal is said under its Edit box, where the person typed; a regenerate's
    # under the message box.
    target = "#composer-error" if content is None else f"#edit-error-{run.pk}"
    refused = _message_refused(request, content)  # an empty edit is not counted
    if refused is not None:
        text, status = refused
        return _error(request, text, run.session_id, status=429 if status == 429 else 200, target=target)
    try:
        if content is None:
            new_run = services.message_resend(run=run)
        else:
            prepared = services.message_prepare(user=request.user, content=content)
            new_run = services.message_resend(
                run=run, content=content, question=prepared.question, attachments=prepared.attachments
            )
    except ValidationError as exc:
        return _error(request, exc.messages[0], run.session_id, target=target)
    except services.RunActive as exc:
        limits.refund(request.user.pk, "messages")  # nothing was sent
        return _error(
            request, f"{exc} Stop it first, or wait for the answer.", run.session_id, 409, target=target
        )
    # If the queue is down the run stays queued and the sweeper hands it on later (the page says so).
    dispatch_stored_run(new_run)
    if not request.htmx:
        return redirect("chat:session", session_id=run.session_id)
    return _turn_response(request, new_run, status=True)


@require_POST
def run_feedback(request: HttpRequest, session_id: int, run_id: int) -> HttpResponse:
    """Thumbs up or down on an answer, with an optional comment; one verdict per person."""
    run = _run_for_user(request, session_id, run_id)
    try:
        rating = int(request.POST.get("rating", ""))
    except ValueError:
        rating = 0
    try:
        feedback = services.feedback_set(
            run=run, user=request.user, rating=rating, comment=request.POST.get("comment")
        )
    except ValidationError as exc:
        return _error(request, exc.messages[0], run.session_id, 400)
    if not request.htmx:
        return redirect("chat:session", session_id=run.session_id)
    # Out of band, by id: the answer may have been re-rendered (its run finishing) meanwhile.
    return _turn_response(request, run, part="feedback", swap_oob=True, cleared=feedback.cleared_comment)


@require_GET
def session_export(request: HttpRequest, session_id: int) -> HttpResponse:
    """The chat as a Markdown file."""
    session = services.session_get_for_user(request.user, session_id)
    response = HttpResponse(
        services.session_export_markdown(session), content_type="text/markdown; charset=utf-8"
    )
    response["Content-Disposition"] = f'attachment; filename="nexus-chat-{session.pk}.md"'
    return response


@require_GET
def search(request: HttpRequest) -> HttpResponse:
    """Search the user's own chats: titles and every message."""
    query = request.GET.get("q", "").strip()[:200]
    try:
        results = services.session_search(request.user, query)
    except ValidationError:
        results = []
    return render(
        request,
        "chat/search.html",
        {"query": query, "results": results, "sessions": session_links(request.user)},
    )


@require_POST
def run_retry(request: HttpRequest, session_id: int, run_id: int) -> HttpResponse:
    """Hand a queued run to a worker again (after the queue was unreachable)."""
    session = services.session_get_for_user(request.user, session_id)
    run = session.runs.filter(pk=run_id, status=ReasoningRun.Status.QUEUED).first()
    if run is None:
        return _error(request, "That answer is no longer waiting.", session.pk)
    try:
        dispatch_run(run.pk)
    except DispatchError as exc:
        return _error(request, f"{exc} Try again in a moment.", session.pk, status=503)
    services.runs_mark_dispatched([run.pk])
    return _redirect(request, reverse("chat:session", args=[session.pk]))


@require_POST
def preference_update(request: HttpRequest) -> HttpResponse:
    preference = _preference(request)
    if "theme" in request.POST:
        theme = request.POST["theme"]
        if theme not in ("system", "light", "dark"):
            return HttpResponse("theme must be system, light or dark", status=400)
        preference.theme = theme
        preference.save(update_fields=["theme"])
        return HttpResponse(status=204)
    value = request.POST.get("trace_open", "")
    if value not in ("true", "false"):
        return HttpResponse("trace_open must be true or false", status=400)
    preference.trace_open = value == "true"
    preference.save(update_fields=["trace_open"])
    return HttpResponse(status=204)


# --- team documents -------------------------------------------------------------------------


@require_GET
def document_list(request: HttpRequest) -> HttpResponse:
    return _documents_page(request)


def _documents_page(
    request: HttpRequest, form: dict[str, object] | None = None, error: str = "", status: int = 200
) -> HttpResponse:
    """The documents page; after a refused upload, with what was typed still in the form."""
    return render(
        request,
        "chat/documents.html",
        {
            "documents": documents.documents_visible_to(request.user),
            "sessions": session_links(request.user),
            "form": form or {},
            "upload_error": error,
        },
        status=status,
    )


@require_POST
def document_upload(request: HttpRequest) -> HttpResponse:
    if _rate_limited(request, "uploads"):
        flash.error(request, "You are uploading too quickly; wait a minute and try again.")
        return redirect("chat:documents")
    upload = request.FILES.get("file")
    content = request.POST.get("content", "")
    title = request.POST.get("title", "")
    try:
        if upload is not None:
            if not upload.name.lower().endswith(DOCUMENT_SUFFIXES):
                raise ValidationError("Upload a Markdown (.md) or plain text (.txt) file.")
            if upload.size > settings.NEXUS_MAX_DOCUMENT_BYTES:
                raise ValidationError(
                    f"Documents may be at most {settings.NEXUS_MAX_DOCUMENT_BYTES:,} bytes."
                )
            try:
                content = upload.read().decode("utf-8-sig")  # a byte-order mark is not text
            except UnicodeDecodeError:
                raise ValidationError("Upload Markdown or plain text in UTF-8.") from None
            # A long name is cut to a title: refused, it read "The title is 252 characters".
            title = title or clean_title(upload.name.rsplit(".", 1)[0], what="The file's name", cut=True)
            if not clean_title(title):  # a file named ".md": no name to take
                raise ValidationError("The file has no name to use as its title; give it a title.")
        fmt = "text" if upload is not None and upload.name.lower().endswith((".txt", ".text")) else "markdown"
        document = documents.document_create(
            owner=request.user,
            title=title,
            content=content,
            shared=request.POST.get("shared") == "on",
            format=fmt,
            replace=request.POST.get("replace") == "on",
        )
    except ValidationError as exc:
        # Shown with the form as it was sent: the pasted text (or the file's) is not lost.
        form = {"title": title, "content": content, "shared": request.POST.get("shared") == "on"}
        return _documents_page(request, form=form, error=exc.messages[0], status=400)
    who = "everyone" if document.shared else "only you"
    if document.replaced:
        flash.success(request, f"Replaced “{document.title}” with the new text; {who} can read it.")
    else:
        flash.success(
            request, f"Saved “{document.title}” ({who} can read it). Mention it with @ or ask about it."
        )
    return redirect("chat:documents")


@require_POST
def document_delete(request: HttpRequest, document_id: int) -> HttpResponse:
    document = get_object_or_404(Document, pk=document_id, owner=request.user)
    document.delete()
    flash.success(request, f"Deleted “{document.title}”.")
    return redirect("chat:documents")


@require_GET
def completions(request: HttpRequest) -> HttpResponse:
    """What the composer offers after @ (documents, resources) or / (commands)."""
    text = request.GET.get("q", "")
    if len(text) > MAX_COMPLETION_QUERY:  # a NUL in it never gets here (chat.inputs)
        return HttpResponseBadRequest(
            f"The completion query must be at most {MAX_COMPLETION_QUERY} characters.",
            content_type="text/plain",
        )
    prefix, word = text[:1], text[1:].strip('"').lower()
    items: list[dict[str, str]] = []
    if prefix == "@":
        for document in mentions.documents_to_offer(request.user, word):
            items.append(
                {
                    "insert": f"{document.mention} ",
                    "label": document.title,
                    "detail": "your document"
                    if document.owner_id == request.user.pk
                    else f"shared by {document.owner.get_username()}",
                }
            )
        known = mentions.resources(request.user)
        for resource in known:
            if word in resource["name"].lower():
                items.append(
                    {
                        "insert": f"{mentions.resource_mention(resource, known)} ",
                        "label": resource["name"],
                        "detail": f"resource on {resource['server']}",
                    }
                )
    elif prefix == "/":
        for command, prompt in mentions.commands(mentions.prompts(request.user)):
            server, name = prompt["server"], prompt["name"]
            if name.startswith(word) or command.startswith(word):
                description = prompt["description"]
                items.append(
                    {
                        "insert": f"/{command} ",
                        "label": f"/{command} {mentions.argument_hint(prompt)}".strip(),
                        "detail": f"{description} (on {server})" if description else f"on {server}",
                    }
                )
    return JsonResponse({"items": items[:15]})
