"""The audit of the auditors: each staff action the issue lists leaves an entry a superuser
can read and export (who viewed which run or session, who exported what, who changed tool
servers or lessons)."""

import csv
import io
import json

import pytest
from django.contrib.auth.models import Permission
from django.urls import reverse

from chat import services
from chat.models import MCPServer, Reflection, StaffAuditEntry, TeamLesson
from tests.conftest import full_run

pytestmark = pytest.mark.django_db(transaction=True)


def entries(**match) -> list[StaffAuditEntry]:
    return list(StaffAuditEntry.objects.filter(**match).order_by("id"))


def test_opening_a_run_or_session_page_is_recorded(auditor, alice_session, client_for):
    run = full_run(alice_session)
    client = client_for(auditor)
    client.get(reverse("admin:chat_reasoningrun_change", args=[run.pk]))
    client.get(reverse("admin:chat_chatsession_change", args=[alice_session.pk]))
    client.get(reverse("admin:chat_message_change", args=[run.user_message_id]))
    client.get(reverse("admin:chat_reasoningrun_change", args=[999999]))  # no such run: nothing viewed
    seen = [(e.actor, e.action, e.object_type, e.object_id) for e in entries()]
    assert seen == [
        (auditor, "view", "run", str(run.pk)),
        (auditor, "view", "session", str(alice_session.pk)),
        (auditor, "view", "message", str(run.user_message_id)),
    ]


def test_a_search_of_the_run_list_is_recorded_with_its_filters(auditor, alice_session, client_for):
    full_run(alice_session)
    client = client_for(auditor)
    client.get("/admin/chat/reasoningrun/", {"q": "Tokyo", "status": "succeeded"})
    (entry,) = entries()
    assert entry.object_type == "run list" and "Tokyo" in entry.summary
    assert entry.details["filters"] == {"q": "Tokyo", "status": "succeeded"}


def test_browsing_a_list_of_conversations_is_recorded_with_its_filters_and_page(
    auditor, alice, alice_session, client_for
):
    """A list shows each question's opening words: filtered to one person, page after page,
    it reads their conversations as surely as opening them one by one."""
    full_run(alice_session)
    client = client_for(auditor)
    client.get("/admin/chat/message/", {"role": "user"})
    client.get("/admin/chat/reasoningrun/", {"owner": alice.pk, "p": "2"})
    assert [(e.object_type, e.summary, e.details["filters"]) for e in entries()] == [
        ("message list", "Listed messages", {"role": "user"}),
        ("run list", "Listed runs, page 2", {"owner": str(alice.pk)}),
    ]


def test_an_export_records_how_many_runs_and_which_filter(auditor, alice, client_for):
    runs = [full_run(services.session_create(owner=alice), f"What is {n}*3?") for n in range(3)]
    client_for(auditor).post(
        "/admin/chat/reasoningrun/?status__exact=succeeded",
        {"action": "export_json", "_selected_action": [r.pk for r in runs[:2]]},
    )
    (entry,) = entries(action="export")
    assert entry.actor_name == "auditor" and entry.object_type == "run"
    assert entry.details["count"] == 2
    assert entry.details["run_ids"] == sorted(r.pk for r in runs[:2])
    assert entry.details["filters"] == {"status__exact": "succeeded"}


def test_tool_server_changes_are_recorded_without_their_secrets(auditor, client_for):
    client = client_for(auditor)
    form = {
        "name": "weather",
        "transport": "http",
        "enabled": "on",
        "command": "",
        "args": "[]",
        "cwd": "",
        "url": "https://tools.example.com/mcp",
        "call_timeout": "5",
        "tool_policies": "{}",
        "env_secret": "",
        "headers_secret": "Authorization: Bearer sk-very-secret-77",
    }
    assert client.post(reverse("admin:chat_mcpserver_add"), form).status_code == 302
    server = MCPServer.objects.get(name="weather")
    changed = {**form, "call_timeout": "9", "enabled": "", "headers_secret": ""}
    assert client.post(reverse("admin:chat_mcpserver_change", args=[server.pk]), changed).status_code == 302
    client.post(reverse("admin:chat_mcpserver_delete", args=[server.pk]), {"post": "yes"})
    assert not MCPServer.objects.filter(name="weather").exists()
    logged = entries(object_type="mcp server")
    assert [(e.action, e.object_id) for e in logged] == [
        ("add", str(server.pk)),
        ("change", str(server.pk)),
        ("delete", str(server.pk)),
    ]
    assert logged[1].details["changed_fields"] == ["call_timeout", "enabled"]
    assert logged[1].details["new_values"] == {"call_timeout": 9.0, "enabled": False}
    everything = json.dumps([(e.summary, e.details) for e in StaffAuditEntry.objects.all()])
    assert "sk-very-secret-77" not in everything


