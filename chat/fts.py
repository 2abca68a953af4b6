"""Keeping SQLite's full-text triggers in place across schema changes.

The run search (migration 0007_run_search) and memory recall (0007_memory) index text with
FTS5 tables that triggers keep current. When a later migration changes one of the indexed
tables, Django's SQLite schema editor rebuilds that table, and SQLite drops the table's
triggers with it: the index then silently stops following new rows. After every `migrate`
this puts back any trigger that went missing and rebuilds that index from its tables.
PostgreSQL's indexes are on the tables themselves and survive such changes.
"""

from __future__ import annotations

import importlib
from typing import Any

from django.db import connections


def _indexes() -> list[tuple[str, list[str], list[str]]]:
    """(FTS table, its CREATE TRIGGER statements, the statements that refill it)."""
    search = importlib.import_module("chat.migrations.0007_run_search")
    memory = importlib.import_module("chat.migrations.0007_memory")
    run_triggers = [s for s in search.SQLITE_CREATE if s.lstrip().startswith("CREATE TRIGGER")]
    run_fill = [s for s in search.SQLITE_CREATE if s.lstrip().startswith("INSERT")]
    memory_triggers = [s for s in memory.SQLITE_FTS if s.startswith("CREATE TRIGGER")]
    memory_fill = ["INSERT INTO chat_memory_fts(chat_memory_fts) VALUES ('rebuild')"]
    return [
        ("chat_run_fts", run_triggers, ["DELETE FROM chat_run_fts", *run_fill]),
        ("chat_memory_fts", memory_triggers, memory_fill),
    ]


def _trigger_name(statement: str) -> str:
    return statement.split()[2]


def ensure_sqlite_fulltext(using: str = "default", **_: Any) -> list[str]:
    """Recreate missing triggers and refill their index; returns the indexes it repaired."""
    connection = connections[using]
    if connection.vendor != "sqlite":
        return []
    repaired = []
    with connection.cursor() as cursor:
        cursor.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'trigger')")
        present = {row[0] for row in cursor.fetchall()}
        for table, triggers, fill in _indexes():
            missing = [t for t in triggers if _trigger_name(t) not in present]
            if table not in present or not missing:
                continue
            for statement in missing:
                cursor.execute(statement)
            for statement in fill:
                cursor.execute(statement)
            repaired.append(table)
    return repaired
