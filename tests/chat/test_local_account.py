"""The local account `make run`, `make team` and the container create on every start."""

import io

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

pytestmark = pytest.mark.django_db


def ensure(monkeypatch, password: str | None, *args: str) -> str:
    if password is None:
        monkeypatch.delenv("NEXUS_ADMIN_PASSWORD", raising=False)
    else:
        monkeypatch.setenv("NEXUS_ADMIN_PASSWORD", password)
    out = io.StringIO()
    call_command("ensure_local_account", *args, stdout=out)
    return out.getvalue()


def signs_in(password: str) -> bool:
    return get_user_model().objects.get(username="admin").check_password(password)


def test_a_password_changed_since_survives_the_next_start(monkeypatch):
    """Found by an operator's review: the container ran it on every start, and a password
    changed in the admin went back to the environment's."""
    ensure(monkeypatch, "first-Password-91")
    admin = get_user_model().objects.get(username="admin")
    admin.set_password("changed-in-the-admin-7")
    admin.save()
    said = ensure(monkeypatch, "first-Password-91")
    assert signs_in("changed-in-the-admin-7")
    assert "--reset-password" in said
    ensure(monkeypatch, "first-Password-91", "--reset-password")
    assert signs_in("first-Password-91")


def test_a_weak_password_is_refused_with_the_reason(monkeypatch):
    with pytest.raises(CommandError, match=r"NEXUS_ADMIN_PASSWORD is too weak: .*too short"):
        ensure(monkeypatch, "abc")
    assert not get_user_model().objects.exists()
    said = ensure(monkeypatch, None)
    assert "password " in said and get_user_model().objects.get().is_superuser
