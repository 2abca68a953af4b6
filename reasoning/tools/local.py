"""In-process tools: Python callables offered to the model like any other tool."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from typing import Any

from reasoning.tools.builtin import CALCULATOR_DESCRIPTION, CALCULATOR_SCHEMA, CLOCK_SCHEMA, calculator, clock
from reasoning.tools.registry import CachePolicy, ToolOutput, ToolProvider, ToolSpec


class LocalToolProvider(ToolProvider):
    """Tools backed by plain functions (sync or async) taking keyword arguments."""

    def __init__(self, name: str = "local") -> None:
        self.name = name
        self._tools: dict[str, tuple[ToolSpec, Callable[..., Any]]] = {}

    def add(
        self,
        name: str,
        function: Callable[..., Any],
        *,
        description: str = "",
        input_schema: dict[str, Any] | None = None,
        cache_policy: CachePolicy = "cache",
    ) -> None:
        spec = ToolSpec(
            name=name,
            description=description or (inspect.getdoc(function) or name).splitlines()[0],
            input_schema=input_schema or {"type": "object", "properties": {}},
            server=self.name,
            tool=name,
            cache_policy=cache_policy,
        )
        self._tools[name] = (spec, function)

    async def list_tools(self) -> list[ToolSpec]:
        return [spec for spec, _ in self._tools.values()]

    async def call_tool(self, spec: ToolSpec, arguments: dict[str, Any]) -> ToolOutput:
        _, function = self._tools[spec.provider_tool]
        if inspect.iscoroutinefunction(function):
            result = await function(**arguments)
        else:
            # Sync tools run in a thread so a slow one cannot stall other steps.
            result = await asyncio.to_thread(function, **arguments)
        return result if isinstance(result, ToolOutput) else ToolOutput(str(result))


def builtin_provider() -> LocalToolProvider:
    """The calculator and the clock, in process (the MCP server offers the same tools)."""
    provider = LocalToolProvider("builtin")
    provider.add(
        "calculator",
        calculator,
        description=CALCULATOR_DESCRIPTION,
        input_schema=CALCULATOR_SCHEMA,
    )
    provider.add(
        "clock",
        clock,
        description="The current date and time in a time zone.",
        input_schema=CLOCK_SCHEMA,
        cache_policy="no-cache",
    )
    return provider
