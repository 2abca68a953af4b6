"""The admin as an audit tool: every model listed, runs shown whole, read-only, exportable."""

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from chat import services
from chat.audit import runs_export, runs_import
from chat.models import LLMCall, ReasoningRun, ToolExecution, TraceEvent
from tests.conftest import full_run

pytestmark = pytest.mark.django_db(transaction=True)

AUDIT_MODELS = [
    "reasoningrun",
    "traceevent",
    "attempt",
    "plan",
    "toolexecution",
    "llmcall",
    "critique",
    "reflection",
    "chatsession",
    "message",
]


def _queries(client, url: str) -> int:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200, url
    return len(captured)


def test_the_index_shows_every_audit_model(auditor, client_for):
    page = client_for(auditor).get("/admin/").content.decode()
    for model in AUDIT_MODELS:
        assert f"/admin/chat/{model}/" in page, model


def test_query_counts_do_not_grow_with_rows(auditor, alice, client_for):
    client = client_for(auditor)
    session = services.session_create(owner=alice)
    first = full_run(session, "What is 17*23 and what time is it in Tokyo?")
    one = {m: _queries(client, f"/admin/chat/{m}/") for m in AUDIT_MODELS}
    client.get(reverse("admin:chat_reasoningrun_change", args=[first.pk]))  # warms the content-type cache
    one_page = _queries(client, reverse("admin:chat_reasoningrun_change", args=[first.pk]))
    for index in range(19):
        other = services.session_create(owner=alice)
        full_run(other, f"What is {index}*7 and what time is it in Paris?")
    twenty = {m: _queries(client, f"/admin/chat/{m}/") for m in AUDIT_MODELS}
    assert ReasoningRun.objects.count() == 20
    assert one == twenty
    big = full_run(services.session_create(owner=alice), "What is 3*3 and what time is it in Tokyo?")
    start = big.next_sequence
    TraceEvent.objects.bulk_create(
        TraceEvent(run=big, sequence=start + n, kind="llm.call") for n in range(40)
    )
    LLMCall.objects.bulk_create(LLMCall(run=big, component="agent") for _ in range(40))
    ToolExecution.objects.bulk_create(ToolExecution(run=big, tool="calculator") for _ in range(40))
    assert big.events.count() > first.events.count() + 30
    assert _queries(client, reverse("admin:chat_reasoningrun_change", args=[big.pk])) == one_page


def test_run_page_shows_the_whole_trail(auditor, alice_session, client_for):
    run = full_run(alice_session)
    page = client_for(auditor).get(reverse("admin:chat_reasoningrun_change", args=[run.pk])).content.decode()
    for expected in [
        "Attempts",
        "Tool executions",
        "LLM calls",
        "Critiques",
        "Reflection",
        "Plan steps",
        "step_1",
        "run.started",
        "escalation",
        "calculator",
        "Split multi-part questions.",
        "What is 17*23 and what time is it in Tokyo?",
    ]:
        assert expected in page, expected


def test_list_filters_and_search(auditor, alice, bob, client_for):
    escalated = full_run(services.session_create(owner=alice), "What is 2*3 and what time is it in Tokyo?")
    plain = full_run(services.session_create(owner=bob), "What is 6*7?")
    client = client_for(auditor)
    url = "/admin/chat/reasoningrun/"
    assert escalated.escalation_count == 1 and plain.escalation_count == 0
    page = client.get(url, {"escalated": "yes"}).content.decode()
    assert "What is 2*3" in page and "What is 6*7" not in page
    page = client.get(url, {"final_strategy": "direct"}).content.decode()
    assert "What is 6*7" in page and "What is 2*3" not in page
    page = client.get(url, {"q": "bob"}).content.decode()
    assert "What is 6*7" in page and "What is 2*3" not in page
    assert client.get(url, {"status": "succeeded", "initial_strategy": "direct"}).status_code == 200


def test_trace_rows_are_read_only(auditor, make_user, alice_session, client_for):
    run = full_run(alice_session)
    event = TraceEvent.objects.filter(run=run).first()
    superuser = client_for(auditor)
    assert superuser.get("/admin/chat/traceevent/add/").status_code == 403
    change = superuser.post(reverse("admin:chat_traceevent_change", args=[event.pk]), {"kind": "forged"})
    assert change.status_code == 403
    event.refresh_from_db()
    assert event.kind != "forged"
    staff = make_user("staffer", is_staff=True)
    from django.contrib.auth.models import Permission

    staff.user_permissions.add(
        *Permission.objects.filter(codename__in=["view_traceevent", "delete_traceevent"])
    )
    staff_client = client_for(staff)
    assert staff_client.get(reverse("admin:chat_traceevent_change", args=[event.pk])).status_code == 200
    assert (
        staff_client.post(
            reverse("admin:chat_traceevent_delete", args=[event.pk]), {"post": "yes"}
        ).status_code
        == 403
    )
    assert (
        superuser.post(reverse("admin:chat_traceevent_delete", args=[event.pk]), {"post": "yes"}).status_code
        == 302
    )
    assert not TraceEvent.objects.filter(pk=event.pk).exists()


def test_export_action_round_trips(auditor, alice_session, client_for):
    run = full_run(alice_session)
    response = client_for(auditor).post(
        "/admin/chat/reasoningrun/", {"action": "export_json", "_selected_action": [run.pk]}
    )
    assert response["Content-Type"] == "application/json"
    document = json.loads(response.content)
    exported = document["runs"][0]
    assert exported["events"] and exported["attempts"] and exported["plans"][0]["steps"]
    assert (
        exported["tool_executions"]
        and exported["llm_calls"]
        and exported["critiques"]
        and exported["reflection"]
    )
    alice_session.delete()
    (restored,) = runs_import(json.loads(json.dumps(document)), owners={"alice": alice_session.owner})
    assert runs_export(ReasoningRun.objects.filter(pk=restored.pk)) == document


