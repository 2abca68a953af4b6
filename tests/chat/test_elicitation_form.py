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
