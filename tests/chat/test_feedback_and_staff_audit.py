"""Feedback on answers and the append-only audit log of what staff do."""

import pytest
from django.db import IntegrityError, transaction
from django.test import RequestFactory

from chat import services, staff_audit
from chat.models import AnswerFeedback, StaffAuditEntry
from tests.conftest import full_run

pytestmark = pytest.mark.django_db(transaction=True)


def test_one_verdict_per_person_and_run_and_only_up_or_down(alice, bob):
    run = full_run(services.session_create(owner=alice))
    AnswerFeedback.objects.create(run=run, user=alice, rating=1)
    AnswerFeedback.objects.create(run=run, user=bob, rating=-1, comment="wrong year")
    with pytest.raises(IntegrityError), transaction.atomic():
        AnswerFeedback.objects.create(run=run, user=alice, rating=-1)
    with pytest.raises(IntegrityError), transaction.atomic():
        AnswerFeedback.objects.create(run=run, user=bob, rating=0)
    assert sorted(run.feedback.values_list("rating", flat=True)) == [-1, 1]


def test_record_keeps_who_what_and_where(alice):
    request = RequestFactory().get("/admin/chat/reasoningrun/7/change/", REMOTE_ADDR="10.1.2.3")
    request.user = alice
    entry = staff_audit.record(request, "view", "run", 7, "Viewed run 7")
    assert entry is not None
    stored = StaffAuditEntry.objects.get()
    assert (stored.actor, stored.actor_name, stored.action, stored.object_type, stored.object_id) == (
        alice,
        "alice",
        "view",
        "run",
        "7",
    )
    assert stored.ip_address == "10.1.2.3"
    alice.delete()
    stored.refresh_from_db()
    assert stored.actor is None and stored.actor_name == "alice"


def test_entries_cannot_be_changed_or_deleted(alice):
    entry = StaffAuditEntry.objects.create(
        actor_name="alice", action="export", object_type="run", summary="3 runs"
    )
    entry.summary = "nothing to see"
    with pytest.raises(PermissionError):
        entry.save()
    with pytest.raises(PermissionError):
        entry.delete()
    assert StaffAuditEntry.objects.get().summary == "3 runs"


def test_only_superusers_read_the_log_and_nobody_edits_it(client_for, auditor, make_user):
    entry = StaffAuditEntry.objects.create(actor_name="alice", action="view", object_type="run", summary="x")
    staff = make_user("staffer", is_staff=True)
    from django.contrib.auth.models import Permission

    staff.user_permissions.set(Permission.objects.filter(codename__startswith="view_"))
    url = "/admin/chat/staffauditentry/"
    assert client_for(staff).get(url).status_code == 403
    superuser = client_for(auditor)
    assert superuser.get(url).status_code == 200
    page = superuser.get(f"{url}{entry.pk}/change/")
    assert page.status_code == 200 and b"Delete" not in page.content and b'name="_save"' not in page.content
    assert superuser.post(f"{url}{entry.pk}/delete/", {"post": "yes"}).status_code == 403
    assert StaffAuditEntry.objects.filter(pk=entry.pk).exists()
