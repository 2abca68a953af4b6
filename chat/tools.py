"""The tools a user's runs may use."""

from __future__ import annotations

from typing import Any

from django.conf import settings

from reasoning.tools.local import builtin_provider
from reasoning.tools.registry import ToolRegistry


def registry_for(user: Any) -> ToolRegistry:
    config = settings.NEXUS_REASONING
    return ToolRegistry(
        [builtin_provider()], timeout=config.tool_timeout, max_result_chars=config.max_tool_result_chars
    )
