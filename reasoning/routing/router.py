"""The local router: decides DIRECT, LIGHT or DEEP without a model call when it is sure.

It reads the question (reasoning/routing/features.py), weighs what it found with the model
the project trained on its labelled questions, and says how sure it is. Below the
configured confidence the adaptive mode asks the analysis model instead.

Two rules sit on top of the model, because a wrong DIRECT costs more than a wrong LIGHT:
- a question the model thinks might be complex, or that asks for work (research, a
  diagnosis, a design, a plan, a deliverable: "Root-cause the outage", "Need a realistic
  plan"), is never routed DIRECT: the router lifts it to medium and admits it is unsure;
- work about the team's own things that goes beyond one finding (a recommendation, several
  asks, a broad scope, a horizon: "Why is our bill 40% higher? Find the cause and what to
  do") is complex. On every labelled set the project has, this rule fired on complex
  questions only, bar two it would otherwise have misrouted anyway.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from reasoning.foresight import accounts_for, asks_now, asks_zone, expression_in, zones_in
from reasoning.routing.features import Reading, read
from reasoning.routing.model import LEVELS, LinearModel, shipped_model
from reasoning.types import ComplexityAnalysis, ComplexityLevel, ExecutionStrategy

# P(complex) at or above which a question is not routed DIRECT.
COMPLEX_GUARD = 0.2
# Features that mean the question asks for work: research, a design or plan, a deliverable.
WORK = ("research", "design", "deliverable", "work_lead", "diagnosis")
# Features that take work beyond one finding: a decision, an improvement, scope, a horizon.
BEYOND_ONE_FINDING = ("recommend", "improve", "scope", "horizon_x_work", "two_asks")
# How sure the router says it is when the work-about-us rule decides.
RULE_CONFIDENCE = 0.8

_STRATEGY = {
    ComplexityLevel.SIMPLE: ExecutionStrategy.DIRECT,
    ComplexityLevel.MEDIUM: ExecutionStrategy.LIGHT_PLANNING,
    ComplexityLevel.COMPLEX: ExecutionStrategy.DEEP_REASONING,
}
_ITERATIONS = {ComplexityLevel.SIMPLE: 1, ComplexityLevel.MEDIUM: 2, ComplexityLevel.COMPLEX: 3}
_SIGNALS = (
    ("research", "research or an investigation"),
    ("design", "a design, plan or strategy to produce"),
    ("compare", "a comparison"),
    ("recommend", "a recommendation"),
    ("summary", "a summary or list"),
    ("scope", "a broad scope"),
    ("sources", "several sources to combine"),
    ("constraints", "several aspects to cover"),
    ("arithmetic", "a calculation"),
    ("time", "a time or date"),
    ("attachments", "an attached document"),
    ("how_to", "a how-to"),
)
_LEVEL_TEXT = {
    ComplexityLevel.SIMPLE: "a direct answer will do",
    ComplexityLevel.MEDIUM: "a light plan answers each part",
    ComplexityLevel.COMPLEX: "this needs deep reasoning",
}


@dataclass(frozen=True)
class RouteDecision:
    level: ComplexityLevel
    confidence: float
    probabilities: dict[str, float]
    reading: Reading

    @property
    def strategy(self) -> ExecutionStrategy:
        return _STRATEGY[self.level]

    @property
    def asks_for_work(self) -> bool:
        """The question asks for research, a diagnosis, a design, a plan or a deliverable."""
        return any(self.reading.values[name] for name in WORK)

    def rationale(self) -> str:
        asks = len(self.reading.asks)
        found = [text for name, text in _SIGNALS if self.reading.values.get(name)]
        parts = "one question" if asks <= 1 else f"{asks} separate asks"
        signals = f" with {', '.join(found[:4])}" if found else ""
        return (
            f"{parts.capitalize()}{signals}: {_LEVEL_TEXT[self.level]} (router, {self.confidence:.0%} sure)."
        )

    def analysis(self) -> ComplexityAnalysis:
        values = self.reading.values
        asks = len(self.reading.asks)
        return ComplexityAnalysis(
            complexity_level=self.level,
            reasoning_required=self.level != ComplexityLevel.SIMPLE,
            recommended_strategy=self.strategy,
            rationale=self.rationale(),
            estimated_iterations=_ITERATIONS[self.level],
            confidence=round(self.confidence, 3),
            requires_research=bool(values["research"] or (values["sources"] and values["scope"])),
            requires_synthesis=asks > 1 or self.level == ComplexityLevel.COMPLEX,
            multi_part_query=asks > 1,
            tool_count_estimate=int(values["arithmetic"] + values["time"] + (values["attachments"] > 0)),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "level": self.level.value,
            "confidence": round(self.confidence, 3),
            "probabilities": {k: round(v, 3) for k, v in self.probabilities.items()},
            "asks": list(self.reading.asks),
        }


# The words a bare calculation is written with besides its numbers ("Evaluate 7*2 + 5",
# "Analyze: what is 3*4?"): nothing in them asks for work.
_CALCULATION_WORDS = frozenset({
    "evaluate", "calculate", "compute", "analyze", "analyse", "solve", "simplify", "work", "out",
    "what", "is", "whats", "s", "the", "value", "of", "result", "please", "percent", "plus",
    "minus", "times", "divided", "by", "multiplied", "over", "to", "power", "squared", "cubed",
    "square", "root", "sqrt", "mod", "modulo", "and", "e",
    # A number scaled by a verb: "Halve 3,478", "quadruple 12", "what is 48 doubled".
    "double", "doubled", "twice", "triple", "tripled", "quadruple", "quadrupled", "halve", "halved",
    "half", "cube",
    # A calculation's own verbs and nouns: "add up 12, 15, 22 and 31", "the total of 5, 10 and
    # 20", "subtract 15% from 80", "how much is 7*8".
    "add", "up", "sum", "total", "subtract", "from", "deduct", "take", "away", "off", "average",
    "mean", "increase", "decrease", "reduce", "multiply", "divide", "how", "much",
})  # fmt: skip


def bare_calculation(question: str) -> bool:
    """Whether the question is one calculation and nothing else, which a direct answer with the
    calculator settles: "evaluate" or "analyze" in front of it had it planned as research."""
    expression = expression_in(question)
    if not expression or not accounts_for(question, expression):
        return False
    return all(word.lower() in _CALCULATION_WORDS for word in re.findall(r"[A-Za-z]+", question))


# One answer about several places: their difference, not each one's time.
_DIFFERENCE = re.compile(
    r"\b(?:difference|apart|ahead|behind|between|offset|gap|vs\.?|versus)\b", re.IGNORECASE
)


def several_places_timed(question: str) -> bool:
    """Whether the question asks the present time of two or more places, each its own lookup
    ("the time in Berlin, Paris and Madrid"); not how far apart they are."""
    return (
        asks_now(question)
        and len(set(zones_in(question))) >= 2
        and not _DIFFERENCE.search(question)
        and not asks_zone(question)
    )


class Router:
    def __init__(self, model: LinearModel | None = None, *, complex_guard: float = COMPLEX_GUARD) -> None:
        self.model = model or shipped_model()
        self.complex_guard = complex_guard

    def route(self, question: str, *, attachments: int = 0, conversation: int = 0) -> RouteDecision:
        reading = read(question, attachments=attachments, conversation=conversation)
        probabilities = self.model.probabilities(reading.vector())
        level = max(LEVELS, key=lambda name: probabilities[name])
        values = reading.values
        if bare_calculation(question):
            confidence = max(probabilities["simple"], RULE_CONFIDENCE)
            return RouteDecision(ComplexityLevel.SIMPLE, confidence, probabilities, reading)
        if level == "simple" and several_places_timed(question):
            # "What time is it in Cairo and Istanbul?": a lookup per place, as two calculations
            # are two asks (the features read one ask; the clock is called once per place).
            confidence = max(probabilities["medium"], RULE_CONFIDENCE)
            return RouteDecision(ComplexityLevel.MEDIUM, confidence, probabilities, reading)
        work = any(values[name] for name in WORK)  # as RouteDecision.asks_for_work
        if work and values["our"] and any(values[name] for name in BEYOND_ONE_FINDING):
            confidence = max(probabilities["complex"], RULE_CONFIDENCE)
            return RouteDecision(ComplexityLevel.COMPLEX, confidence, probabilities, reading)
        # Work is never answered directly, however short or lookup-like the ask: the
        # cheapest wrong route for complex work is LIGHT.
        if level == "simple" and (probabilities["complex"] >= self.complex_guard or work):
            level = "medium"
        return RouteDecision(ComplexityLevel(level), probabilities[level], probabilities, reading)
