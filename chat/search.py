"""Full-text search over what runs said and did: questions, answers, tool calls (name,
arguments, result, error) and errors (the run's, a model call's).

PostgreSQL: expression GIN indexes on `to_tsvector('simple', ...)` of each searched column
(migration 0007), queried with the identical expression so the planner uses them.
SQLite (the embedded mode): one FTS5 table, `chat_run_fts`, kept current by triggers on the
searched tables (same migration). Either way the result is a set of run ids that combines
with the admin's other filters.
"""

from __future__ import annotations

import re

from django.contrib.postgres.search import SearchQuery, SearchVector
from django.db import connection
from django.db.models import Q, QuerySet, TextField, Value
from django.db.models.functions import Cast, Concat

from chat.models import LLMCall, Message, ReasoningRun, ToolExecution

CONFIG = "simple"  # no stemming or stop words: identifiers, numbers and error codes stay whole
_WORD = re.compile(r"\w+", re.UNICODE)


def tool_document() -> Concat:
    """The searched text of a tool call; the migration's index is built on this expression."""
    return Concat(
        "tool",
        Value(" "),
        Cast("arguments", output_field=TextField()),
        Value(" "),
        "result",
        Value(" "),
        "error",
        output_field=TextField(),
    )


def _postgres_matches(text: str) -> Q:
    query = SearchQuery(text, config=CONFIG, search_type="websearch")

    def hits(model: type, *expressions: object) -> QuerySet:
        return model.objects.annotate(_doc=SearchVector(*expressions, config=CONFIG)).filter(_doc=query)

    messages = hits(Message, "content")
    return (
        Q(user_message__in=messages.values("pk"))
        | Q(pk__in=messages.filter(run__isnull=False).values("run_id"))
        | Q(pk__in=hits(ToolExecution, tool_document()).values("run_id"))
        | Q(pk__in=hits(LLMCall, "error").values("run_id"))
        | Q(pk__in=hits(ReasoningRun, "error").values("pk"))
    )


def fts5_query(text: str) -> str:
    """The words of `text` as an FTS5 query that matches runs containing all of them (each
    word quoted, so no user input is read as FTS5 syntax)."""
    return " ".join(f'"{word}"' for word in _WORD.findall(text))


def _sqlite_matches(text: str) -> Q:
    query = fts5_query(text)
    if not query:
        return Q(pk__in=[])
    with connection.cursor() as cursor:
        cursor.execute("SELECT DISTINCT run_id FROM chat_run_fts WHERE chat_run_fts MATCH %s", [query])
        ids = [row[0] for row in cursor.fetchall()]
    return Q(pk__in=ids)


def run_matches(text: str) -> Q:
    """A filter for the runs whose question, answer, tool calls or errors contain every word
    of `text` (within one of those pieces)."""
    text = text.strip()
    if not text:
        return Q()
    return _postgres_matches(text) if connection.vendor == "postgresql" else _sqlite_matches(text)


def run_search(queryset: QuerySet[ReasoningRun], text: str) -> QuerySet[ReasoningRun]:
    """The runs of `queryset` that `run_matches(text)`."""
    return queryset.filter(run_matches(text))
