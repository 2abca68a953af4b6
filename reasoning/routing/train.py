"""Train the router: `python -m reasoning.routing.train` rewrites weights.json.

Reads the training split only, prints cross-validated accuracy on it (folds by position, so
the result is the same every time), then fits on the whole training split. The held-out
split is measured by `make bench`, never here.
"""

from __future__ import annotations

import argparse
import json
import sys

from reasoning.routing.dataset import Labelled, load, score
from reasoning.routing.features import FEATURE_NAMES, read
from reasoning.routing.model import LEVELS, WEIGHTS_PATH, LinearModel, fit
from reasoning.routing.router import Router

L2 = 0.003
ITERATIONS = 1200
FOLDS = 5


def train(rows: list[Labelled]) -> LinearModel:
    if any(row.split != "train" for row in rows):
        raise ValueError("the router is trained on the training split only")
    vectors = [read(row.question).vector() for row in rows]
    labels = [row.level for row in rows]
    counts = {level: labels.count(level) for level in LEVELS}
    balance = {level: len(labels) / (len(LEVELS) * max(1, counts[level])) for level in LEVELS}
    return fit(vectors, labels, FEATURE_NAMES, l2=L2, iterations=ITERATIONS, class_weights=balance)


def cross_validate(rows: list[Labelled]) -> list[str]:
    matrix_rows: list[tuple[Labelled, str]] = []
    for fold in range(FOLDS):
        fitted = train([row for index, row in enumerate(rows) if index % FOLDS != fold])
        router = Router(fitted)
        for index, row in enumerate(rows):
            if index % FOLDS == fold:
                matrix_rows.append((row, router.route(row.question).level.value))
    lookup = {row.question: predicted for row, predicted in matrix_rows}
    scores = score(rows, lambda question: lookup[question])
    lines = [f"{FOLDS}-fold cross-validation on the training split ({len(rows)} questions):"]
    lines += ["  " + line for line in scores.lines()]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m reasoning.routing.train", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "--check", action="store_true", help="fail if weights.json is not what training gives"
    )
    parser.add_argument("--no-cv", action="store_true", help="skip cross-validation")
    args = parser.parse_args(argv)
    rows = load("train")
    if not args.no_cv:
        print("\n".join(cross_validate(rows)))
    text = json.dumps(train(rows).to_dict(), indent=1) + "\n"
    if args.check:
        same = WEIGHTS_PATH.read_text(encoding="utf-8") == text
        print("weights.json is up to date" if same else "weights.json differs from a fresh training")
        return 0 if same else 1
    WEIGHTS_PATH.write_text(text, encoding="utf-8")
    print(f"wrote {WEIGHTS_PATH}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
