"""OpenTelemetry export: every run as a trace, built from the engine's events.

Off unless OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set; then
the OTLP/HTTP exporter of opentelemetry-sdk sends, with the standard OTEL_* variables
(headers, service name, resource attributes) read by the SDK itself. The span tree:

    invoke_agent nexus                      (the run)
      attempt 1 direct                      (one per strategy tried)
        plan_step step_1                    (LIGHT and DEEP plans)
          chat claude-…                     (a model call; under the step it ran in when
          execute_tool calculator            only one step was running, else the attempt)

Names and attributes follow the OpenTelemetry GenAI semantic conventions (gen_ai.operation.name,
gen_ai.request.model, gen_ai.usage.input_tokens, gen_ai.tool.name, …). Question, answer and
step text are exported only when OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT is true.
The engine knows nothing of this: the host wraps the run's event sink.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from django.conf import settings

from reasoning.events import Event, Sink

logger = logging.getLogger(__name__)

_provider: Any = None
_lock = threading.Lock()


def provider() -> Any:
    """The process's tracer provider (built on first use), or None when export is off."""
    global _provider
    if not settings.NEXUS_OTEL_ENABLED:
        return None
    with _lock:
        if _provider is None:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
            from opentelemetry.sdk.resources import Resource
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import BatchSpanProcessor

            resource = Resource.create({"service.name": settings.NEXUS_OTEL_SERVICE_NAME})
            _provider = TracerProvider(resource=resource)
            _provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        return _provider


def flush(timeout_ms: int = 10_000) -> None:
    """Send what is buffered now (tests; shutdown)."""
    if _provider is not None:
        _provider.force_flush(timeout_ms)


def traced(sink: Sink, *, run_id: int, session_id: int) -> Sink:
    """`sink`, also exporting the run as a trace when OpenTelemetry export is on."""
    tracer_provider = provider()
    if tracer_provider is None:
        return sink
    return RunTrace(sink, tracer_provider.get_tracer("nexus"), run_id=run_id, session_id=session_id)


def _ns(seconds: float) -> int:
    return int(seconds * 1_000_000_000)


