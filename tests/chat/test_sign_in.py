"""Sign-in: wrong passwords are throttled per user name and address, per user name across many
addresses, and per address; staff can unlock;
the `next` parameter never sends anyone to another site."""

import re

import pytest
from axes.models import AccessAttempt
from django.test import Client
from django.urls import reverse

from chat import services

pytestmark = pytest.mark.django_db

LOGIN = "/accounts/login/"


def sign_in(client: Client, username: str, password: str, **extra):
    return client.post(LOGIN, {"username": username, "password": password}, **extra)


def test_wrong_passwords_pause_sign_in_even_with_the_right_one_after(alice, settings):
    client = Client()
    for _ in range(20):
        assert sign_in(client, "alice", "wrong-guess").status_code in (200, 429)
    response = sign_in(client, "alice", "alice-password-1")
    assert response.status_code == 429
    page = response.content.decode()
    assert "Too many failed sign-in attempts" in page and "ask an administrator to unlock" in page
    assert "15 minutes" in page
    assert client.get(reverse("chat:home")).status_code == 302, "not signed in"
    admin_login = client.post("/admin/login/", {"username": "alice", "password": "alice-password-1"})
    assert admin_login.status_code == 429, "the admin's sign-in page is the same door"


def test_wrong_guesses_from_one_address_do_not_lock_the_owner_out_elsewhere(alice):
    """Five wrong passwords for a name, from anywhere, locked its owner out everywhere: anyone
    could keep the admin from signing in."""
    attacker = Client(REMOTE_ADDR="10.9.9.9")
    for _ in range(20):
        sign_in(attacker, "alice", "wrong-guess")
    assert sign_in(attacker, "alice", "alice-password-1").status_code == 429
    assert sign_in(Client(REMOTE_ADDR="10.9.8.7"), "alice", "alice-password-1").status_code == 302