def test_an_import_cannot_forge_owners_or_start_runs(auditor, alice, bob, alice_session):
    document = runs_export(ReasoningRun.objects.filter(pk=full_run(alice_session).pk))
    before = ReasoningRun.objects.count()
    with pytest.raises(ValueError, match="'alice', who was not accepted"):
        runs_import(document, owners={"bob": bob})
    document["runs"][0]["status"] = "queued"
    with pytest.raises(ValueError, match="only finished runs"):
        runs_import(document, owners={"alice": alice})
    assert ReasoningRun.objects.count() == before


def test_every_change_page_renders_for_a_full_run(auditor, alice_session, client_for):
    from chat.models import Attempt, ChatSession, Critique, LLMCall, Message, Plan, Reflection

    run = full_run(alice_session)
    client = client_for(auditor)
    for model in (
        ReasoningRun,
        TraceEvent,
        Attempt,
        Plan,
        ToolExecution,
        LLMCall,
        Critique,
        Reflection,
        ChatSession,
        Message,
    ):
        obj = model.objects.filter(**({"pk": run.pk} if model is ReasoningRun else {})).first()
        name = model._meta.model_name
        response = client.get(reverse(f"admin:chat_{name}_change", args=[obj.pk]))
        assert response.status_code == 200, name


def test_bulk_export_streams_every_matching_run_as_json_lines_that_import_back(
    auditor, alice, bob, client_for
):
    from chat.audit import runs_import_lines
    from chat.models import StaffAuditEntry

    mine = [full_run(services.session_create(owner=alice), f"What is {n}*5?") for n in range(3)]
    full_run(services.session_create(owner=bob), "What is 9*9?")
    client = client_for(auditor)
    listing = client.get("/admin/chat/reasoningrun/", {"owner": alice.pk}).content.decode()
    assert "Export 3 as JSON Lines" in listing
    url = reverse("admin:chat_reasoningrun_export")
    response = client.get(url, {"owner": alice.pk, "format": "jsonl"})
    assert response.streaming and response["Content-Type"] == "application/x-ndjson"
    lines = b"".join(response.streaming_content).decode().splitlines()
    assert json.loads(lines[0])["format"] == "nexus-runs-lines" and len(lines) == 4
    expected = runs_export(ReasoningRun.objects.filter(pk__in=[r.pk for r in mine]))
    assert [json.loads(line) for line in lines[1:]] == expected["runs"]
    entry = StaffAuditEntry.objects.get(action="export")
    assert entry.details["count"] == 3 and entry.details["format"] == "jsonl"
    assert entry.details["filters"] == {"owner": str(alice.pk)}
    for run in mine:
        run.session.delete()
    restored = runs_import_lines(lines, owners={"alice": alice})
    again = runs_export(ReasoningRun.objects.filter(pk__in=[r.pk for r in restored]))
    assert again == expected


def test_bulk_export_of_a_date_range_as_csv_summaries(auditor, alice, client_for):
    import csv
    import datetime as dt
    import io

    old, new = (full_run(services.session_create(owner=alice), f"What is {n}*2?") for n in (1, 2))
    ReasoningRun.objects.filter(pk=old.pk).update(created_at=dt.datetime(2024, 1, 5, tzinfo=dt.UTC))
    response = client_for(auditor).get(
        reverse("admin:chat_reasoningrun_export"),
        {"created_at__gte": "2025-01-01 00:00:00+00:00", "format": "csv"},
    )
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert [int(r["id"]) for r in rows] == [new.pk]
    (row,) = rows
    assert row["question"] == "What is 2*2?" and row["owner"] == "alice" and "4" in row["answer"]
    assert row["status"] == "succeeded" and int(row["tool_calls"]) >= 1


@pytest.mark.parametrize(
    "filters",
    [{"created_at__gte": "9999-99-99"}, {"created_at__day__gte": "x"}],
)
def test_a_bulk_export_with_filters_the_list_cannot_apply_is_a_400(auditor, filters, client_for):
    """A hand-edited export URL is the staff member's mistake to correct, not a server error."""
    client = client_for(auditor)
    client.raise_request_exception = False
    response = client.get(reverse("admin:chat_reasoningrun_export"), {**filters, "format": "csv"})
    assert response.status_code == 400


def test_a_tool_execution_page_names_the_images_and_downloads_without_their_data(
    auditor, alice_session, client_for
):
    """The change page printed the parts field whole: every image's and download's base64
    data, megabytes of it, in the page."""
    import base64

    run = full_run(alice_session)
    data = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * 300_000).decode()
    tool = ToolExecution.objects.filter(run=run).first()
    tool.parts = [
        {"type": "image", "mime_type": "image/png", "data": data, "bytes": 300_008},
        {"type": "link", "uri": "https://example.com/<b>x</b>", "name": "<b>notes</b>", "mime_type": ""},
    ]
    tool.save(update_fields=["parts"])
    response = client_for(auditor).get(reverse("admin:chat_toolexecution_change", args=[tool.pk]))
    page = response.content.decode()
    assert response.status_code == 200 and data[:200] not in page and len(page) < 100_000
    assert "image/png 300,008 bytes" in page
    assert "https://example.com/&lt;b&gt;x&lt;/b&gt;" in page and "<b>x</b>" not in page
