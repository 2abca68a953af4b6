"""The Memory page (what Nexus remembers about you, and deleting it) and a chat's own mode."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages as flash
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from chat import memory, services
from chat.models import SessionMode
from chat.presenters import session_links
from reasoning.modes import MODE_NAMES
from reasoning.text import counted


@require_GET
def memory_list(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "chat/memory.html",
        {
            "memories": memory.memories_visible_to(request.user).select_related("session"),
            "lessons": memory.lessons_of(request.user),
            "sessions": session_links(request.user),
            "memory_enabled": settings.NEXUS_MEMORY,
        },
    )


@require_POST
def memory_delete(request: HttpRequest, memory_id: int) -> HttpResponse:
    derived = memory.memory_delete(user=request.user, memory_id=memory_id)
    if derived is None:
        raise Http404("No such memory of yours.")
    summaries = "conversation summary" if derived == 1 else f"{derived} conversation summaries"
    also = f" The {summaries} that could repeat it went with it." if derived else ""
    flash.success(request, f"Deleted: Nexus will not recall it again.{also}")
    return redirect("chat:memory")


@require_POST
def memory_lesson_delete(request: HttpRequest) -> HttpResponse:
    if not memory.lesson_forget(user=request.user, text=request.POST.get("text", "")):
        raise Http404("No such lesson of yours.")
    flash.success(request, "Deleted the lesson.")
    return redirect("chat:memory")


@require_POST
def memory_forget(request: HttpRequest) -> HttpResponse:
    count = memory.memory_forget_all(user=request.user)
    flash.success(
        request,
        f"Forgot everything: {counted(count, 'item')} and your runs' lessons are gone.",
    )
    return redirect("chat:memory")


@require_POST
def session_mode(request: HttpRequest, session_id: int) -> HttpResponse:
    session = services.session_get_for_user(request.user, session_id)
    mode = request.POST.get("mode", "")
    if not settings.NEXUS_CHAT_MODE_CHOICE or mode not in MODE_NAMES:
        flash.error(request, "This deployment does not let a chat choose that mode.")
        return redirect("chat:session", session_id=session.pk)
    SessionMode.objects.update_or_create(session=session, defaults={"mode": mode})
    flash.success(request, f"This chat now answers in the {mode} mode.")
    return redirect("chat:session", session_id=session.pk)
