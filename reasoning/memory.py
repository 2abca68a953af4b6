"""Long-term memory as the engine sees it: items, a store it is given, and relevance.

The engine never stores anything itself: the host hands a run a `MemoryStore` already bound
to the person asking (the web app's store reads only their items and those staff promoted to
the team), so privacy is decided outside the engine and cannot be forgotten inside it.
Relevance is one local function both stores use on top of their full-text search: an item
comes back only when it shares enough of the question's content words, which keeps recall
precise (an item that merely shares "the" or "team" never reaches a prompt).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Protocol

EPISODIC = "episodic"
SEMANTIC = "semantic"
PROCEDURAL = "procedural"
KINDS = (EPISODIC, SEMANTIC, PROCEDURAL)

RECALL_LIMIT = 5
# An item must cover this share of the question's content words (at least MIN_SHARED of them,
# or all of them for a one-word question) to be recalled.
MIN_COVERAGE = 0.34
MIN_SHARED = 2
# Ranking (see `rank`): how much an item's own extra words count against it, and the share of
# the best item's score another item needs to be recalled with it. Set on the tuning split of
# tests/bench/memory_set.py, checked on its held-out split.
DENSITY_WEIGHT = 0.5
RELATIVE_CUT = 0.6

_WORD = re.compile(r"[a-z0-9][a-z0-9\-]*[a-z0-9]|[a-z0-9]")
STOPWORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "all",
        "also",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "him",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "me",
        "more",
        "most",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "yourself",
        "please",
        "tell",
        "know",
        "need",
        "want",
        "like",
        "get",
        "got",
        "make",
        "use",
        "used",
        "using",
        "one",
        "two",
        "new",
        "way",
        "thing",
        "things",
        "something",
        "anything",
        "give",
        "show",
        "let",
        "lets",
        "us",
        "nexus",
        "remember",
        "again",
        "still",
        "ever",
        "much",
        "many",
        "well",
        "really",
        "just",
        "okay",
        "ok",
        "hi",
        "hello",
        "thanks",
        "thank",
    ]
)


def stem(word: str) -> str:
    """A crude English stem, enough for "deploys"/"deploying"/"deployed" to meet."""
    for suffix in ("ingly", "edly", "ing", "ies", "ied", "ed", "es", "s"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)] + ("y" if suffix in ("ies", "ied") else "")
    return word


def terms(text: str) -> list[str]:
    """The content words of `text`, lower-cased and stemmed, in order, without repeats."""
    words = (stem(w) for w in _WORD.findall((text or "").lower()) if w not in STOPWORDS and len(w) > 1)
    return list(dict.fromkeys(words))


def search_words(text: str) -> list[str]:
    """The question's content words as a full-text index should see them: unstemmed (the
    index stems), letters and digits only (safe to put in any full-text query syntax)."""
    words = re.findall(r"[a-z0-9]+", (text or "").lower())
    return list(dict.fromkeys(w for w in words if w not in STOPWORDS and len(w) > 1))[:24]


def relevance(query_terms: list[str], text: str | set[str]) -> float:
    """Share of the question's content words the item (its text, or its terms) contains (0
    when too few are shared)."""
    if not query_terms:
        return 0.0
    own = text if isinstance(text, set) else set(terms(text))
    shared = sum(1 for term in query_terms if term in own)
    needed = min(MIN_SHARED, len(query_terms))
    coverage = shared / len(query_terms)
    if shared < needed or coverage < MIN_COVERAGE:
        return 0.0
    return round(coverage, 3)


@dataclass
class MemoryItem:
    """One thing Nexus remembers. `source` says where it came from (a chat, a tool, the person);
    `chat` names the conversation an episode happened in. `sources` are the ids of the items an
    episode was derived from (what its run recalled): its answer may repeat them, so forgetting
    one of them forgets the episode too."""

    kind: str
    text: str
    source: str = ""
    confidence: float = 1.0
    id: int | str | None = None
    chat: str = ""
    created: str = ""
    shared: bool = False
    score: float = 0.0
    sources: list[int | str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "text": self.text,
            "source": self.source,
            "confidence": self.confidence,
            "chat": self.chat,
            "created": self.created,
            "shared": self.shared,
            "score": self.score,
        }


class MemoryStore(Protocol):
    """What the host gives a run: recall for this person, and storing new items for them."""

    async def recall(self, query: str, *, limit: int = RECALL_LIMIT) -> list[MemoryItem]:
        """The items most relevant to `query`, best first; never another person's items."""
        ...

    async def remember(self, items: list[MemoryItem]) -> list[MemoryItem]:
        """Store what one run keeps, for this person; returns the items as stored (with ids).

        The items are one exchange: its episodes are derived from the facts stored with them
        (and from their own `sources`), so forgetting such a fact forgets those episodes. A
        store bound to a run keeps one set per run: storing again replaces the first."""
        ...


def rank(query: str, candidates: list[MemoryItem], *, limit: int = RECALL_LIMIT) -> list[MemoryItem]:
    """The relevant candidates, best first (ties keep the store's order).

    An item passes the relevance rule (`relevance`: enough of the question's words), then is
    scored by what it shares, weighted by how rare each shared word is among the candidates
    (a word most of them share tells little), times how much of the item those words are (an
    item about something more specific than the question has more words of its own). Only
    items scoring at least RELATIVE_CUT of the best one come back: a question with a close
    answer does not also recall the many items that merely share its common words."""
    query_terms = terms(query)
    if not query_terms or not candidates:
        return []
    own = [set(terms(item.text)) for item in candidates]
    pool = len(candidates) + 1
    weight = {t: math.log(1 + pool / (1 + sum(1 for words in own if t in words))) for t in query_terms}
    total = sum(weight.values())
    scored = []
    for item, words in zip(candidates, own, strict=True):
        if relevance(query_terms, words) <= 0:
            continue
        shared = [t for t in query_terms if t in words]
        density = len(shared) / max(len(words), 1)
        item.score = round(sum(weight[t] for t in shared) / total * density**DENSITY_WEIGHT, 4)
        scored.append(item)
    if not scored:
        return []
    best = max(item.score for item in scored)
    scored = [item for item in scored if item.score >= best * RELATIVE_CUT]
    scored.sort(key=lambda item: -item.score)
    return scored[:limit]


class InMemoryStore:
    """A store in a list: for the CLI, tests and benchmarks (the web app stores in the database)."""

    def __init__(self, items: list[MemoryItem] | None = None) -> None:
        self.items: list[MemoryItem] = []
        for item in items or []:
            self._add(item)

    def _add(self, item: MemoryItem) -> MemoryItem:
        item.id = item.id if item.id is not None else len(self.items) + 1
        self.items.append(item)
        return item

    async def recall(self, query: str, *, limit: int = RECALL_LIMIT) -> list[MemoryItem]:
        return rank(query, [MemoryItem(**{**i.__dict__}) for i in self.items], limit=limit)

    async def remember(self, items: list[MemoryItem]) -> list[MemoryItem]:
        stored = [self._add(item) for item in items]
        facts = [item.id for item in stored if item.kind == SEMANTIC and item.id is not None]
        for item in stored:
            if item.kind == EPISODIC:
                item.sources = list(dict.fromkeys([*item.sources, *facts]))
        return stored

    def forget(self, item_id: int | str) -> None:
        """Forget the item and every episode derived from it (and from those, in turn)."""
        gone = {item_id}
        while True:
            derived = {i.id for i in self.items if i.id not in gone and gone.intersection(i.sources)}
            if not derived:
                break
            gone |= derived
        self.items = [i for i in self.items if i.id not in gone]
