"""Foresight: the tool calls a simple question needs, known before any model is asked.

A simple question answered with a tool would cost three model calls: one to ask for the
tool, one to answer from its result, one to check the answer. When the call can be read off
the question deterministically (the arithmetic in "What's 15% of 86.40?", the clock for
"What time is it in Tokyo?", the team's documents for "What does our handbook say about
rollback?"), the engine makes it first and hands the result to the answer call, so the tool
costs no model call. Only the tools named here are foreseen; only their need is judged here.
A question the reading gets wrong is answered without the tool, and the quality check sees
what is missing (and escalates to a strategy with the full tool loop when that can help).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from reasoning.llm.base import ToolCall
from reasoning.tools.builtin import CalculatorError, calculate

# The tools whose need foresight judges, by their base name (a server may prefix it).
FORESEEN_TOOLS = ("calculator", "clock", "search_documents")
MAX_FORESEEN = 4

# A few common places, so "what time is it in Tokyo" works without an IANA name.
CITY_ZONES = {
    "tokyo": "Asia/Tokyo",
    "japan": "Asia/Tokyo",
    "london": "Europe/London",
    "uk": "Europe/London",
    "paris": "Europe/Paris",
    "france": "Europe/Paris",
    "berlin": "Europe/Berlin",
    "germany": "Europe/Berlin",
    "madrid": "Europe/Madrid",
    "rome": "Europe/Rome",
    "amsterdam": "Europe/Amsterdam",
    "new york": "America/New_York",
    "nyc": "America/New_York",
    "boston": "America/New_York",
    "chicago": "America/Chicago",
    "denver": "America/Denver",
    "los angeles": "America/Los_Angeles",
    "san francisco": "America/Los_Angeles",
    "seattle": "America/Los_Angeles",
    "toronto": "America/Toronto",
    "mexico city": "America/Mexico_City",
    "sao paulo": "America/Sao_Paulo",
    "sydney": "Australia/Sydney",
    "melbourne": "Australia/Melbourne",
    "auckland": "Pacific/Auckland",
    "singapore": "Asia/Singapore",
    "hong kong": "Asia/Hong_Kong",
    "shanghai": "Asia/Shanghai",
    "beijing": "Asia/Shanghai",
    "seoul": "Asia/Seoul",
    "mumbai": "Asia/Kolkata",
    "delhi": "Asia/Kolkata",
    "india": "Asia/Kolkata",
    "dubai": "Asia/Dubai",
    "moscow": "Europe/Moscow",
    "istanbul": "Europe/Istanbul",
    "cairo": "Africa/Cairo",
    "johannesburg": "Africa/Johannesburg",
    "lagos": "Africa/Lagos",
    "utc": "UTC",
    "gmt": "UTC",
}
_IANA = re.compile(r"\b([A-Z][a-z]+(?:_[A-Z][a-z]+)*/[A-Z][A-Za-z_]+(?:/[A-Z][A-Za-z_]+)?)\b")

_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")
# "15% of 2400": a share of an amount.
_PERCENT_OF = re.compile(r"(\d+(?:\.\d+)?)\s*(?:%|percent)\s+of\s+(\d+(?:\.\d+)?)")
_NUMBER_WORDS = [
    (r"\bmultiplied by\b|\btimes\b|\bx\b(?=\s*\d)", "*"),
    (r"\bdivided by\b|\bover\b(?=\s*\d)", "/"),
    (r"\bplus\b", "+"),
    (r"\bminus\b", "-"),
    (r"\bto the power of\b|\braised to\b", "**"),
    (r"\bsquared\b", "**2"),
    (r"\bcubed\b", "**3"),
    (r"\bmod(?:ulo)?\b", "%"),
]
_FUNCTION_WORDS = re.compile(
    r"\b(square root|sqrt|log|ln|sin|cos|tan|exp|factorial)\s*(?:of\s*)?\(?\s*"
    r"(-?\d+(?:\.\d+)?)\s*\)?",
    re.IGNORECASE,
)
_EXPRESSION = re.compile(
    r"(?:[a-z]+\()?[-+(]*\s*\d+(?:\.\d+)?(?:\s*(?:\*\*|[-+*/%^×÷])\s*[-+(]*\s*(?:[a-z]+\()?\d+(?:\.\d+)?\)*)+\)*"
    r"|(?:sqrt|log|ln|sin|cos|tan|exp|factorial)\(\s*-?\d+(?:\.\d+)?\s*\)",
    re.IGNORECASE,
)


_ASKED = re.compile(
    r"\b(?:what(?:'s| is| are)|calculate|compute|evaluate|how much is|solve)\b[^.?!\n]{0,12}$"
)


def expression_in(text: str) -> str | None:
    """An arithmetic expression in a question, with number words turned into operators."""
    candidate = _THOUSANDS.sub("", text.lower())
    candidate = _PERCENT_OF.sub(r"\1/100*\2", candidate)
    candidate = _FUNCTION_WORDS.sub(
        lambda m: (
            f"{'sqrt' if m.group(1).lower() in ('square root', 'sqrt') else m.group(1).lower()}({m.group(2)})"
        ),
        candidate,
    )
    for pattern, operator in _NUMBER_WORDS:
        candidate = re.sub(pattern, operator, candidate)
    matches = list(_EXPRESSION.finditer(candidate))
    # The expression the question asks about ("What is 5*5?") before any other it quotes (a
    # template's "{{ 7*7 }}" pasted above it), then the longest: "2+3*4" over its "3*4".
    ranked = sorted(
        matches,
        key=lambda m: (
            bool(_ASKED.search(candidate, max(0, m.start() - 40), m.start())),
            len(m.group().strip()),
        ),
        reverse=True,
    )
    found = [m.group().strip() for m in ranked]
    for expression in found:
        try:
            calculate(expression)
        except CalculatorError:
            continue
        return expression
    return found[0] if found else None


def zone_in(text: str) -> str | None:
    iana = _IANA.search(text or "")
    if iana:
        return iana.group(1)
    lowered = (text or "").lower()
    for city in sorted(CITY_ZONES, key=len, reverse=True):
        if re.search(rf"\b{re.escape(city)}\b", lowered):
            return CITY_ZONES[city]
    return None


def zones_in(text: str) -> list[str]:
    """Every time zone a text names, in the order it names them ("Berlin and Tokyo": two)."""
    named = [match.group(1) for match in _IANA.finditer(text or "")]
    lowered = (text or "").lower()
    placed: list[tuple[int, str]] = []
    for city in sorted(CITY_ZONES, key=len, reverse=True):
        pattern = rf"\b{re.escape(city)}\b"
        placed += [(match.start(), CITY_ZONES[city]) for match in re.finditer(pattern, lowered)]
        lowered = re.sub(pattern, lambda match: " " * len(match.group()), lowered)
    return list(dict.fromkeys([*named, *(zone for _, zone in sorted(placed))]))


# "What time is it", "today's date", "what week number is it", "what year is it now": the
# present moment, which only a clock knows. "How many seconds in a day" or "the time
# difference between Lisbon and Warsaw" ask for no present moment.
_NOW = re.compile(
    r"\b(what(?:'s| is)? the (?:current )?(?:time|date|day|weekday)\b(?! (?:zone|difference|between))|"
    r"what (?:time|date|day|year|month|week(?: number)?)\b[^?.!]{0,30}\b(?:is it|today|now)\b|"
    r"(?:time|date|day|year|month) (?:is it|today|now|right now)\b|"
    r"(?:current|today'?s|local) (?:time|date|day|weekday|week number)\b|"
    r"\b(?:time|date) in\b|"
    r"this (?:year|month|week)\b)",
    re.IGNORECASE,
)
# The team's own knowledge, which its documents may hold: a document named with @, or the
# team's policies, handbooks and processes.
_TEAM = re.compile(
    r'(?<![\w@])@(?:"[^"\n]{1,200}"|\w[\w.\-/]{0,199})|'
    r"\b(our|we|us|team'?s|company'?s|handbook|policy|policies|runbook|wiki|on-?call|onboarding|"
    r"internal|docs?|documents?)\b",
    re.IGNORECASE,
)
_WRITING = re.compile(
    r"^\W*(?:please\s+)?(?:write|draft|rewrite|rephrase|shorten|translate|correct|fix|proofread|"
    r"suggest|give me|make|come up with|name|compose|polish)\b",
    re.IGNORECASE,
)


def tool_named(tools: Iterable[str], base: str) -> str | None:
    """The first of `tools` that is `base` on some server ("nexus__calculator"): the host lists
    its own server's tools first, so another server's "calculator" never stands in for it."""
    for name in tools:
        if name == base or name.endswith((f"__{base}", f".{base}")):
            return name
    return None


def is_foreseen(name: str) -> bool:
    """Whether foresight judges this tool's need (it is then not offered to a one-call answer)."""
    return any(tool_named([name], base) for base in FORESEEN_TOOLS)


def foresee(part: str, tools: Iterable[str], *, attached: bool = False) -> list[ToolCall]:
    """The tool calls `part` (one ask) needs, among `tools`, read from its words alone.

    `attached`: the person attached documents, so the documents need no search."""
    tools = list(tools)
    calls: list[tuple[str, dict[str, str]]] = []
    expression = expression_in(part)
    if expression is not None and (name := tool_named(tools, "calculator")):
        try:
            calculate(expression)
        except CalculatorError:
            expression = None
        if expression is not None:
            calls.append((name, {"expression": expression}))
    if _NOW.search(part) and (name := tool_named(tools, "clock")):
        calls += [(name, {"timezone": zone}) for zone in zones_in(part) or ["UTC"]]
    wants_documents = not calls and not attached and not _WRITING.match(part) and _TEAM.search(part)
    if wants_documents and (name := tool_named(tools, "search_documents")):
        calls.append((name, {"query": " ".join(part.split()).strip(" ,.;:!?")}))
    return [
        ToolCall(f"foreseen_{index}", name, args) for index, (name, args) in enumerate(calls[:MAX_FORESEEN])
    ]
