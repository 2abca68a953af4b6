"""A small multinomial logistic regression over the routing features.

Trained by `python -m reasoning.routing.train` on the labelled questions shipped beside it
(training split only), with plain full-batch gradient descent: no randomness, no
dependencies, the same weights on every machine. Predicting is a dot product and a softmax.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

LEVELS = ("simple", "medium", "complex")
WEIGHTS_PATH = Path(__file__).with_name("weights.json")


@dataclass(frozen=True)
class LinearModel:
    features: tuple[str, ...]
    # Per level: one weight per feature, then the bias.
    weights: dict[str, tuple[float, ...]]

    def probabilities(self, vector: Sequence[float]) -> dict[str, float]:
        scores = {
            level: sum(w * x for w, x in zip(self.weights[level], vector, strict=False))
            + self.weights[level][-1]
            for level in LEVELS
        }
        top = max(scores.values())
        exp = {level: math.exp(score - top) for level, score in scores.items()}
        total = sum(exp.values())
        return {level: exp[level] / total for level in LEVELS}

    def to_dict(self) -> dict[str, object]:
        return {
            "features": list(self.features),
            "weights": {level: [round(w, 10) for w in self.weights[level]] for level in LEVELS},
        }

    @classmethod
    def from_dict(cls, data: dict[str, object]) -> LinearModel:
        features = tuple(data["features"])  # type: ignore[arg-type]
        weights = {level: tuple(float(w) for w in data["weights"][level]) for level in LEVELS}  # type: ignore[index]
        return cls(features, weights)


@cache
def shipped_model() -> LinearModel:
    """The weights this project trained and ships (reasoning/routing/weights.json)."""
    return LinearModel.from_dict(json.loads(WEIGHTS_PATH.read_text(encoding="utf-8")))


def fit(
    vectors: Sequence[Sequence[float]],
    labels: Sequence[str],
    features: Sequence[str],
    *,
    l2: float = 0.01,
    iterations: int = 1500,
    rate: float = 0.5,
    momentum: float = 0.9,
    class_weights: dict[str, float] | None = None,
) -> LinearModel:
    """Gradient descent on the regularised cross-entropy (the bias is not regularised)."""
    width = len(features) + 1
    # Features are mostly zero: keep each row's non-zero entries (the bias is always there).
    rows = [[(i, x) for i, x in enumerate([*vector, 1.0]) if x] for vector in vectors]
    weights = {level: [0.0] * width for level in LEVELS}
    velocity = {level: [0.0] * width for level in LEVELS}
    balance = class_weights or {level: 1.0 for level in LEVELS}
    total = sum(balance[label] for label in labels)
    for _ in range(iterations):
        grad = {level: [0.0] * width for level in LEVELS}
        for row, label in zip(rows, labels, strict=True):
            scores = {level: sum(weights[level][i] * x for i, x in row) for level in LEVELS}
            top = max(scores.values())
            exp = {level: math.exp(s - top) for level, s in scores.items()}
            norm = sum(exp.values())
            factor = balance[label] / total
            for level in LEVELS:
                error = (exp[level] / norm - (1.0 if level == label else 0.0)) * factor
                g = grad[level]
                for index, x in row:
                    g[index] += error * x
        for level in LEVELS:
            w, v, g = weights[level], velocity[level], grad[level]
            for index in range(width):
                penalty = l2 * w[index] if index < width - 1 else 0.0
                v[index] = momentum * v[index] - rate * (g[index] + penalty)
                w[index] += v[index]
    return LinearModel(tuple(features), {level: tuple(weights[level]) for level in LEVELS})
