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
from django.db.models.expressions import RawSQL
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


# Up to this many matching runs are fetched as a list of ids (the runs are then read by
# primary key); more than that, and the list is filtered by the subquery instead.
ID_LIST_LIMIT = 20_000


def _postgres_matches(text: str, also: QuerySet | None) -> Q:
    query = SearchQuery(text, config=CONFIG, search_type="websearch")

    def hits(model: type, *expressions: object) -> QuerySet:
        found = model.objects.annotate(_doc=SearchVector(*expressions, config=CONFIG)).filter(_doc=query)
        return found.order_by()

    messages = hits(Message, "content")
    # One UNION of index scans. An OR of IN-subqueries instead would make PostgreSQL test
    # every run, a full scan of the run table per search.
    parts = [
        ReasoningRun.objects.filter(user_message__in=messages.values("pk")).order_by().values("pk"),
        messages.filter(run__isnull=False).values("run_id"),
        hits(ToolExecution, tool_document()).values("run_id"),
        hits(LLMCall, "error").values("run_id"),
        hits(ReasoningRun, "error").values("pk"),
    ]
    if also is not None:
        parts.append(also.order_by())
    compiled = [part.query.sql_with_params() for part in parts]
    sql = " UNION ".join(f"({part_sql})" for part_sql, _ in compiled)
    params = [param for _, part_params in compiled for param in part_params]
    with connection.cursor() as cursor:
        # The SQL is the ORM's own compilation of the querysets above; every value is a parameter.
        limited = f"SELECT * FROM ({sql}) AS hits LIMIT %s"  # noqa: S608  # nosec B608
        cursor.execute(limited, [*params, ID_LIST_LIMIT + 1])
        ids = [row[0] for row in cursor.fetchall()]
    if len(ids) <= ID_LIST_LIMIT:
        return Q(pk__in=ids)
    return Q(pk__in=RawSQL(sql, params))  # noqa: S611  # nosec B611 - SQL built by the ORM, values as parameters


def fts5_query(text: str) -> str:
    """The words of `text` as an FTS5 query that matches runs containing all of them (each
    word quoted, so no user input is read as FTS5 syntax)."""
    return " ".join(f'"{word}"' for word in _WORD.findall(text))


def _sqlite_matches(text: str, also: QuerySet | None) -> Q:
    query = fts5_query(text)
    extra = Q(pk__in=also) if also is not None else Q(pk__in=[])
    if not query:
        return extra
    with connection.cursor() as cursor:
        cursor.execute("SELECT DISTINCT run_id FROM chat_run_fts WHERE chat_run_fts MATCH %s", [query])
        ids = [row[0] for row in cursor.fetchall()]
    return Q(pk__in=ids) | extra


def run_matches(text: str, *, also: QuerySet | None = None) -> Q:
    """A filter for the runs whose question, answer, tool calls or errors contain every word
    of `text` (within one of those pieces), or whose ids `also` (a values("pk") queryset) gives."""
    text = text.strip()
    if not text:
        return Q()
    if connection.vendor == "postgresql":
        return _postgres_matches(text, also)
    return _sqlite_matches(text, also)


def run_search(queryset: QuerySet[ReasoningRun], text: str) -> QuerySet[ReasoningRun]:
    """The runs of `queryset` that `run_matches(text)`."""
    return queryset.filter(run_matches(text))
