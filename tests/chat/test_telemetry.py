"""OpenTelemetry export against a real OTLP/HTTP receiver started here, decoding the protobuf."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from teamops import telemetry
from tests.conftest import ask

pytestmark = pytest.mark.django_db(transaction=True)

TWO_PARTS = "What is 17*23 and what time is it in Tokyo?"


class Receiver(BaseHTTPRequestHandler):
    spans: list[Any] = []
    paths: list[str] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        for resource_spans in request.resource_spans:
            service = {a.key: a.value.string_value for a in resource_spans.resource.attributes}[
                "service.name"
            ]
            for scope_spans in resource_spans.scope_spans:
                type(self).spans += [(service, span) for span in scope_spans.spans]
        type(self).paths.append(self.path)
        payload = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def receiver(settings, monkeypatch) -> Iterator[type[Receiver]]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{server.server_port}")
    settings.NEXUS_OTEL_ENABLED = True
    Receiver.spans, Receiver.paths = [], []
    telemetry._provider = None
    yield Receiver
    if telemetry._provider is not None:
        telemetry._provider.shutdown()
    telemetry._provider = None
    server.shutdown()


def attributes(span: Any) -> dict[str, Any]:
    values = {}
    for item in span.attributes:
        value = item.value
        kind = value.WhichOneof("value")
        values[item.key] = (
            list(v.string_value for v in value.array_value.values)
            if kind == "array_value"
            else getattr(value, kind)
        )
    return values


def test_a_run_is_exported_as_a_trace_of_attempts_steps_model_and_tool_calls(
    receiver, alice_session, settings
):
    run = ask(alice_session, TWO_PARTS, start="direct")
    telemetry.flush()
    assert receiver.paths and set(receiver.paths) == {"/v1/traces"}
    spans = [span for _, span in receiver.spans]
    assert {service for service, _ in receiver.spans} == {"nexus"}
    by_id = {span.span_id: span for span in spans}
    (root,) = [s for s in spans if not s.parent_span_id]
    assert root.name == "invoke_agent nexus" and len({s.trace_id for s in spans}) == 1
    root_attrs = attributes(root)
    assert root_attrs["gen_ai.operation.name"] == "invoke_agent" and root_attrs["nexus.run.id"] == run.pk
    assert root_attrs["nexus.strategy.final"] == "light_planning" and root_attrs["nexus.escalations"] == 1
    attempts = [s for s in spans if s.parent_span_id == root.span_id and s.name.startswith("attempt")]
    assert [a.name for a in sorted(attempts, key=lambda s: s.start_time_unix_nano)] == [
        "attempt 1 direct",
        "attempt 2 light_planning",
    ]
    steps = [s for s in spans if s.name.startswith("plan_step")]
    assert len(steps) == 2 and {by_id[s.parent_span_id].name for s in steps} == {"attempt 2 light_planning"}
    tools = [s for s in spans if s.name.startswith("execute_tool")]
    assert {attributes(t)["gen_ai.tool.name"] for t in tools} == {"nexus__calculator", "nexus__clock"}
    assert any(by_id[t.parent_span_id].name.startswith("plan_step") for t in tools), "tools under their step"
    calls = [s for s in spans if attributes(s).get("gen_ai.operation.name") == "chat"]
    assert len(calls) == run.llm_calls.count(), "a reflection after the answer too, under the run"
    first = attributes(calls[0])
    assert (
        first["gen_ai.request.model"] == run.llm_calls.first().model
        and first["gen_ai.usage.input_tokens"] > 0
    )
    for span in spans:
        if span is not root:
            parent = by_id[span.parent_span_id]
            assert parent.start_time_unix_nano <= span.start_time_unix_nano <= span.end_time_unix_nano
    assert not any(event.name == "gen_ai.user.message" for event in root.events), "no text unless opted in"
    assert TWO_PARTS not in str(spans)


def test_question_and_answer_text_only_when_opted_in(receiver, alice_session, settings):
    settings.NEXUS_OTEL_CAPTURE_CONTENT = True
    ask(alice_session, "What is 17*23?")
    telemetry.flush()
    (root,) = [span for _, span in receiver.spans if not span.parent_span_id]
    events = {event.name: attributes(event)["content"] for event in root.events}
    assert events["gen_ai.user.message"] == "What is 17*23?" and "391" in events["gen_ai.choice"]


def test_nothing_is_exported_when_no_endpoint_is_set(alice_session, settings):
    settings.NEXUS_OTEL_ENABLED = False
    telemetry._provider = None
    ask(alice_session, "What is 2+2?")
    assert telemetry._provider is None
