"""Login everywhere; a user reaches only their own sessions; CSRF on every post."""

import pytest
from django.test import Client
from django.urls import reverse

from chat import services
from chat.models import Memory

pytestmark = pytest.mark.django_db


def test_every_page_needs_login(alice_session):
    client = Client()
    for url in [reverse("chat:home"), reverse("chat:session", args=[alice_session.pk])]:
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith(reverse("login"))
    response = client.post(reverse("chat:message-create", args=[alice_session.pk]), {"content": "hi"})
    assert response.status_code == 302 and not alice_session.messages.exists()


def test_login_page_and_sign_in(alice):
    client = Client()
    assert client.get(reverse("login")).status_code == 200
    response = client.post(reverse("login"), {"username": "alice", "password": "alice-password-1"})
    assert response.status_code == 302
    assert client.get(reverse("chat:home")).status_code == 200


@pytest.mark.parametrize(
    ("name", "method"),
    [
        ("chat:session", "get"),
        ("chat:session-rename", "post"),
        ("chat:session-delete", "post"),
        ("chat:message-create", "post"),
    ],
)
def test_another_users_session_is_not_found(bob, alice_session, client_for, dispatched, name, method):
    response = getattr(client_for(bob), method)(
        reverse(name, args=[alice_session.pk]), {"content": "hi", "title": "mine now"}
    )
    assert response.status_code == 404
    alice_session.refresh_from_db()
    assert alice_session.title == "Alice's chat" and not alice_session.messages.exists() and not dispatched


def test_another_users_run_retry_is_not_found(bob, alice_session, client_for, dispatched):
    run = services.message_post(session=alice_session, content="Hi")
    response = client_for(bob).post(reverse("chat:run-retry", args=[alice_session.pk, run.pk]))
    assert response.status_code == 404 and not dispatched


def test_sidebar_lists_only_own_sessions(alice, bob, alice_session, client_for):
    services.session_create(owner=bob, title="Bob's secret plans")
    page = client_for(alice).get(reverse("chat:session", args=[alice_session.pk])).content.decode()
    assert "Alice&#x27;s chat" in page and "Bob&#x27;s secret plans" not in page


def test_posts_need_a_csrf_token(alice, alice_session):
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    response = client.post(reverse("chat:message-create", args=[alice_session.pk]), {"content": "hi"})
    assert response.status_code == 403 and not alice_session.messages.exists()


def _every_chat_url(alice_session) -> list[str]:
    """Every URL of the app, with ids of alice's own objects filled in."""
    from chat import documents
    from chat.urls import urlpatterns

    run = services.message_post(session=alice_session, content="Hi")
    document = documents.document_create(owner=alice_session.owner, title="Notes", content="x")
    memory = Memory.objects.create(owner=alice_session.owner, kind="semantic", text="A fact")
    ids = {
        "session_id": alice_session.pk,
        "run_id": run.pk,
        "document_id": document.pk,
        "memory_id": memory.pk,
        # Sign-in and CSRF are checked before any lookup: these need not exist.
        "sequence": 1,
        "index": 0,
        "approval_id": 1,
        "elicitation_id": 1,
    }
    return [reverse(f"chat:{p.name}", kwargs={k: ids[k] for k in p.pattern.converters}) for p in urlpatterns]


def test_every_url_needs_login_and_every_post_a_csrf_token(alice, alice_session):
    urls = _every_chat_url(alice_session)
    before = (alice_session.messages.count(), alice_session.title, alice.documents.count())
    anonymous = Client()
    for url in urls:
        for method in (anonymous.get, anonymous.post):
            response = method(url, {"content": "hi", "title": "x", "trace_open": "true"})
            assert response.status_code == 302 and response["Location"].startswith(reverse("login")), url
    forged = Client(enforce_csrf_checks=True)
    forged.force_login(alice)
    for url in urls:
        response = forged.post(url, {"content": "hi", "title": "x", "trace_open": "true"})
        assert response.status_code in (403, 405), url
    alice_session.refresh_from_db()
    assert (alice_session.messages.count(), alice_session.title, alice.documents.count()) == before


def test_admin_is_for_staff_only(alice, client_for):
    response = client_for(alice).get("/admin/chat/reasoningrun/")
    assert response.status_code == 302 and "/admin/login/" in response["Location"]


def test_the_icon_browsers_ask_for_on_admin_pages_is_found(db):
    """The admin's pages name no icon, so browsers fetch /favicon.ico: a 404 there was the only
    console error a reviewer saw on them."""
    response = Client().get("/favicon.ico")
    assert response.status_code == 301 and response["Location"].endswith("favicon.svg")


def test_opening_a_button_only_address_says_what_it_is_for(alice, alice_session, client_for):
    """A delete or send address opened from the address bar or history was a blank page (an
    empty 405); it now says to use the button, and still does nothing."""
    client = client_for(alice)
    for url in (
        reverse("chat:session-delete", args=[alice_session.pk]),
        reverse("chat:session-new"),
    ):
        response = client.get(url)
        assert response.status_code == 405, url
        assert "only when its button is pressed" in response.content.decode(), url
        assert "POST" in response["Allow"]
    htmx = client.get(reverse("chat:session-delete", args=[alice_session.pk]), headers={"HX-Request": "true"})
    assert htmx.status_code == 405 and htmx.content == b""
    assert type(alice_session).objects.filter(pk=alice_session.pk).exists()
