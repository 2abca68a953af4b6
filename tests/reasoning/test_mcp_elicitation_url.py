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
    seen = []

    async def person(message, schema, address):
        seen.append(address)
        return "accept", None

    connection.elicitors.append(person)
    params = types.SimpleNamespace(mode="url", url=url, message="Open this")
    result = asyncio.run(connection._elicit(None, params))
    assert result.action == ("accept" if asked else "decline")
    assert seen == ([url] if asked else [])