def test_a_name_guessed_from_many_addresses_is_paused_everywhere(alice, settings):
    limit, each = settings.NEXUS_LOGIN_NAME_FAILURE_LIMIT, settings.AXES_FAILURE_LIMIT
    assert limit == 50, "ten addresses' worth of guesses, by default"
    for address in range(limit // each):
        for _ in range(each + 3):  # beyond its own limit: an address counts up to it only
            sign_in(Client(REMOTE_ADDR=f"10.8.0.{address}"), "alice", "guess")
    assert sign_in(Client(REMOTE_ADDR="10.8.1.1"), "alice", "alice-password-1").status_code == 429


def test_one_address_guessing_many_user_names_is_paused(alice, bob, settings):
    client = Client(REMOTE_ADDR="10.1.1.1")
    limit = settings.NEXUS_LOGIN_ADDRESS_FAILURE_LIMIT
    assert limit == 50, "ten times the limit for one user name, by default"
    for number in range(limit):  # one guess per name: no user name reaches its own limit
        sign_in(client, f"user{number}", "guess")
    assert sign_in(client, "bob", "bob-password-1").status_code == 429
    assert sign_in(Client(REMOTE_ADDR="10.2.2.2"), "bob", "bob-password-1").status_code == 302


def test_a_few_wrong_guesses_from_a_shared_address_lock_nobody_else_out(bob, auditor):
    """A team signs in from one address (an office's NAT, a proxy; embedded, 127.0.0.1): five
    wrong passwords for made-up names from it paused everyone's sign-in, the admin's too."""
    office = Client(REMOTE_ADDR="10.3.3.3")
    for number in range(5):
        sign_in(office, f"mallory{number}", "wrong")
    assert sign_in(Client(REMOTE_ADDR="10.3.3.3"), "bob", "bob-password-1").status_code == 302
    colleague = Client(REMOTE_ADDR="10.3.3.3")
    admin = colleague.post("/admin/login/", {"username": "auditor", "password": "auditor-password-1"})
    assert admin.status_code == 302


def test_one_name_failing_on_and_on_does_not_lock_out_its_address(alice, bob, settings):
    """A phone retrying an old password, or someone hammering their own paused account: the
    name stays paused, its colleagues at the same address do not."""
    office = Client(REMOTE_ADDR="10.5.5.5")
    for _ in range(settings.NEXUS_LOGIN_ADDRESS_FAILURE_LIMIT + 10):
        sign_in(office, "alice", "an old password")
    assert sign_in(office, "alice", "alice-password-1").status_code == 429
    assert sign_in(Client(REMOTE_ADDR="10.5.5.5"), "bob", "bob-password-1").status_code == 302


def test_a_few_typos_then_the_right_password_signs_in(alice):
    client = Client()
    for _ in range(3):
        sign_in(client, "alice", "typo")
    assert sign_in(client, "alice", "alice-password-1").status_code == 302
    assert not AccessAttempt.objects.filter(username="alice", failures_since_start__gt=0).exists()


def test_signing_in_to_your_own_account_does_not_reset_the_count_against_someone_else(alice, make_user):
    make_user("mallory")
    attacker = Client(REMOTE_ADDR="10.6.6.6")
    for _ in range(5):  # four guesses at alice, then a sign-in as themselves, again and again
        for _ in range(4):
            sign_in(attacker, "alice", "guess")
        assert sign_in(attacker, "mallory", "mallory-password-1").status_code in (302, 429)
        attacker.post("/accounts/logout/")
    assert sign_in(attacker, "alice", "alice-password-1").status_code == 429


def test_staff_unlock_a_locked_out_user_in_the_admin(alice, auditor, client_for):
    client = Client()
    for _ in range(6):
        sign_in(client, "alice", "wrong-guess")
    assert sign_in(client, "alice", "alice-password-1").status_code == 429
    admin = client_for(auditor)
    changelist = reverse("admin:axes_accessattempt_changelist")
    assert "alice" in admin.get(changelist).content.decode()
    attempts = list(AccessAttempt.objects.values_list("pk", flat=True))
    response = admin.post(
        changelist, {"action": "delete_selected", "_selected_action": attempts, "post": "yes"}
    )
    assert response.status_code == 302 and not AccessAttempt.objects.exists()
    assert sign_in(client, "alice", "alice-password-1").status_code == 302


@pytest.mark.parametrize(
    "target", ["https://evil.example/", "//evil.example/", "/\\evil.example", "javascript:alert(1)"]
)
def test_sign_in_never_redirects_to_another_site(alice, target):
    response = Client().post(
        f"{LOGIN}?next={target}", {"username": "alice", "password": "alice-password-1", "next": target}
    )
    assert response.status_code == 302 and response["Location"] == reverse("chat:home")


def test_forwarded_addresses_count_only_behind_the_proxy(alice, bob, settings):
    settings.NEXUS_LOGIN_ADDRESS_FAILURE_LIMIT = 5
    spoofing = Client(REMOTE_ADDR="10.3.3.3")
    for number in range(6):  # a client inventing a new X-Forwarded-For for every guess
        sign_in(spoofing, f"user{number}", "guess", HTTP_X_FORWARDED_FOR=f"192.0.2.{number}")
    assert sign_in(spoofing, "bob", "bob-password-1").status_code == 429, "no proxy: the header is ignored"
    settings.NEXUS_BEHIND_PROXY = True
    proxy = Client(REMOTE_ADDR="10.0.0.2")  # every request arrives from the proxy
    for number in range(6):
        sign_in(proxy, f"user{number}", "guess", HTTP_X_FORWARDED_FOR=f"192.0.2.{number}, 198.51.100.7")
    assert sign_in(proxy, "bob", "bob-password-1", HTTP_X_FORWARDED_FOR="203.0.113.9").status_code == 302, (
        "other clients of the same proxy still sign in"
    )
    guesser = Client(REMOTE_ADDR="10.0.0.2")
    assert (
        sign_in(guesser, "bob", "bob-password-1", HTTP_X_FORWARDED_FOR="198.51.100.7").status_code == 429
    ), "the guessing client is paused, whatever it put in front of the proxy's entry"


def test_a_page_request_after_signing_out_elsewhere_is_told_so_not_sent_the_login_page(
    alice, alice_session, client_for
):
    """The chat page's send from a tab whose browser signed out in another tab: a 401 in words
    (shown under the message box) instead of a redirect htmx would follow to the login page."""
    client = client_for(alice)
    client.post(reverse("logout"))
    url = reverse("chat:message-create", args=[alice_session.pk])
    response = client.post(url, {"content": "typed before"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 401
    assert response["Content-Type"].startswith("text/plain")
    assert "signed out" in response.content.decode() and "<form" not in response.content.decode()
    assert client.post(url, {"content": "typed before"}).status_code == 302, (
        "a plain request still goes to sign-in"
    )


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("who", ["alice", "nobody-by-that-name"])
def test_a_password_is_hashed_without_holding_a_database_connection(alice, settings, monkeypatch, who):
    """Found by a team review: each sign-in held a pooled PostgreSQL connection through about a
    second of hashing, so 22 people signing in at once took all 20 of a daphne's, and pages of
    people signed in long before waited 10 s and answered 503. (On SQLite, which has no pool,
    the connection is closed and opened again as a pooled one is given back and taken.)"""
    from django.contrib.auth import hashers
    from django.db import connection

    import nexus.settings as project
    from chat import signin

    settings.PASSWORD_HASHERS = project.PASSWORD_HASHERS  # the suite's own are fast ones
    alice.set_password("alice-password-1")
    alice.save()
    monkeypatch.setattr(signin, "pooled", lambda: True)
    held, real = [], hashers.pbkdf2
    monkeypatch.setattr(
        hashers, "pbkdf2", lambda *a, **k: held.append(connection.connection) or real(*a, **k)
    )
    response = sign_in(Client(), who, "alice-password-1")
    assert held and all(c is None for c in held), "no connection held while hashing"
    assert response.status_code == (302 if who == "alice" else 200)


def _form_token(page: str) -> str:
    return re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)


@pytest.mark.parametrize(
    ("target", "lands_on"),
    [("/documents/", "/documents/"), ("//evil.example/", "/"), ("https://evil.example/", "/")],
)
def test_signing_in_from_a_second_tab_after_the_first_lands_signed_in(alice, target, lands_on):
    """Found in review: two tabs at the sign-in page (the session had expired), sign in in one,
    then in the other: signing in renews the CSRF token, so the second tab's form was refused
    with Django's bare "CSRF verification failed. Request aborted." page. Signed in already,
    that tab now goes where it was going (never to another site)."""
    client = Client(enforce_csrf_checks=True)
    first = _form_token(client.get(f"{LOGIN}?next=/").content.decode())
    second = _form_token(client.get(f"{LOGIN}?next={target}").content.decode())
    fields = {"username": "alice", "password": "alice-password-1"}
    assert client.post(LOGIN, {**fields, "next": "/", "csrfmiddlewaretoken": first}).status_code == 302
    response = client.post(LOGIN, {**fields, "next": target, "csrfmiddlewaretoken": second})
    assert response.status_code == 302 and response["Location"] == lands_on


def test_a_form_from_before_signing_in_elsewhere_is_refused_in_plain_words(alice, alice_session):
    """A page loaded before its browser signed in again elsewhere posts a token that is no
    longer valid: the refusal is a Nexus page saying what happened and what to do (a
    sentence for the chat page's own requests), never Django's "CSRF verification failed"."""
    client = Client(enforce_csrf_checks=True)
    stale = _form_token(client.get(LOGIN).content.decode())
    client.post(LOGIN, {"username": "alice", "password": "alice-password-1", "csrfmiddlewaretoken": stale})
    url = reverse("chat:session-rename", args=[alice_session.pk])
    page = client.post(url, {"title": "New", "csrfmiddlewaretoken": stale})
    text = page.content.decode()
    assert page.status_code == 403 and "CSRF" not in text and "DEBUG" not in text
    assert "another tab" in text and "Reload the page" in text and 'name="viewport"' in text
    hx = client.post(url, {"title": "New"}, HTTP_HX_REQUEST="true", HTTP_X_CSRFTOKEN=stale)
    assert hx.status_code == 403 and hx["Content-Type"].startswith("text/plain")
    assert "Reload the page" in hx.content.decode()
    alice_session.refresh_from_db()
    assert alice_session.title != "New"


def test_a_post_from_another_site_is_refused_without_blaming_another_tab(alice, alice_session):
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    token = _form_token(client.get(reverse("chat:documents")).content.decode())
    response = client.post(
        reverse("chat:session-rename", args=[alice_session.pk]),
        {"title": "New", "csrfmiddlewaretoken": token},
        HTTP_ORIGIN="https://evil.example",
        secure=True,
        HTTP_REFERER="https://evil.example/",
    )
    text = response.content.decode()
    assert response.status_code == 403 and "another tab" not in text and "CSRF" not in text
    assert "did not come from a Nexus page" in text


def test_a_wrong_password_keeps_the_user_name_typed(alice):
    """Found in review: after a wrong password the sign-in form came back empty, so a newcomer
    typed their user name again for each typo. It stays (the password does not), and the
    cursor waits in the password box."""
    page = sign_in(Client(), "alice", "typo").content.decode()
    assert "didn&#x27;t match" in page or "didn't match" in page
    username = re.search(r"<input[^>]*id=\"id_username\"[^>]*>", page).group(0)
    password = re.search(r"<input[^>]*id=\"id_password\"[^>]*>", page).group(0)
    assert 'value="alice"' in username and "autofocus" not in username
    assert "value=" not in password and "autofocus" in password
    fresh = Client().get(LOGIN).content.decode()
    assert "autofocus" in re.search(r"<input[^>]*id=\"id_username\"[^>]*>", fresh).group(0)


def test_the_user_name_kept_is_escaped(db):
    page = sign_in(Client(), '"><script>alert(1)</script>', "typo").content.decode()
    assert "<script>alert(1)" not in page and "&quot;&gt;&lt;script&gt;" in page


def test_a_click_after_signing_out_elsewhere_is_not_told_to_send_again(alice, alice_session, client_for):
    """Found in review: a 👍, Stop or Rename from a tab signed out in another tab was told
    "…then send again. What you typed is kept.", though nothing was typed or sent."""
    run = services.message_post(session=alice_session, content="Hi")
    client = client_for(alice)
    client.post(reverse("logout"))
    feedback = reverse("chat:run-feedback", args=[alice_session.pk, run.pk])
    response = client.post(feedback, {"rating": "1"}, HTTP_HX_REQUEST="true")
    text = response.content.decode()
    assert response.status_code == 401 and "signed out" in text
    assert "send again" not in text and "typed" not in text
    sent = client.post(
        reverse("chat:message-create", args=[alice_session.pk]), {"content": "more"}, HTTP_HX_REQUEST="true"
    )
    assert sent.status_code == 401 and "What you typed is kept" in sent.content.decode()
    # Signing in again gives the browser a new token this page lacks: it must be reloaded.
    assert "reload this page" in sent.content.decode() and "reload this page" in text


def test_a_browser_that_sends_no_cookie_is_told_to_allow_them(db):
    """Not "you signed in in another tab": a browser that keeps no cookies has no token at all."""
    response = Client(enforce_csrf_checks=True).post(LOGIN, {"username": "alice", "password": "x"})
    text = response.content.decode()
    assert response.status_code == 403 and "allow cookies" in text and "another tab" not in text
