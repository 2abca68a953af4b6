"""Long-term memory in the database: recall by full text, and what a person controls.

A run gets a `DjangoMemoryStore` bound to the person who asked (and the chat): it recalls
only their items and those staff promoted to the team, so another person's memories cannot
reach a run by construction. Recall asks the database's full-text index for candidates (FTS5
on SQLite, a GIN index on a generated tsvector column on PostgreSQL; see migration 0007),
then keeps the ones the engine's relevance rule accepts (reasoning.memory.rank), so both
databases recall the same.

The Memory page lists a person's episodes, facts and lessons (procedural memory); they
delete any of them, or everything, and a deleted item is gone: the row, its index entry, and
every episode derived from it (the exchange that told a fact, and later exchanges that recalled
it, whose answers may repeat it), so it cannot come back through a summary either. Each run
stores once: a run resumed after its worker died replaces what it stored, never adds a copy.
"""

from __future__ import annotations

from typing import Any

from channels.db import database_sync_to_async
from django.db import connection, transaction
from django.db.models import Q, QuerySet

from chat.models import ChatSession, Memory, ReasoningRun, Reflection
from reasoning.memory import RECALL_LIMIT, MemoryItem, rank, search_words

CANDIDATES = 60
# A question's first words searched for (pairs of them: at most 28 groups).
MAX_WORDS = 8


def memories_visible_to(user: Any) -> QuerySet[Memory]:
    return Memory.objects.filter(Q(owner=user) | Q(shared=True))


def _pairs(words: list[str]) -> list[tuple[str, ...]]:
    """The groups of words a relevant item must contain at least one of: any two of the
    question's words (the relevance rule needs two shared words), or the one word."""
    words = words[:MAX_WORDS]
    if len(words) < 2:
        return [tuple(words)] if words else []
    return [(a, b) for i, a in enumerate(words) for b in words[i + 1 :]]


def _candidate_ids(user_id: int, words: list[str]) -> list[int]:
    """Items holding at least two of the question's words (one for a one-word question), best
    ranked first; asking the index for pairs keeps common words from matching thousands."""
    groups = _pairs(words)
    if not groups:
        return []
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(*_postgres_candidates(user_id, words[:MAX_WORDS], groups))
        elif connection.vendor == "sqlite":
            query = " OR ".join("(" + " AND ".join(f'"{w}"' for w in group) + ")" for group in groups)
            cursor.execute(
                "SELECT m.id FROM chat_memory_fts JOIN chat_memory m ON m.id = chat_memory_fts.rowid "
                "WHERE chat_memory_fts MATCH %s AND (m.owner_id = %s OR m.shared) "
                "ORDER BY bm25(chat_memory_fts) LIMIT %s",
                [query, user_id, CANDIDATES],
            )
        else:  # another database: a plain scan of the person's items
            visible = Memory.objects.filter(Q(owner_id=user_id) | Q(shared=True))
            return list(visible.values_list("id", flat=True)[:CANDIDATES])
        return [row[0] for row in cursor.fetchall()]


def _postgres_candidates(user_id: int, words: list[str], groups: list[tuple[str, ...]]) -> tuple[str, list]:
    """The query for PostgreSQL's candidates, ranked like FTS5's bm25 ranks them on SQLite:
    each shared word weighs by how rare it is among the matches, and short items first
    (ts_rank knows neither, so among a thousand items sharing two common words the one that
    also shares a rare word could fall out of the candidates)."""
    query = " | ".join("(" + " & ".join(group) + ")" for group in groups)
    weights = ", ".join(
        f"ln(1 + (count(*) + 1.0) / (1 + count(*) FILTER "
        f"(WHERE search @@ to_tsquery('english', %s))))::float8 AS w{i}"
        for i in range(len(words))
    )
    score = " + ".join(f"d.w{i} * (m.search @@ to_tsquery('english', %s))::int" for i in range(len(words)))
    # Only placeholders and column numbers are put together here; every word is a parameter.
    sql = " ".join(
        [
            "WITH m AS (SELECT id, search FROM chat_memory WHERE search @@ to_tsquery('english', %s)",
            "AND (owner_id = %s OR shared)),",
            "d AS MATERIALIZED (SELECT",
            weights,
            "FROM m) SELECT m.id FROM m, d ORDER BY (",
            score,
            ") / sqrt(greatest(length(m.search), 1)) DESC, m.id DESC LIMIT %s",
        ]
    )
    return sql, [query, user_id, *words, *words, CANDIDATES]


def _item(memory: Memory, viewer_id: int) -> MemoryItem:
    """`memory` as the person `viewer_id` recalls it: the chat it came from is named only to
    its owner (a teammate recalls a shared item's words, not the title of its owner's chat)."""
    own = memory.owner_id == viewer_id
    return MemoryItem(
        kind=memory.kind,
        text=memory.text,
        source=memory.source,
        confidence=memory.confidence,
        id=memory.pk,
        chat=memory.session.title if own and memory.session_id and memory.session else "",
        created=memory.created_at.isoformat(),
        shared=memory.shared,
    )


