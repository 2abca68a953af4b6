"""The analysis cache: similar questions skip a repeat complexity analysis.

The backend is pluggable (the web app passes one backed by Django's cache, so several
processes share it); the default keeps entries in memory with a time-to-live.
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Protocol


class AnalysisCache(Protocol):
    def get(self, key: str) -> dict[str, Any] | None: ...

    def set(self, key: str, value: dict[str, Any], ttl: int) -> None: ...


class MemoryCache:
    """A small LRU with per-entry expiry."""

    def __init__(self, max_entries: int = 1024, clock: Callable[[], float] = time.monotonic) -> None:
        self._data: OrderedDict[str, tuple[float, dict[str, Any]]] = OrderedDict()
        self.max_entries = max_entries
        self.clock = clock

    def get(self, key: str) -> dict[str, Any] | None:
        entry = self._data.get(key)
        if entry is None:
            return None
        expires, value = entry
        if self.clock() >= expires:
            del self._data[key]
            return None
        self._data.move_to_end(key)
        return value

    def set(self, key: str, value: dict[str, Any], ttl: int) -> None:
        self._data[key] = (self.clock() + ttl, value)
        self._data.move_to_end(key)
        while len(self._data) > self.max_entries:
            self._data.popitem(last=False)


def analysis_key(query: str, tool_names: list[str], model: str) -> str:
    """Same words (ignoring case and spacing), same tools, same model: same analysis."""
    normalised = " ".join(query.lower().split())
    material = "\n".join([model, normalised, ",".join(sorted(tool_names))])
    return "nexus:analysis:" + hashlib.sha256(material.encode()).hexdigest()
