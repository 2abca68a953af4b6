"""Lenient readers for model output.

Models are asked for structured output through a forced tool call, but a provider may
answer in prose, JSON in a code fence, or the seeds' markdown formats ("**Confidence:**
0.8"). These helpers read all of them and never raise: a value that cannot be read falls
back to a default, and every score is clamped into its range.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from typing import Any

_FENCE = re.compile(r"```(?:json)?\s*(\{.*?\})\s*```", re.DOTALL)


def extract_json_object(text: str) -> dict[str, Any] | None:
    """The first JSON object in `text` (fenced or bare), or None."""
    if not isinstance(text, str) or "{" not in text:
        return None
    for match in _FENCE.finditer(text):
        parsed = _loads(match.group(1))
        if parsed is not None:
            return parsed
    start = text.find("{")
    while start != -1:
        end = _matching_brace(text, start)
        if end is not None:
            parsed = _loads(text[start : end + 1])
            if parsed is not None:
                return parsed
        start = text.find("{", start + 1)
    return None


def _loads(candidate: str) -> dict[str, Any] | None:
    for text in (candidate, _without_trailing_commas(candidate)):
        try:
            value = json.loads(text)
        except (ValueError, RecursionError):
            continue
        return value if isinstance(value, dict) else None
    return None


def _without_trailing_commas(text: str) -> str:
    """`text` without a comma before a closing bracket or brace (outside strings), which
    models write and JSON forbids: `{"a": [1, 2,],}`."""
    out: list[str] = []
    for _, char, structural in _json_characters(text):
        if structural and char in "]}":
            end = len(out)
            while end and out[end - 1].isspace():
                end -= 1
            if end and out[end - 1] == ",":
                del out[end - 1]
        out.append(char)
    return "".join(out)


def _matching_brace(text: str, start: int) -> int | None:
    depth = 0
    for index, char, structural in _json_characters(text, start, start + 200_000):
        if structural and char == "{":
            depth += 1
        elif structural and char == "}":
            depth -= 1
            if depth == 0:
                return index
    return None


def _json_characters(text: str, start: int = 0, stop: int | None = None) -> Iterator[tuple[int, str, bool]]:
    """Each character of `text[start:stop]` with its index and whether it is JSON's structure:
    outside a string, and not a string's quote (a brace or comma in a string is text)."""
    in_string = escaped = False
    for index in range(start, len(text) if stop is None else min(len(text), stop)):
        char = text[index]
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
            yield index, char, False
        elif char == '"':
            in_string = True
            yield index, char, False
        else:
            yield index, char, True


# --- coercion -------------------------------------------------------------------------


def to_score(value: Any, default: float = 0.5, *, low: float = 0.0, high: float = 1.0) -> float:
    """A number in [low, high]; percentages ("85%") and "8/10" are understood."""
    number = _number(value)
    if number is None:
        return default
    if isinstance(value, str) and "%" in value:
        number /= 100
    elif high == 1.0 and 1.0 < number <= 10.0 and isinstance(value, str) and "/10" in value:
        number /= 10
    return min(high, max(low, number))


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        number = float(value)
    elif isinstance(value, str):
        match = re.search(r"-?\d+(?:\.\d+)?", value)
        if not match:
            return None
        try:
            number = float(match.group())
        except ValueError:
            return None
    else:
        return None
    if math.isnan(number) or math.isinf(number):
        return None
    return number


def to_int(value: Any, default: int, *, low: int, high: int) -> int:
    number = _number(value)
    if number is None:
        return default
    return int(min(high, max(low, round(number))))


def to_bool(value: Any, default: bool = False) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value != 0
    if isinstance(value, str):
        text = value.strip().lower()
        if text.startswith(("yes", "true", "y ", "1")) or text == "y":
            return True
        if text.startswith(("no", "false", "n ", "0")) or text == "n":
            return False
    return default


def to_text(value: Any, default: str = "", *, limit: int = 4000) -> str:
    if value is None:
        return default
    if isinstance(value, str):
        return value.strip()[:limit]
    if isinstance(value, int | float | bool):
        return str(value)
    try:
        return json.dumps(value)[:limit]
    except (TypeError, ValueError):
        return default


