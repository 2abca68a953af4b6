"""Tool names as people read them.

The engine and the models know a tool as `server__name` ("nexus__calculator"); people see
"Calculator (Nexus)". Text meant for people (the quality check's reasons, a model's own
reasoning about which tool it used) passes through `humanize_tool_names` so no raw name
reaches the page.
"""

from __future__ import annotations

import re

from reasoning.tools.mcp_config import SEPARATOR

# A server-qualified tool name inside free text: "nexus__calculator", "github__list_issues".
_QUALIFIED = re.compile(r"\b([A-Za-z0-9][A-Za-z0-9-]*)" + SEPARATOR + r"([A-Za-z0-9_]+)\b")


def tool_label(name: str, server: str = "") -> str:
    """A tool as people read it: "nexus__calculator" → "Calculator (Nexus)". A `server` given
    is the one that listed it, whatever the tool's own name says: a server's tool named
    "nexus__calculator" is "Nexus calculator (Weird)", never Nexus's own calculator."""
    if server and name.startswith(server + SEPARATOR):
        name = name[len(server) + len(SEPARATOR) :]  # the registry's name for it
    elif not server and SEPARATOR in name:
        server, name = name.split(SEPARATOR, 1)
    label = " ".join(name.replace("_", " ").split()).capitalize() or "Tool"
    return f"{label} ({server.replace('_', ' ').replace('-', ' ').title()})" if server else label


def humanize_tool_names(text: str) -> str:
    """Every server-qualified tool name in `text` replaced by its label."""
    return _QUALIFIED.sub(lambda m: tool_label(m.group(2), m.group(1)), text or "")
