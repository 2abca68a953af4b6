"""Every admin page renders: each changelist and each change page, with rows in every status."""

import re

import pytest
from axes.models import AccessAttempt, AccessFailureLog, AccessLog
from django.contrib import admin
from django.contrib.auth.models import Group, Permission
from django.test import Client
from django.urls import reverse

from chat import documents, services
from chat.models import (
    AnswerFeedback,
    Attempt,
    Elicitation,
    MCPServer,
    Memory,
    ReasoningRun,
    StaffAuditEntry,
    TeamLesson,
    ToolApproval,
)
from teamops.models import Budget
from tests.conftest import full_run

pytestmark = pytest.mark.django_db(transaction=True)
# The pages' Content-Security-Policy allows no inline style: such colours never showed.
INLINE_STYLE = re.compile(r"<[a-z][^>]*\sstyle=")


@pytest.fixture
def rows_in_every_status(alice, bob):
    run = full_run(services.session_create(owner=alice))
    for status in ReasoningRun.Status.values:
        if status == run.status:
            continue
        other = services.message_post(session=services.session_create(owner=bob), content=f"{status}?")
        error = "boom" if status == ReasoningRun.Status.FAILED else ""
        ReasoningRun.objects.filter(pk=other.pk).update(status=status, error=error)
    for number, status in enumerate(Attempt.Status.values, start=10):
        Attempt.objects.create(run=run, number=number, strategy="direct", status=status)
    for status in MCPServer.Status.values:
        MCPServer.objects.create(
            name=f"server_{status}",
            command="/usr/bin/true",
            last_status=status,
            last_error="went away" if status == MCPServer.Status.ERROR else "",
        )
    MCPServer.objects.create(name="remote", transport="http", url="https://mcp.example.com/mcp")
    for number, status in enumerate(ToolApproval.Status.values):
        ToolApproval.objects.create(
            run=run,
            session=run.session,
            tool="echo",
            model_tool="remote__echo",
            argument_hash=f"h{number}",
            status=status,
        )
    for number, status in enumerate(Elicitation.Status.values):
        Elicitation.objects.create(
            run=run, session=run.session, key=f"k{number}", message="Your name?", schema={}, status=status
        )
    documents.document_create(owner=alice, title="Private", content="x")
    documents.document_create(owner=bob, title="Shared", content="y", shared=True)
    TeamLesson.objects.create(text="Split multi-part questions.", source_run=run, promoted_by=alice)
    TeamLesson.objects.create(text="A lesson whose run was deleted.")
    AnswerFeedback.objects.create(run=run, user=alice, rating=AnswerFeedback.Rating.UP)
    AnswerFeedback.objects.create(
        run=run, user=bob, rating=AnswerFeedback.Rating.DOWN, comment="Missed the <b>date</b>"
    )
    for action in StaffAuditEntry.Action.values:
        StaffAuditEntry.objects.create(
            actor=alice, actor_name="alice", action=action, object_type="run", summary=action
        )
    Memory.objects.create(
        owner=alice, kind="episodic", text="Asked: x. Answered: y.", run=run, session=run.session
    )
    Memory.objects.create(
        owner=bob, kind="semantic", text="A fact", source="chat", shared=True, promoted_by=alice
    )
    signing_in = Client(REMOTE_ADDR="10.4.4.4")
    signing_in.post("/accounts/login/", {"username": "alice", "password": "wrong"})  # a failure
    signing_in.post("/accounts/login/", {"username": "bob", "password": "bob-password-1"})  # a success
    Group.objects.create(name="auditors").permissions.set(
        Permission.objects.filter(codename__startswith="view_")
    )
    Budget.objects.create(user=alice, period="day", metric="tokens", limit=1000)
    Budget.objects.create(group=Group.objects.get(name="auditors"), period="month", metric="cost", limit=5)
    AccessFailureLog.objects.create(
        username="alice", ip_address="10.4.4.4", user_agent="test", locked_out=True
    )
    assert AccessAttempt.objects.exists() and AccessLog.objects.exists()
    assert set(ReasoningRun.objects.values_list("status", flat=True)) == set(ReasoningRun.Status.values)
    assert set(MCPServer.objects.values_list("last_status", flat=True)) == set(MCPServer.Status.values)


def _every_page(client) -> list[str]:
    failures = []
    for model, model_admin in admin.site._registry.items():
        opts = model._meta
        changelist = reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist")
        response = client.get(changelist)
        if not model_admin.has_view_permission(response.wsgi_request):
            if response.status_code != 403:  # superuser-only pages (the staff audit log)
                failures.append(f"{changelist}: {response.status_code}, expected 403")
            continue
        if response.status_code != 200:
            failures.append(f"{changelist}: {response.status_code}")
            continue
        if INLINE_STYLE.search(response.content.decode()):  # the CSP (style-src 'self') blocks it
            failures.append(f"{changelist}: an inline style attribute")
        objects = model_admin.get_queryset(response.wsgi_request)[:40]
        if not objects:
            failures.append(f"{changelist}: no rows to render")
        for obj in objects:
            url = reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[obj.pk])
            page = client.get(url)
            if page.status_code != 200:
                failures.append(f"{url}: {page.status_code}")
            elif INLINE_STYLE.search(page.content.decode()):
                failures.append(f"{url}: an inline style attribute")
    return failures


def test_every_admin_page_renders_for_a_superuser(rows_in_every_status, auditor, client_for):
    assert _every_page(client_for(auditor)) == []


def test_every_admin_page_renders_for_staff_who_may_only_view(rows_in_every_status, make_user, client_for):
    staff = make_user("viewer", is_staff=True)
    staff.user_permissions.set(Permission.objects.filter(codename__startswith="view_"))
    assert _every_page(client_for(staff)) == []


def test_every_admin_page_renders_for_staff_who_may_view_and_change(
    rows_in_every_status, make_user, client_for
):
    staff = make_user("editor", is_staff=True)
    staff.user_permissions.set(Permission.objects.filter(codename__regex=r"^(view|change)_"))
    assert _every_page(client_for(staff)) == []


@pytest.mark.parametrize(
    "form",
    [
        {},
        {"action": ""},
        {"action": "no_such_action", "_selected_action": ["1"]},
        {"action": "delete_selected", "_selected_action": ["x"]},
        {"action": "delete_selected", "_selected_action": ["1e9", "9" * 40]},
        {"action": "delete_selected", "select_across": "1", "index": "0"},
    ],
)
def test_hand_made_action_posts_are_answered_not_crashed(form, auditor, client_for):
    client = client_for(auditor)
    crashed = []
    for model in admin.site._registry:
        url = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")
        response = client.post(url, form)
        if response.status_code >= 500:
            crashed.append(f"{url}: {response.status_code}")
        if form.get("_selected_action") == ["x"]:
            assert response.status_code == 400 and b"not valid ids" in response.content, url
    assert crashed == []
