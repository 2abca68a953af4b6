"""The labelled questions the router is trained and measured on, and how to score a router.

reasoning/routing/questions.jsonl: one question per line with its level (simple, medium,
complex), its kind (lookup, comparison, multipart, document, planning, investigation, ...)
and its split. The split is fixed by a hash of the question (30% held out), so no question
can be moved between splits to flatter the numbers; training reads the training split only.

Labelling guide. simple: one ask, answerable from general knowledge, an attached document or
one tool call (definitions, lookups, one calculation, the time, a short how-to or a small
writing task; a vague request that needs one clarifying question). medium: two or three
related asks, a comparison or trade-off with a recommendation, summarise-and-list, a few
independent lookups or calculations. complex: open-ended work that needs research across
sources, a design, plan or strategy over several aspects, an investigation of causes, or
findings that build on findings.

reasoning/routing/unseen_*.jsonl: questions training never reads, for measuring how the
router generalises beyond its own data (the project is judged on a set it does not see).
Each was written and committed before it was first measured: A blind, before anyone
working on it read questions.jsonl or features.py; B before the first round of router
changes, C before the second, D before the third, E after the third and last (no change
since), F written in the last session of issue 13 before any of it was routed (the router was
not changed after), G written in review session rev-d before its author read questions.jsonl,
features.py or the other unseen sets, and committed before it was first routed (no router
change followed). A round's fixes came from the misses of the sets already measured, so only
a set's first measurement is untouched by tuning; those first figures are in the README.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from reasoning.routing.model import LEVELS

QUESTIONS_PATH = Path(__file__).with_name("questions.jsonl")
UNSEEN_SETS = ("a", "b", "c", "d", "e", "f", "g")
HELD_OUT_PERCENT = 30


@dataclass(frozen=True)
class Labelled:
    question: str
    level: str
    kind: str
    split: str


def split_for(question: str) -> str:
    """The split a question belongs to, from a hash of its text."""
    bucket = int(hashlib.sha256(question.encode()).hexdigest()[:8], 16) % 100
    return "heldout" if bucket < HELD_OUT_PERCENT else "train"


def load(split: str | None = None, path: Path = QUESTIONS_PATH) -> list[Labelled]:
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            data = json.loads(line)
            rows.append(Labelled(data["question"], data["level"], data["kind"], data["split"]))
    return [row for row in rows if split is None or row.split == split]


def load_unseen(names: tuple[str, ...] = UNSEEN_SETS) -> list[Labelled]:
    """The unseen questions of the named sets (all of them by default)."""
    return [row for name in names for row in load(path=QUESTIONS_PATH.with_name(f"unseen_{name}.jsonl"))]


@dataclass
class Scores:
    """Accuracy per class and the confusion matrix (rows: true level, columns: predicted)."""

    matrix: dict[str, dict[str, int]]
    misses: list[tuple[Labelled, str]]

    @property
    def total(self) -> int:
        return sum(sum(row.values()) for row in self.matrix.values())

    @property
    def accuracy(self) -> float:
        return sum(self.matrix[level][level] for level in LEVELS) / max(1, self.total)

    def recall(self, level: str) -> float:
        row = self.matrix[level]
        return row[level] / max(1, sum(row.values()))

    @property
    def complex_as_simple(self) -> int:
        return self.matrix["complex"]["simple"]

    def lines(self) -> list[str]:
        header = "true \\ routed   " + "".join(f"{level:>9}" for level in LEVELS) + "   accuracy"
        out = [header]
        for level in LEVELS:
            row = self.matrix[level]
            cells = "".join(f"{row[predicted]:>9}" for predicted in LEVELS)
            out.append(f"{level:<16}{cells}   {self.recall(level):6.1%} of {sum(row.values())}")
        out.append(
            f"overall {self.accuracy:.1%} of {self.total}; complex routed DIRECT: {self.complex_as_simple}"
        )
        return out


def score(rows: Iterable[Labelled], predict: Callable[[str], str]) -> Scores:
    matrix = {level: dict.fromkeys(LEVELS, 0) for level in LEVELS}
    misses = []
    for row in rows:
        predicted = predict(row.question)
        matrix[row.level][predicted] += 1
        if predicted != row.level:
            misses.append((row, predicted))
    return Scores(matrix, misses)
