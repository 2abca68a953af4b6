"""The local answer check: approves a simple, tool-grounded answer without a model call.

A simple question answered with a tool ("What's 15% of 86.40?", "What time is it in Tokyo?")
would cost three calls: the tool request, the answer, and the evaluator. What the evaluator
would judge there can be checked here, deterministically, against the evidence the run
holds: the tool results. The check approves only when every one of these holds, and is
otherwise "unsure" (the model evaluator is then asked, as for any other answer):

- the question asks for a value: a calculation, an amount or a count, a time or a date;
- the answer is not empty, and is not a refusal, an apology or an error report;
- every tool call succeeded and returned something (not "no results");
- the answer states a value a tool returned (a number, a time of day), so it rests on it;
- every number in the answer comes from the question, a tool's arguments or a tool's
  result (rounding allowed): the answer adds no figure nothing computed;
- the answer covers the question: the question is one ask, its numbers were used, and at
  least half of its words appear in the answer itself or in the descriptions of the tools
  it called (a date question answered from "the current date and time" tool is covered).
  Tool arguments and results do not count here: a search's arguments often repeat the
  question, and a passage may contain the question's words without answering it.

It checks values, not prose: a question that asks for text (a policy, an explanation, a
name) always goes to the model evaluator, whatever tool answered it. The adaptive mode asks it only for DIRECT
answers to questions the local router was sure are simple (LOCAL_ANSWER_CHECK turns it
off).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from reasoning.agent import ToolRecord
from reasoning.foresight import accounts_for, leaves_out_currency
from reasoning.text import keywords
from reasoning.tools.labels import tool_label

# The quality score a local approval reports (above every strategy's default threshold).
LOCAL_SCORE = 0.9

_REFUSAL = re.compile(
    r"\b(can'?t|cannot|can not|unable to|not able to|don'?t know|do not know|no (results?|matches|"
    r"documents?|data)\b|nothing (was )?found|not found|sorry|apologi[sz]e|error|failed|could ?n[o']t|"
    r"isn'?t available|not available)",
    re.IGNORECASE,
)
_EMPTY_RESULT = re.compile(r"^\s*(no (documents?|results?|matches?|passages?)\b|nothing (was )?found)", re.I)
_TIME = re.compile(r"\b(\d{1,2}):(\d{2})(?::\d{2})?(?:\s*([ap])\.?\s?m\b\.?)?", re.IGNORECASE)
# Magnitudes only: a minus sign may be an operator ("5-3"), so signs are not compared.
_NUMBER = re.compile(r"(?<![\w.])(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?!\w)")
_LIST_MARKER = re.compile(r"^\s*\d+[.)]\s", re.MULTILINE)
_ISO_DATE = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})")
# A question whose answer is a value: a calculation, an amount, a count, a time or a date.
VALUE_QUESTION = re.compile(
    r"\d\s*(?:[-+*/^×÷%]|\*\*)|\b(how (many|much|long|far|old)|calculat\w*|comput\w*|convert\w*|"
    r"sum|total|average|mean|percent\w*|square root|sqrt|factorial|power of|times|divided by|"
    r"time|date|day of the week|weekday|what day|today|tomorrow|yesterday|o'clock)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class LocalVerdict:
    """Approved, with what was checked; or unsure, with the first reason the check gave up."""

    approved: bool
    reason: str


def _times(text: str) -> tuple[set[int], str]:
    """Times of day in `text` as minutes after midnight (12-hour times read as 24-hour), and
    the text with them removed."""
    found: set[int] = set()

    def take(match: re.Match[str]) -> str:
        hour, minute, half = int(match.group(1)), int(match.group(2)), (match.group(3) or "").lower()
        if half == "p" and hour < 12:
            hour += 12
        if half == "a" and hour == 12:
            hour = 0
        found.add(hour * 60 + minute)
        return " "

    return found, _TIME.sub(take, text)


def _numbers(text: str) -> list[Decimal]:
    text = _ISO_DATE.sub(lambda m: " ".join(m.groups()), text)
    values = []
    for raw in _NUMBER.findall(text):
        try:
            values.append(Decimal(raw.replace(",", "")))
        except InvalidOperation:  # pragma: no cover - the pattern only matches numbers
            continue
    return values


def _matches(value: Decimal, sources: Iterable[Decimal]) -> bool:
    """`value` is one of `sources`, possibly rounded to the places it is written with."""
    places = max(0, -value.as_tuple().exponent) if isinstance(value.as_tuple().exponent, int) else 0
    quantum = Decimal(1).scaleb(-places)
    for source in sources:
        if source == value:
            return True
        try:
            if source.quantize(quantum) == value:
                return True
        except InvalidOperation:
            continue
    return False


def check_answer(
    question: str,
    answer: str,
    tools: list[ToolRecord],
    *,
    asks: int,
    descriptions: dict[str, str] | None = None,
) -> LocalVerdict:
    """Approve `answer` to the one-ask `question` from the tool results it rests on, or say
    why the check cannot (then a model must judge it). `descriptions`: what each tool does."""
    body = answer.strip()
    if not body:
        return LocalVerdict(False, "the answer is empty")
    if not VALUE_QUESTION.search(question):
        return LocalVerdict(False, "the question asks for more than a value")
    if asks > 1:
        return LocalVerdict(False, f"the question has {asks} parts")
    if not tools:
        return LocalVerdict(False, "no tool result to check the answer against")
    for record in tools:
        outcome = record.outcome
        if not outcome.success:
            return LocalVerdict(False, f"the {record.name} tool failed")
        if not outcome.content.strip() or _EMPTY_RESULT.match(outcome.content):
            return LocalVerdict(False, f"the {record.name} tool found nothing")
    refusal = _REFUSAL.search(body)
    if refusal:
        return LocalVerdict(False, f"the answer says {refusal.group(0)!r}")

    arguments = " ".join(str(value) for record in tools for value in record.arguments.values())
    results = " ".join(record.outcome.content for record in tools)
    result_times, result_rest = _times(results)
    result_numbers = _numbers(result_rest)
    answer_times, answer_rest = _times(_LIST_MARKER.sub(" ", body))
    answer_numbers = _numbers(answer_rest)

    grounded = answer_times & result_times or [n for n in answer_numbers if _matches(n, result_numbers)]
    if not grounded:
        return LocalVerdict(False, "the answer states no value a tool returned")
    stray_times = answer_times - result_times
    if stray_times:
        return LocalVerdict(False, "the answer states a time no tool returned")
    sources = [*_numbers(question), *_numbers(arguments), *result_numbers]
    for value in answer_numbers:
        if not _matches(value, sources):
            return LocalVerdict(False, f"the answer states {value}, which nothing computed")

    computed = " ".join(str(v) for r in tools if r.name.endswith("calculator") for v in r.arguments.values())
    if computed and not accounts_for(question, computed):
        return LocalVerdict(
            False, "the question says more than the calculation did (a percentage, rounding, a unit)"
        )
    if computed and leaves_out_currency(question, body):
        return LocalVerdict(False, "the answer leaves out the question's currency")
    asked = _numbers(question)
    used = [*_numbers(arguments), *answer_numbers]
    unused = [value for value in asked if not _matches(value, used)]
    if unused:
        return LocalVerdict(False, f"the question's {unused[0]} was not used")
    wanted = set(keywords(question))
    purposes = " ".join((descriptions or {}).get(record.name, "") for record in tools)
    seen = set(keywords(f"{body} {purposes}"))
    if wanted and len(wanted & seen) / len(wanted) < 0.5:
        return LocalVerdict(False, "the answer does not cover the question's words")
    names = ", ".join(dict.fromkeys(tool_label(record.name) for record in tools))
    return LocalVerdict(
        True,
        f"Checked locally, without a model call: the answer states what {names} returned, every "
        "number in it comes from the question or the tools, and it covers the question's one ask.",
    )