def to_list(value: Any, *, limit: int = 20, item_limit: int = 500) -> list[str]:
    """A list of short strings from a list, or from a bulleted/numbered/comma string."""
    items: list[Any]
    if value is None:
        return []
    if isinstance(value, list | tuple):
        items = list(value)
    elif isinstance(value, str):
        lines = [line for line in value.splitlines() if line.strip()]
        items = lines if len(lines) > 1 else [p for p in re.split(r"[;,]\s*", value) if p.strip()]
    else:
        items = [value]
    out = []
    for item in items:
        text = (
            _strip_bullet(to_text(item, limit=item_limit))
            if not isinstance(item, dict)
            else (to_text(item.get("description") or item.get("text") or item, limit=item_limit))
        )
        if text and text.lower() not in ("none", "n/a", "-", "(none)"):
            out.append(text)
        if len(out) >= limit:
            break
    return out


def _strip_bullet(text: str) -> str:
    return re.sub(r"^\s*(?:[-*•]|\d+[.)])\s*", "", text).strip()


def to_choice(value: Any, choices: dict[str, str], default: str) -> str:
    """Map free text onto one of `choices` by the first alias found in it."""
    if not isinstance(value, str):
        return default
    text = value.strip().lower().replace("-", "_").replace(" ", "_")
    if text in choices:
        return choices[text]
    for alias, choice in sorted(choices.items(), key=lambda item: -len(item[0])):
        if alias in text:
            return choice
    return default


# --- markdown sections ------------------------------------------------------------------


def _label_pattern(label: str) -> re.Pattern[str]:
    """A line that starts with `label`: "**Label:** x", "Label: x", "## Label", "LABEL_X: x"."""
    return re.compile(
        r"^[ \t>*-]*(?:#{1,6}[ \t]*)?(?:\*\*|__)?[ \t]*"
        + re.escape(label)
        + r"[ \t]*(?:\([^)\n]*\))?[ \t]*(?:\*\*|__)?[ \t]*"
        + r"(?:[:：][ \t]*(?:\*\*|__)?[ \t]*(?:\([^)\n]*\))?[ \t]*(?P<rest>.*)|(?:\*\*|__)?[ \t]*)$",
        re.IGNORECASE | re.MULTILINE,
    )


def field_value(text: str, *labels: str) -> str | None:
    """The value after a label: on the same line, or the block of lines below it."""
    if not isinstance(text, str):
        return None
    for label in labels:
        match = _label_pattern(label).search(text)
        if not match:
            continue
        inline = (match.group("rest") or "").strip().strip("*_").strip()
        if inline:
            return inline
        block = section_body(text[match.end() :])
        if block:
            return block
    return None


def fields_from(text: str, labels: dict[str, tuple[str, ...]]) -> dict[str, str]:
    """The labelled values found in `text`, by key (labels that are absent are left out)."""
    found = {}
    for key, names in labels.items():
        value = field_value(text, *names)
        if value is not None:
            found[key] = value
    return found


_HEADING = re.compile(r"^\s*(?:#{1,6}\s+\S.*|(?:\*\*|__)?[A-Za-z][A-Za-z _/-]{1,40}(?:\*\*|__)?\s*[:：].*)$")
_ITEM = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s")


def section_body(rest: str) -> str:
    """Lines under a label, up to the next heading-like line (a list may span blank lines)."""
    lines: list[str] = []
    for line in rest.splitlines():
        if not line.strip():
            if lines and not _ITEM.match(lines[-1]) and not lines[-1].startswith((" ", "\t")):
                break
            continue
        if _HEADING.match(line) and not _ITEM.match(line) and not line.startswith((" ", "\t")):
            break
        lines.append(line)
    return "\n".join(lines).strip()


def section_list(text: str, *labels: str) -> list[str]:
    """The bulleted or numbered items under a label or heading."""
    if not isinstance(text, str):
        return []
    for label in labels:
        match = _label_pattern(label).search(text)
        if not match:
            continue
        body = section_body(text[match.end() :])
        items = [i for i in to_list(body) if not i.endswith(":")] if body else []
        inline = (match.group("rest") or "").strip()
        if not items and inline:
            items = to_list(inline)
        return items
    return []
