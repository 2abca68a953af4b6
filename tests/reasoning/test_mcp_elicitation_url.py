"""A server's request that the person open a URL: only an address with a readable host reaches
the person (the card shows that host); anything else is declined without asking."""

import asyncio
import types

import pytest

from reasoning.tools.mcp_config import MCPServerConfig
from reasoning.tools.mcp_pool import MCPConnection


@pytest.mark.parametrize(
    ("url", "asked"),
    [
        ("https://example.com/authorize", True),
        ("javascript:alert(1)", False),
        ("https://[zz]/", False),
        ("http://[::1", False),
        ("https://a\uff03b@example.com/", False),
        ("https:///no-host", False),
    ],
)
def test_only_an_address_with_a_host_reaches_the_person(url, asked):
    connection = MCPConnection(MCPServerConfig(name="s", command="true"))
    seen, refused = [], []

    async def asker(message, schema, address, **refusal):
        if refusal:  # not asked: told, for the run's trace, what was refused
            refused.append(refusal["refused"])
            return "decline", None
        seen.append(address)
        return "accept", None

    connection.elicitors.append(asker)
    params = types.SimpleNamespace(mode="url", url=url, message="Open this")
    result = asyncio.run(connection._elicit(None, params))
    assert result.action == ("accept" if asked else "decline")
    assert seen == ([url] if asked else [])
    assert refused == ([] if asked else ["an address that is not a web page (http or https) to open"])


TOKEN = "tok-0123456789abcdef"


def test_a_servers_secret_never_reaches_the_person_through_its_question():
    """The question's words were redacted, but not its form (titles, descriptions, choices) nor
    the address it asks the person to open: a server that wrote its token there showed it on
    the card, and it was stored with the run's trace."""
    connection = MCPConnection(MCPServerConfig(name="s", command="true", secret_values=(TOKEN,)))
    seen = []

    async def person(message, schema, address):
        seen.append((message, schema, address))
        return "decline", None

    connection.elicitors.append(person)
    schema = {
        "type": "object",
        "properties": {
            "key": {"type": "string", "title": f"Key (default {TOKEN})", "default": TOKEN},
            "scope": {"type": "string", "enum": ["read", TOKEN.upper()], "description": f"for {TOKEN}"},
        },
    }
    form = types.SimpleNamespace(mode="form", message=f"Confirm {TOKEN}", requested_schema=schema)
    asyncio.run(connection._elicit(None, form))
    url = types.SimpleNamespace(
        mode="url", url=f"https://example.com/authorize?token={TOKEN}", message="Open"
    )
    asyncio.run(connection._elicit(None, url))
    assert len(seen) == 2
    assert TOKEN.lower() not in repr(seen).lower(), seen
    assert seen[0][1]["properties"]["key"]["title"] == "Key (default [redacted])"
    assert seen[1][2] == "https://example.com/authorize?token=[redacted]"