def memory_recall(
    *, user: Any, query: str, limit: int = RECALL_LIMIT, exclude_run: ReasoningRun | None = None
) -> list[MemoryItem]:
    """The person's (and the team's promoted) memories relevant to `query`, best first; none
    that `exclude_run` itself stored (a resumed run does not recall its own first answer)."""
    ids = _candidate_ids(user.pk, search_words(query))
    rows = Memory.objects.filter(Q(owner=user) | Q(shared=True), pk__in=ids).select_related("session")
    if exclude_run is not None:
        rows = rows.exclude(run=exclude_run)
    by_id = {m.pk: m for m in rows}
    return rank(query, [_item(by_id[i], user.pk) for i in ids if i in by_id], limit=limit)


def memory_store(
    *, user: Any, session: ChatSession | None, run: ReasoningRun | None, items: list[MemoryItem]
) -> list[MemoryItem]:
    """Keep one exchange's items; with a `run`, replacing whatever that run stored before, so a
    run resumed after its worker died is remembered once. Episodes are linked to the facts
    stored with them and to the items they name in `sources` (what their run recalled)."""
    with transaction.atomic():
        if run is not None:
            Memory.objects.filter(owner=user, run=run).delete()
        created = [
            Memory.objects.create(
                owner=user,
                kind=item.kind,
                text=item.text,
                source=item.source[:200],
                confidence=min(1.0, max(0.0, item.confidence)),
                session=session,
                run=run,
            )
            for item in items
        ]
        facts = [memory.pk for memory in created if memory.kind == Memory.Kind.SEMANTIC]
        for memory, item in zip(created, items, strict=True):
            if memory.kind != Memory.Kind.EPISODIC:
                continue
            recalled = [int(i) for i in item.sources if str(i).isdigit()]
            known = memories_visible_to(user).filter(pk__in=recalled).values_list("pk", flat=True)
            memory.sources.set([*facts, *known])
    return [_item(memory, user.pk) for memory in created]


class DjangoMemoryStore:
    """The engine's MemoryStore for one person and one chat."""

    def __init__(
        self, *, user: Any, session: ChatSession | None = None, run: ReasoningRun | None = None
    ) -> None:
        self.user = user
        self.session = session
        self.run = run

    async def recall(self, query: str, *, limit: int = RECALL_LIMIT) -> list[MemoryItem]:
        return await database_sync_to_async(memory_recall)(
            user=self.user, query=query, limit=limit, exclude_run=self.run
        )

    async def remember(self, items: list[MemoryItem]) -> list[MemoryItem]:
        return await database_sync_to_async(memory_store)(
            user=self.user, session=self.session, run=self.run, items=items
        )


# --- what the person controls (the Memory page) ---------------------------------------------


def lessons_of(user: Any) -> list[dict[str, Any]]:
    """The lessons the person's own runs taught (procedural memory), newest first, unique."""
    seen: dict[str, dict[str, Any]] = {}
    reflections = (
        Reflection.objects.filter(run__session__owner=user).select_related("run").order_by("-created_at")
    )
    for reflection in reflections:
        for lesson in reflection.lessons or []:
            seen.setdefault(
                lesson, {"text": lesson, "created_at": reflection.created_at, "run": reflection.run}
            )
    return list(seen.values())


def with_derived(ids: set[int]) -> set[int]:
    """`ids` and every episode derived from them, and from those in turn (a fact, the exchange
    that told it, a later exchange that recalled that one, ...)."""
    through = Memory.sources.through
    found, frontier = set(ids), set(ids)
    while frontier:
        derived = set(
            through.objects.filter(to_memory_id__in=frontier).values_list("from_memory_id", flat=True)
        )
        frontier = derived - found
        found |= frontier
    return found


def memories_erase(ids: set[int]) -> set[int]:
    """Delete the items and every episode derived from them (the ids deleted): the one way
    memories are deleted, for the Memory page and the admin alike."""
    with transaction.atomic():
        doomed = with_derived(ids)
        Memory.objects.filter(pk__in=doomed).delete()
    return doomed


def memory_delete(*, user: Any, memory_id: int) -> int | None:
    """Delete one of the person's own memories and the episodes derived from it; how many
    episodes went with it, or None when there is no such item of theirs."""
    with transaction.atomic():
        if not Memory.objects.filter(owner=user, pk=memory_id).exists():
            return None
        return len(memories_erase({memory_id})) - 1


def lesson_forget(*, user: Any, text: str) -> int:
    """Remove a lesson from every reflection of the person's runs; how many held it."""
    changed = 0
    with transaction.atomic():
        for reflection in Reflection.objects.filter(run__session__owner=user).select_for_update():
            if text in (reflection.lessons or []):
                reflection.lessons = [lesson for lesson in reflection.lessons if lesson != text]
                reflection.save(update_fields=["lessons"])
                changed += 1
    return changed


def memory_forget_all(*, user: Any) -> int:
    """Everything Nexus remembers about the person: their memories and their runs' lessons."""
    with transaction.atomic():
        own = set(Memory.objects.filter(owner=user).values_list("pk", flat=True))
        memories_erase(own)
        Reflection.objects.filter(run__session__owner=user).update(lessons=[])
    return len(own)


def memory_promote(*, memories: QuerySet[Memory], by: Any) -> int:
    """Staff share reviewed items with the team."""
    return memories.filter(shared=False).update(shared=True, promoted_by=by)
