"""A tool server's form (MCP elicitation) as the person sees and answers it: multi-select enums
(an array of enum items) and titled choices, as `@modelcontextprotocol/server-everything`'s
trigger-elicitation-request asks for them."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from chat import services
from chat.approvals import elicitation_request
from chat.models import Elicitation

pytestmark = pytest.mark.django_db

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Name"},
        "instruments": {
            "type": "array",
            "title": "Instruments",
            "items": {"type": "string", "enum": ["Guitar", "Piano", "Drums"]},
            "default": ["Guitar"],
        },
        "fish": {
            "type": "array",
            "title": "Fish",
            "minItems": 1,
            "maxItems": 2,
            "items": {
                "anyOf": [
                    {"const": "fish-1", "title": "Tuna"},
                    {"const": "fish-2", "title": "Salmon"},
                    {"const": "fish-3", "title": "Trout"},
                ]
            },
            "default": ["fish-1"],
        },
        "hero": {
            "type": "string",
            "title": "Hero",
            "oneOf": [{"const": "hero-1", "title": "Superman"}, {"const": "hero-2", "title": "Wonder Woman"}],
            "default": "hero-1",
        },
        "pet": {"type": "string", "title": "Pet", "enum": ["pet-1", "pet-2"], "enumNames": ["Cats", "Dogs"]},
    },
    "required": ["name"],
}


@pytest.fixture
def asked(alice_session):
    run = services.message_post(session=alice_session, content="What is 17*23?")
    payload = {
        "key": "k1",
        "server": "everything",
        "tool": "trigger-elicitation-request",
        "message": "Please provide inputs",
        "schema": SCHEMA,
    }
    return elicitation_request(run_id=run.pk, payload=payload, sequence=None)


def test_multi_select_enums_are_lists_of_choices_shown_by_their_titles(alice, asked, client_for):
    """An array of enum items was a text box holding the default's Python repr ("['Guitar']"),
    and sent as that string; titled choices showed their codes ("hero-1", "pet-1", "fish-1")."""
    client = client_for(alice)
    url = reverse("chat:elicitation-reply", args=[asked.pk])
    response = client.post(url, {"action": "accept", "name": ""})  # refused: the card comes back
    html = response.content.decode()
    assert "[&#x27;Guitar&#x27;]" not in html and "['Guitar']" not in html
    assert re.search(r'<select name="instruments" multiple>', html), html
    assert re.search(r'<select name="fish" multiple>', html), html
    assert '<option value="Guitar" selected>Guitar</option>' in html
    assert '<option value="fish-1" selected>Tuna</option>' in html
    assert '<option value="hero-2">Wonder Woman</option>' in html
    assert '<option value="pet-1">Cats</option>' in html
    answer = {
        "action": "accept",
        "name": "Ada",
        "instruments": ["Piano", "Drums", "Banjo"],
        "fish": ["fish-2"],
        "hero": "hero-2",
        "pet": "pet-2",
    }
    assert client.post(url, answer).status_code == 200
    assert Elicitation.objects.get(pk=asked.pk).content == {
        "name": "Ada",
        "instruments": ["Piano", "Drums"],
        "fish": ["fish-2"],
        "hero": "hero-2",
        "pet": "pet-2",
    }


def test_a_multi_select_keeps_to_its_item_bounds(alice, asked, client_for):
    client = client_for(alice)
    url = reverse("chat:elicitation-reply", args=[asked.pk])
    response = client.post(url, {"action": "accept", "name": "Ada", "fish": ["fish-1", "fish-2", "fish-3"]})
    assert response.status_code == 400 and "at most 2" in response.content.decode()
    assert Elicitation.objects.get(pk=asked.pk).status == "pending"


BOUNDED = {
    "type": "object",
    "properties": {
        "integer": {"type": "integer", "title": "Integer", "minimum": 1, "maximum": 100, "default": 42},
        "number": {"type": "number", "title": "Number", "minimum": 0, "maximum": 1000},
        "nick": {"type": "string", "title": "Nickname", "minLength": 2, "maxLength": 8},
        "email": {"type": "string", "title": "Email", "format": "email"},
        "homepage": {"type": "string", "title": "Homepage", "format": "uri"},
        "birthdate": {"type": "string", "title": "Birthdate", "format": "date"},
    },
}


def test_a_forms_bounds_and_formats_are_shown_and_kept(alice, alice_session, client_for):
    """ "Integer, from 1 to 100" took 500 and an email field "x", and sent them to the server,
    which had said what it accepts (server-everything's form asks for both)."""
    run = services.message_post(session=alice_session, content="What is 17*23?")
    payload = {"key": "k2", "server": "everything", "tool": "t", "message": "Inputs?", "schema": BOUNDED}
    row = elicitation_request(run_id=run.pk, payload=payload, sequence=None)
    client = client_for(alice)
    url = reverse("chat:elicitation-reply", args=[row.pk])
    good = {
        "action": "accept",
        "integer": "7",
        "number": "2.5",
        "nick": "ada",
        "email": "ada@example.com",
        "homepage": "https://example.com/ada",
        "birthdate": "1815-12-10",
    }
    for name, bad, said in [
        ("integer", "500", "Integer must be from 1 to 100."),
        ("number", "-1", "Number must be from 0 to 1000."),
        ("nick", "a", "Nickname must be at least 2 characters."),
        ("nick", "adalovelace", "Nickname must be at most 8 characters."),
        ("email", "x", "Email must be an email address."),
        ("homepage", "my site", "Homepage must be an address with its scheme"),
        ("birthdate", "10/12/1815", "Birthdate must be a date (YYYY-MM-DD)."),
    ]:
        response = client.post(url, {**good, name: bad})
        html = response.content.decode()
        assert response.status_code == 400 and said in html, (name, bad)
    assert 'type="number" name="integer" value="42" min="1" max="100"' in html
    assert 'type="email" name="email"' in html and 'type="url" name="homepage"' in html
    assert 'type="date" name="birthdate"' in html and 'maxlength="8" minlength="2"' in html
    assert Elicitation.objects.get(pk=row.pk).status == "pending"
    assert client.post(url, good).status_code == 200
    assert Elicitation.objects.get(pk=row.pk).content["integer"] == 7


def test_a_servers_malformed_form_still_draws(alice, alice_session, client_for):
    """A server may send anything as a schema: a format that is a list, bounds that are text,
    items that are not an object. The card is drawn (no 500 for the chat page) and answerable."""
    schema = {
        "type": "object",
        "properties": {
            "a": {"type": "string", "format": ["email"], "minLength": "2", "maxLength": None},
            "b": {"type": "integer", "minimum": "one", "maximum": [5]},
            "c": {"type": "array", "items": ["x"], "default": "Guitar"},
            "d": {"type": "string", "enum": [1, {"x": 1}], "enumNames": ["One"]},
            "e": {"type": "string", "oneOf": ["not an option", {"title": "no const"}]},
        },
    }
    run = services.message_post(session=alice_session, content="What is 17*23?")
    payload = {"key": "k3", "server": "s", "tool": "t", "message": "Inputs?", "schema": schema}
    row = elicitation_request(run_id=run.pk, payload=payload, sequence=None)
    client = client_for(alice)
    page = client.get(reverse("chat:session", args=[alice_session.pk]))
    assert page.status_code == 200
    url = reverse("chat:elicitation-reply", args=[row.pk])
    response = client.post(url, {"action": "accept", "a": "x", "b": "7", "d": "1", "e": "free"})
    assert response.status_code == 200, response.content.decode()
    assert Elicitation.objects.get(pk=row.pk).content == {"a": "x", "b": 7, "c": [], "d": "1", "e": "free"}


def test_a_question_its_run_left_open_is_closed_not_answerable(alice, alice_session, asked, client_for):
    """A run interrupted by a restart was resumed and finished without asking again: its first
    question stayed pending for good, drawn on the finished chat as a live form ("Answer by
    11:27 (0 minutes left)"), and an answer was taken ("Answered by alice") that nothing read."""
    from chat.models import ReasoningRun, TraceEvent

    ReasoningRun.objects.filter(pk=asked.run_id).update(status=ReasoningRun.Status.SUCCEEDED)
    TraceEvent.objects.create(
        run_id=asked.run_id, sequence=1, kind="elicitation.requested", payload={"key": asked.key}
    )
    client = client_for(alice)
    page = client.get(reverse("chat:session", args=[alice_session.pk])).content.decode()
    assert f'id="elicitation-{asked.pk}"' in page
    assert "elicitation-form" not in page and "Dismissed" in page
    url = reverse("chat:elicitation-reply", args=[asked.pk])
    response = client.post(url, {"action": "accept", "name": "Ada"})
    assert response.status_code == 400 and "nothing waits for this question" in response.content.decode()
    assert Elicitation.objects.get(pk=asked.pk).status == "pending"


@pytest.mark.parametrize("address", ["https://[zz]/", "http://[::1", "https://a\uff03b@example.com/"])
def test_a_servers_malformed_url_still_draws(alice, alice_session, client_for, address):
    """A URL-mode question's address is the server's own text, checked only for its scheme:
    one Python cannot split ("https://[zz]/") made the card's host raise, a 500 for the chat
    page on every load and for the reply. The card is drawn without a host and answerable."""
    from chat.models import TraceEvent

    run = services.message_post(session=alice_session, content="What is 17*23?")
    payload = {"key": "k4", "server": "s", "tool": "t", "message": "Open this", "schema": {}, "url": address}
    row = elicitation_request(run_id=run.pk, payload=payload, sequence=1)
    TraceEvent.objects.create(run_id=run.pk, sequence=1, kind="elicitation.requested", payload={"key": "k4"})
    client = client_for(alice)
    page = client.get(reverse("chat:session", args=[alice_session.pk]))
    assert page.status_code == 200
    assert f'id="elicitation-{row.pk}"' in page.content.decode()
    response = client.post(reverse("chat:elicitation-reply", args=[row.pk]), {"action": "decline"})
    assert response.status_code == 200, response.content.decode()
    assert Elicitation.objects.get(pk=row.pk).status == "decline"
