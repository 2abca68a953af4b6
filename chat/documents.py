"""Team documents: who may see what, and ranked search that returns passages with titles.

On PostgreSQL, full-text search ranks the documents; on SQLite a BM25-style ranking in
Python does. Either way the answer is a few passages, each with its document's title.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.db.models import Func, IntegerField, Q, QuerySet, Sum
from django.utils import timezone

from chat.inputs import clean_title
from chat.models import Document
from reasoning.text import keywords, paragraphs, search_hit

PASSAGE_CHARS = 700


@dataclass
class Passage:
    document: Document
    text: str
    score: float

    def as_text(self) -> str:
        return search_hit(self.document.title, self.document.shared, self.document.uri, self.text)


def documents_visible_to(user: Any) -> QuerySet[Document]:
    return Document.objects.filter(Q(owner=user) | Q(shared=True)).select_related("owner")


def document_get_for_user(user: Any, document_id: int) -> Document | None:
    return documents_visible_to(user).filter(pk=document_id).first()


class OctetLength(Func):
    """A text column's size in bytes (PostgreSQL reads it from the value's header)."""

    function = "octet_length"
    output_field = IntegerField()

    def as_sqlite(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        return self.as_sql(compiler, connection, template="length(CAST(%(expressions)s AS BLOB))", **extra)


def _check_storage(owner: Any, content: str, *, replacing: Document | None) -> None:
    """Refuse a document that would take its owner past NEXUS_MAX_DOCUMENT_STORAGE_BYTES: one
    account could otherwise store without end, and every run's document search (and, on
    SQLite, its scoring of every passage) reads what it stored."""
    limit = settings.NEXUS_MAX_DOCUMENT_STORAGE_BYTES
    if not limit:
        return
    others = Document.objects.filter(owner=owner)
    if replacing is not None:
        others = others.exclude(pk=replacing.pk)
    stored = others.aggregate(size=Sum(OctetLength("content")))["size"] or 0
    size = len(content.encode())
    if stored + size > limit:
        raise ValidationError(
            f"Your documents already hold {size_text(stored)}; with this one ({size_text(size)}) they "
            f"would pass the {size_text(limit)} each person may keep. Delete some you no longer need, "
            "then add it."
        )


def size_text(size: int) -> str:
    """A size for people, rounded down: a size just under a limit never reads as the limit."""
    if size < 1000:
        return f"{size:,} bytes"
    if size < 1_000_000:
        return f"{math.floor(size / 100) / 10:g} KB"
    return f"{math.floor(size / 10_000) / 100:g} MB"


def document_create(
    *,
    owner: Any,
    title: str,
    content: str,
    shared: bool = False,
    format: str = Document.Format.MARKDOWN,
    replace: bool = False,
) -> Document:
    """A new document, or with `replace` a new version of the owner's document of that title.

    Without `replace` an existing title is refused: an upload that silently overwrote a
    document (and its sharing) would take it from teammates who rely on it.
    """
    title = clean_title(title)
    if not (content or "").strip():
        raise ValidationError("The document is empty: choose a file, or paste its text.")
    if not title:
        raise ValidationError("Give the pasted text a title (a file takes its name).")
    if len(content.encode()) > settings.NEXUS_MAX_DOCUMENT_BYTES:
        raise ValidationError(f"Documents may be at most {settings.NEXUS_MAX_DOCUMENT_BYTES:,} bytes.")
    if "\x00" in content:
        raise ValidationError("That looks like a binary file; upload Markdown or plain text.")
    with transaction.atomic():
        # One upload of the owner's at a time from the storage check to the store: two at once
        # each read what the owner kept before the other's, and together went past the cap.
        list(
            get_user_model()
            .objects.select_for_update(no_key=True)
            .filter(pk=owner.pk)
            .values_list("pk", flat=True)
        )
        return _store(owner, title, content, shared=shared, format=format, replace=replace)


def _store(owner: Any, title: str, content: str, *, shared: bool, format: str, replace: bool) -> Document:
    # Titles differing only in letter case name one document (a mention matches either).
    document = Document.objects.filter(owner=owner, title__iexact=title).first()
    if document is not None and not replace:
        raise ValidationError(
            f"You already have a document called “{document.title}”. Choose another title, or tick "
            "“Replace my document of the same title”."
        )
    _check_storage(owner, content, replacing=document)
    if document is None:
        document = Document.objects.create(
            owner=owner, title=title, content=content, shared=shared, format=format
        )
        document.replaced = False
        return document
    document.title, document.content, document.shared, document.format = title, content, shared, format
    document.updated_at = timezone.now()
    document.save(update_fields=["title", "content", "shared", "format", "updated_at"])
    document.replaced = True  # for the message the uploader sees
    return document


def passages_of(document: Document) -> list[str]:
    """Paragraph-sized pieces of a document, for quoting (each under its heading)."""
    return paragraphs(document.content, limit=PASSAGE_CHARS) or [document.content[:PASSAGE_CHARS]]


def _candidates(user: Any, query: str) -> list[Document]:
    visible = documents_visible_to(user)
    if connection.vendor == "postgresql":
        from django.contrib.postgres.search import SearchQuery, SearchRank, SearchVector

        vector = SearchVector("title", weight="A", config="english") + SearchVector(
            "content", weight="B", config="english"
        )
        search = SearchQuery(query, search_type="websearch", config="english")
        ranked = visible.annotate(rank=SearchRank(vector, search)).filter(rank__gt=0).order_by("-rank")[:20]
        found = list(ranked)
        if found:
            return found
        # Nothing matched every word: fall back to any word.
        words = keywords(query)
        if not words:
            return []
        either = SearchQuery(" | ".join(words), search_type="raw", config="english")
        return list(
            visible.annotate(rank=SearchRank(vector, either)).filter(rank__gt=0).order_by("-rank")[:20]
        )
    return list(visible[:500])


def document_search(user: Any, query: str, *, limit: int = 5) -> list[Passage]:
    """The best passages for `query` among the documents `user` may see."""
    wanted = keywords(query)
    if not wanted:
        return []
    documents = _candidates(user, query)
    pieces = [
        (document, text, Counter(keywords(document.title + " " + text)))
        for document in documents
        for text in passages_of(document)
    ]
    if not pieces:
        return []
    frequency = Counter(word for _, _, counts in pieces for word in set(counts))
    average = sum(sum(c.values()) for _, _, c in pieces) / len(pieces)
    scored = []
    for document, text, counts in pieces:
        length = sum(counts.values()) or 1
        score = 0.0
        for word in set(wanted):
            tf = counts.get(word, 0)
            if not tf:
                continue
            idf = math.log(1 + (len(pieces) - frequency[word] + 0.5) / (frequency[word] + 0.5))
            score += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * length / average))
        if score > 0:
            scored.append(Passage(document, text, round(score, 4)))
    scored.sort(key=lambda p: (-p.score, p.document.title))
    return scored[:limit]


def format_results(passages: list[Passage], query: str) -> str:
    if not passages:
        return f"No document matches {query!r}."
    return "\n\n".join(p.as_text() for p in passages)
