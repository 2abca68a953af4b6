"""The engine↔Django glue: build the engine from settings and execute one run.

`execute_run` is the single entry point for both deployments: the embedded runner and the
Celery task call it with a run id. It claims the run (so only one executor ever works on
it), resumes from the stored tracker state if an earlier worker died, streams every event
into the database and the channel layer, and always leaves the run finished or failed.
The agent mode comes from AGENT_MODE (or the chat's own choice, where the operator allows
it); this module knows only the Mode interface. Each run gets the asking person's memory.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
from typing import Any

from channels.db import database_sync_to_async
from django.conf import settings
from django.core.cache import cache
from django.db import close_old_connections

from chat import services
from chat.lessons import lessons_for
from chat.memory import DjangoMemoryStore
from chat.models import ChatSession, ReasoningRun, SessionMode
from chat.sink import RunSink
from chat.tools import registry_for
from reasoning.llm.base import LLMClient
from reasoning.llm.factory import make_client
from reasoning.modes import MODE_NAMES, Mode, ReasoningFailed, ResumeState, create_mode
from reasoning.quality.reflection import reflect_on_feedback
from reasoning.types import Attachment, RunInput

logger = logging.getLogger(__name__)


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def build_llm() -> LLMClient:
    config = settings.NEXUS_REASONING
    provider = settings.NEXUS_LLM_PROVIDER
    return make_client(
        provider,
        model=config.model,
        api_key=settings.ANTHROPIC_API_KEY if provider == "anthropic" else settings.OPENAI_API_KEY,
        base_url=settings.ANTHROPIC_BASE_URL if provider == "anthropic" else settings.OPENAI_BASE_URL,
        timeout=config.llm_timeout,
        max_retries=config.llm_max_retries,
        offline_latency=settings.OFFLINE_LATENCY_MS / 1000,
    )


def build_mode(name: str | None = None) -> Mode:
    """The agent mode `name` (default: the one AGENT_MODE names), on the configured provider."""
    return create_mode(
        name or settings.AGENT_MODE,
        build_llm(),
        settings.NEXUS_REASONING,
        analysis_cache=DjangoAnalysisCache(),
    )


class DjangoAnalysisCache:
    """The analysis cache on Django's cache, so every process shares it (Redis in team mode)."""

    def get(self, key: str) -> dict[str, Any] | None:
        return cache.get(key)

    def set(self, key: str, value: dict[str, Any], ttl: int) -> None:
        cache.set(key, value, ttl)


async def execute_run(run_id: int, *, worker: str | None = None) -> str:
    """Execute a run to the end; returns "succeeded", "failed", or "skipped" (not ours to run)."""
    worker = worker or worker_name()
    await database_sync_to_async(close_old_connections)()
    run = await database_sync_to_async(services.run_claim)(run_id, worker=worker)
    if run is None:
        return "skipped"
    heartbeat = asyncio.create_task(_beat(run.pk, worker))
    sink = RunSink(run)
    try:
        outcome = await _run_engine(run, sink)
    finally:
        heartbeat.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await heartbeat
    await sink.push({"type": "run.done", "run": run.pk})
    await database_sync_to_async(close_old_connections)()
    return outcome


async def _run_engine(run: ReasoningRun, sink: RunSink) -> str:
    try:
        context = await database_sync_to_async(_run_context)(run)
        try:
            await build_mode(context["mode"]).run(
                context["input"],
                tools=context["tools"],
                sink=sink,
                resume=context["resume"],
                lessons=context["lessons"],
                checkpoint=sink.checkpoint,
                memory=context["memory"],
            )
        finally:
            await context["tools"].close()
        return "succeeded"
    except ReasoningFailed as failure:
        await database_sync_to_async(services.run_fail)(run.pk, failure.user_message)
        return "failed"
    except asyncio.CancelledError:
        await database_sync_to_async(services.run_fail)(
            run.pk, "The answer took longer than the time limit and was stopped."
        )
        raise
    except Exception:
        logger.exception("run %s crashed", run.pk)
        await database_sync_to_async(services.run_fail)(
            run.pk, "Something went wrong inside Nexus while answering; the error is in the server log."
        )
        return "failed"


def _run_context(run: ReasoningRun) -> dict[str, Any]:
    run.refresh_from_db()
    return {
        "input": RunInput.of(
            run.query or run.user_message.content,
            services.conversation_history(run),
            [Attachment.from_dict(item) for item in run.attachments or []],
        ),
        "resume": ResumeState(
            tracker_state=run.tracker_state if run.next_sequence > 1 and run.tracker_state else None,
            next_sequence=run.next_sequence,
        ),
        "lessons": lessons_for(run),
        "tools": registry_for(run.session.owner),
        "mode": mode_for(run.session),
        "memory": DjangoMemoryStore(user=run.session.owner, session=run.session, run=run)
        if settings.NEXUS_MEMORY
        else None,
    }


def mode_for(session: ChatSession) -> str:
    """The chat's own mode where the operator lets people choose, else AGENT_MODE."""
    if settings.NEXUS_CHAT_MODE_CHOICE:
        chosen = SessionMode.objects.filter(session=session).values_list("mode", flat=True).first()
        if chosen in MODE_NAMES:
            return chosen
    return settings.AGENT_MODE


async def reflect_on_run_feedback(run_id: int, *, rating: str, comment: str = "") -> dict[str, Any] | None:
    """Reflect on a finished run because its answer got feedback (thumbs up or down).

    For the feedback view to call (in a background task: it makes a model call). Appends a
    `reflection.completed` event (trigger "feedback") to the run's trace and stores the
    Reflection, whose lessons then reach the user's later runs. None when the run has no
    stored tracker or reflection is switched off; model failures are logged, not raised."""
    if not settings.NEXUS_REASONING.enable_reflection:
        return None
    run = await database_sync_to_async(
        lambda: ReasoningRun.objects.select_related("session").filter(pk=run_id).first()
    )()
    if run is None or not run.tracker_state or run.is_active:
        return None
    sink = RunSink(run)
    try:
        return await reflect_on_feedback(
            build_llm(),
            settings.NEXUS_REASONING,
            question=run.query or "",
            tracker_state=run.tracker_state,
            feedback={"rating": rating, "comment": comment},
            sink=sink,
            start_sequence=run.next_sequence,
        )
    except Exception:
        logger.exception("reflecting on feedback for run %s failed", run_id)
        return None


async def _beat(run_id: int, worker: str) -> None:
    while True:
        await asyncio.sleep(settings.NEXUS_HEARTBEAT_SECONDS)
        try:
            await database_sync_to_async(services.run_heartbeat)(run_id, worker=worker)
        except Exception as exc:  # a missed beat is not worth stopping the run for
            logger.warning("heartbeat for run %s failed: %s", run_id, exc)