class RunTrace:
    """An event sink that passes every event on, and turns the run's events into spans."""

    def __init__(self, inner: Sink, tracer: Any, *, run_id: int, session_id: int) -> None:
        self.inner = inner
        self.tracer = tracer
        self.run_id = run_id
        self.session_id = session_id
        self.content = settings.NEXUS_OTEL_CAPTURE_CONTENT
        self.root: Any = None
        self.attempt: Any = None
        self.steps: dict[str, Any] = {}
        self.tools: dict[str, Any] = {}

    async def __call__(self, event: Event) -> None:
        await self.inner(event)
        try:
            self.on_event(event)
        except Exception:  # telemetry never breaks a run
            logger.exception("could not export event %s of run %s", event.kind, self.run_id)

    def _context(self, span: Any) -> Any:
        from opentelemetry import trace

        return trace.set_span_in_context(span)

    def _start(self, name: str, parent: Any, at: float, attributes: dict[str, Any]) -> Any:
        return self.tracer.start_span(
            name,
            context=self._context(parent) if parent is not None else None,
            start_time=_ns(at),
            attributes={k: v for k, v in attributes.items() if v is not None},
        )

    def on_event(self, event: Event) -> None:
        p = event.payload
        kind = event.kind
        if kind == "run.started":
            self.root = self._start(
                "invoke_agent nexus",
                None,
                event.time,
                {
                    "gen_ai.operation.name": "invoke_agent",
                    "gen_ai.agent.name": "nexus",
                    "gen_ai.conversation.id": str(self.session_id),
                    "nexus.run.id": self.run_id,
                    "nexus.resumed": bool(p.get("resumed")),
                },
            )
            if self.content and p.get("query"):  # opted in: the question as asked
                self.root.add_event("gen_ai.user.message", {"content": str(p["query"])}, _ns(event.time))
            return
        if self.root is None:
            return
        if kind == "strategy.selected":
            self._end_attempt(event.time)
            self.attempt = self._start(
                f"attempt {p.get('attempt')} {p.get('strategy')}",
                self.root,
                event.time,
                {"nexus.attempt.number": p.get("attempt"), "nexus.strategy": p.get("strategy")},
            )
        elif kind == "step.started":
            attributes = {"nexus.step.id": p.get("step_id"), "nexus.strategy": p.get("strategy")}
            if self.content:
                attributes["nexus.step.description"] = str(p.get("description", ""))
            self.steps[p["step_id"]] = self._start(
                f"plan_step {p['step_id']}", self.attempt or self.root, event.time, attributes
            )
        elif kind == "step.completed":
            span = self.steps.pop(p.get("step_id"), None)
            if span is not None:
                span.set_attribute("nexus.step.status", str(p.get("status", "")))
                span.end(end_time=_ns(event.time))
        elif kind == "tool.called":
            parent = self.steps.get(p.get("step_id") or "") or self.attempt or self.root
            self.tools[p["call_id"]] = self._start(
                f"execute_tool {p['tool']}",
                parent,
                event.time,
                {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": p["tool"],
                    "gen_ai.tool.call.id": p["call_id"],
                    "nexus.tool.server": p.get("server"),
                },
            )
        elif kind == "tool.result":
            span = self.tools.pop(p.get("call_id"), None)
            if span is not None:
                span.set_attribute("nexus.tool.cached", bool(p.get("cached")))
                if not p.get("success"):
                    span.set_attribute("error.type", "tool_error")
                span.end(end_time=_ns(event.time))
        elif kind == "llm.call":
            self._model_call(event)
        elif kind == "escalation":
            (self.attempt or self.root).add_event(
                "nexus.escalation",
                {"from": str(p.get("from_strategy")), "to": str(p.get("to_strategy"))},
                _ns(event.time),
            )
        elif kind == "answer.final" and self.content:
            self.root.add_event("gen_ai.choice", {"content": str(p.get("answer", ""))}, _ns(event.time))
        elif kind in ("run.finished", "run.failed"):
            self._finish(event)

    def _model_call(self, event: Event) -> None:
        p = event.payload
        started = event.time - float(p.get("latency_ms") or 0) / 1000
        # Steps run side by side; a call belongs to a step only when it is the one running.
        parent = next(iter(self.steps.values())) if len(self.steps) == 1 else self.attempt or self.root
        model = p.get("model") or ""
        span = self._start(
            f"chat {model}".strip(),
            parent,
            started,
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.provider.name": p.get("provider"),
                "gen_ai.system": p.get("provider"),
                "gen_ai.request.model": model,
                "gen_ai.response.model": model,
                "gen_ai.usage.input_tokens": p.get("input_tokens"),
                "gen_ai.usage.output_tokens": p.get("output_tokens"),
                "gen_ai.usage.cache_read.input_tokens": p.get("cache_read_tokens"),
                "gen_ai.usage.cache_creation.input_tokens": p.get("cache_write_tokens"),
                "gen_ai.response.finish_reasons": [str(p["stop_reason"])] if p.get("stop_reason") else None,
                "nexus.component": p.get("component"),
                "nexus.cost_usd": float(p.get("cost") or 0),
            },
        )
        if p.get("error"):
            span.set_attribute("error.type", str(p.get("error_kind") or "error"))
        span.end(end_time=_ns(event.time))

    def _end_attempt(self, at: float) -> None:
        for span in [*self.tools.values(), *self.steps.values()]:
            span.end(end_time=_ns(at))
        self.tools.clear()
        self.steps.clear()
        if self.attempt is not None:
            self.attempt.end(end_time=_ns(at))
            self.attempt = None

    def _finish(self, event: Event) -> None:
        p = event.payload
        usage = p.get("usage") or {}
        self._end_attempt(event.time)
        attributes = {
            "gen_ai.usage.input_tokens": usage.get("input_tokens"),
            "gen_ai.usage.output_tokens": usage.get("output_tokens"),
            "nexus.strategy.initial": p.get("initial_strategy"),
            "nexus.strategy.final": p.get("final_strategy"),
            "nexus.escalations": p.get("escalations"),
            "nexus.quality": p.get("quality"),
            "nexus.cost_usd": float(p.get("cost") or 0),
        }
        for key, value in attributes.items():
            if value is not None:
                self.root.set_attribute(key, value)
        if event.kind == "run.failed":
            self.root.set_attribute("error.type", "run_failed")
        # The root stays the parent of what follows the answer (a reflection's model call).
        self.root.end(end_time=_ns(event.time))