def test_promoting_rewording_and_removing_lessons_are_recorded(auditor, alice_session, client_for):
    run = full_run(alice_session)
    reflection = Reflection.objects.get(run=run)
    client = client_for(auditor)
    client.post(
        reverse("admin:chat_reflection_changelist"),
        {"action": "promote_lessons", "_selected_action": [reflection.pk]},
    )
    lesson = TeamLesson.objects.get()
    client.post(reverse("admin:chat_teamlesson_change", args=[lesson.pk]), {"text": "Split the parts."})
    client.post(reverse("admin:chat_teamlesson_delete", args=[lesson.pk]), {"post": "yes"})
    logged = entries(object_type="team lesson")
    assert [e.action for e in logged] == ["add", "change", "delete"]
    assert logged[0].details == {"added": 1, "runs": [run.pk]}
    assert logged[1].details["new_values"] == {"text": "Split the parts."}


def test_superusers_export_the_log_as_csv_or_json_lines_and_that_is_recorded_too(
    auditor, make_user, client_for
):
    for n in range(3):
        StaffAuditEntry.objects.create(
            actor_name="bob", action="view", object_type="run", object_id=str(n), summary="=HYPERLINK(x)"
        )
    ids = list(StaffAuditEntry.objects.values_list("pk", flat=True))
    url = reverse("admin:chat_staffauditentry_changelist")
    client = client_for(auditor)
    response = client.post(url, {"action": "export_audit_csv", "_selected_action": ids})
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert [r["object_id"] for r in rows] == ["0", "1", "2"]
    assert rows[0]["summary"] == "'=HYPERLINK(x)", "a spreadsheet must not run a formula from the log"
    response = client.post(url, {"action": "export_audit_jsonl", "_selected_action": ids})
    lines = [json.loads(line) for line in b"".join(response.streaming_content).decode().splitlines()]
    assert [line["actor_name"] for line in lines] == ["bob", "bob", "bob"]
    exports = entries(object_type="staff audit log")
    assert [(e.actor_name, e.details["count"], e.details["format"]) for e in exports] == [
        ("auditor", 3, "csv"),
        ("auditor", 3, "jsonl"),
    ]
    staff = make_user("staffer", is_staff=True)
    staff.user_permissions.set(Permission.objects.filter(codename="view_staffauditentry"))
    refused = client_for(staff).post(url, {"action": "export_audit_csv", "_selected_action": ids})
    assert refused.status_code == 403


def test_every_admin_page_that_shows_a_conversation_records_who_opened_or_searched_it(
    admin_user, alice, alice_session, client_for
):
    """Only run, session, message and attempt pages were recorded: a trace event or a tool
    result showed the same question and a private document's text unrecorded, and so did a
    document, a memory, and a search of every user's messages."""
    from chat.models import Document, EpisodicMemory, ToolExecution, TraceEvent

    run = full_run(alice_session)
    document = Document.objects.create(owner=alice, title="Salaries", content="Private figures.")
    memory = EpisodicMemory.objects.create(owner=alice, kind="episodic", text="Alice asked about salaries.")
    client = client_for(admin_user)
    event, tool = TraceEvent.objects.filter(run=run).first(), ToolExecution.objects.filter(run=run).first()
    pages = [
        ("trace event", reverse("admin:chat_traceevent_change", args=[event.pk])),
        ("tool execution", reverse("admin:chat_toolexecution_change", args=[tool.pk])),
        ("document", reverse("admin:chat_document_change", args=[document.pk])),
        ("memory", reverse("admin:chat_episodicmemory_change", args=[memory.pk])),
    ]
    for _, url in pages:
        assert client.get(url).status_code == 200
    client.get(reverse("admin:chat_message_changelist"), {"q": "Tokyo"})
    client.get(reverse("admin:chat_document_changelist"), {"q": "salar"})
    seen = [(e.object_type, e.object_id) for e in entries(action="view")]
    assert seen == [
        ("trace event", str(event.pk)),
        ("tool execution", str(tool.pk)),
        ("document", str(document.pk)),
        ("memory", str(memory.pk)),
        ("message list", ""),
        ("document list", ""),
    ]
    assert "Searched messages for 'Tokyo'" in entries(object_type="message list")[0].summary
