"""Tools every Nexus has: a safe calculator and a clock.

The calculator parses the expression into an AST and walks an allow-list of nodes; it never
calls eval. Sizes are bounded so `10**10**10` is refused instead of eating the machine.
"""

from __future__ import annotations

import ast
import math
import operator
import re
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

MAX_EXPRESSION_CHARS = 1000
MAX_RESULT_DIGITS = 1000
MAX_DEPTH = 50


class CalculatorError(ValueError):
    """The expression is not allowed or cannot be computed; the message says why."""


_BINARY = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY = {ast.UAdd: operator.pos, ast.USub: operator.neg}


def _round(value: float, places: int = 0) -> int | float:
    """Rounding as people do it, halves away from zero (Python's round(2.5) is 2)."""
    if not isinstance(places, int) or abs(places) > 100:
        raise CalculatorError("round takes a whole number of places, at most 100")
    try:
        rounded = Decimal(repr(value)).quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP)
    except InvalidOperation:
        raise CalculatorError(f"cannot round {value!r} to {places} places") from None
    return int(rounded) if places <= 0 else float(rounded)


_FUNCTIONS = {
    "sqrt": math.sqrt,
    "abs": abs,
    "round": _round,
    "floor": math.floor,
    "ceil": math.ceil,
    "exp": math.exp,
    "log": math.log,
    "log10": math.log10,
    "log2": math.log2,
    "ln": math.log,
    "sin": math.sin,
    "cos": math.cos,
    "tan": math.tan,
    "asin": math.asin,
    "acos": math.acos,
    "atan": math.atan,
    "degrees": math.degrees,
    "radians": math.radians,
    "factorial": math.factorial,
    "min": min,
    "max": max,
}
_CONSTANTS = {"pi": math.pi, "e": math.e, "tau": math.tau}


def calculate(expression: str) -> int | float:
    """Evaluate an arithmetic expression safely."""
    if not isinstance(expression, str) or not expression.strip():
        raise CalculatorError("give an expression such as 2 + 2")
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise CalculatorError(f"the expression is longer than {MAX_EXPRESSION_CHARS} characters")
    text = expression.strip().replace("^", "**").replace("×", "*").replace("÷", "/")
    text = text.replace("−", "-")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        raise CalculatorError(f"cannot read {expression!r} as arithmetic") from None
    value = _eval(tree.body, 0)
    # Floats overflow to inf (1e308*10) and inf - inf is nan, without an error of their own.
    if isinstance(value, float) and not math.isfinite(value):
        raise CalculatorError("the result is too large for the calculator's floating point")
    return value


def _eval(node: ast.AST, depth: int) -> Any:
    if depth > MAX_DEPTH:
        raise CalculatorError("the expression is nested too deeply")
    if (
        isinstance(node, ast.Constant)
        and isinstance(node.value, int | float)
        and not isinstance(node.value, bool)
    ):
        return node.value
    if isinstance(node, ast.Name) and node.id in _CONSTANTS:
        return _CONSTANTS[node.id]
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_eval(node.operand, depth + 1))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left = _eval(node.left, depth + 1)
        right = _eval(node.right, depth + 1)
        if isinstance(node.op, ast.Pow):
            _check_power(left, right)
        if isinstance(node.op, ast.Mult):
            _check_size(left, right)
        try:
            value = _BINARY[type(node.op)](left, right)
        except ZeroDivisionError:
            raise CalculatorError("division by zero") from None
        except OverflowError:
            raise CalculatorError("the result is too large") from None
        if isinstance(value, complex):  # a negative number to a fractional power
            return _real_root(left, right)
        return value
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCTIONS:
        if node.keywords:
            raise CalculatorError("functions take positional arguments only")
        args = [_eval(arg, depth + 1) for arg in node.args]
        if node.func.id == "factorial" and args and (not isinstance(args[0], int) or args[0] > 500):
            raise CalculatorError("factorial needs a whole number up to 500")
        try:
            return _FUNCTIONS[node.func.id](*args)
        except (ValueError, TypeError) as exc:
            if "domain" in str(exc):  # Python's "math domain error", as people would say it
                shown = ", ".join(format(arg, "g") if isinstance(arg, float) else str(arg) for arg in args)
                raise CalculatorError(f"{node.func.id}({shown}) has no real value") from None
            raise CalculatorError(f"{node.func.id}: {exc}") from None
        except OverflowError:
            raise CalculatorError("the result is too large") from None
    if isinstance(node, ast.Name):
        raise CalculatorError(f"unknown name {node.id!r}")
    raise CalculatorError(f"{type(node).__name__} is not allowed in an arithmetic expression")


def _real_root(base: float, exponent: float) -> float:
    """(-8)**(1/3) as people mean it, the real cube root -2 (Python's is a complex number);
    a negative number has no real root of an even degree."""
    degree = 1 / exponent if exponent else 0
    if abs(degree - round(degree)) < 1e-9 and round(degree) % 2 == 1:
        return -((-base) ** exponent)
    raise CalculatorError(f"{format_number(base)} to the power {format_number(exponent)} has no real value")


def _digits(value: Any) -> float:
    magnitude = abs(value)
    return math.log10(magnitude) if magnitude > 1 else 0.0


def _check_power(base: Any, exponent: Any) -> None:
    # 10**1000 has 1001 digits: as many as 2**3322, refused alike.
    if abs(exponent) > 10_000 or _digits(base) * max(exponent, 0) >= MAX_RESULT_DIGITS:
        raise CalculatorError(f"the result would have more than {MAX_RESULT_DIGITS} digits")


def _check_size(left: Any, right: Any) -> None:
    if _digits(left) + _digits(right) > MAX_RESULT_DIGITS:
        raise CalculatorError(f"the result would have more than {MAX_RESULT_DIGITS} digits")


def format_number(value: int | float) -> str:
    """A result as people write it: a float's digits past the 15th are binary rounding noise
    (0.1+0.2 gives 0.30000000000000004), so they are not shown."""
    if isinstance(value, float):
        value = float(f"{value:.15g}")
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return format(Decimal(repr(value)).normalize(), "f") if abs(value) < 1e15 else repr(value)
    return str(value)


def calculator(expression: str) -> str:
    """Tool entry point: the expression and its value, e.g. "17*23 = 391"."""
    return f"{expression.strip()} = {format_number(calculate(expression))}"


# Abbreviations name one offset each, whatever the season ("PDT" is UTC-7 in January too), and
# the zone that uses it, which may keep the other one at the moment.
ZONE_ABBREVIATIONS: dict[str, tuple[int, str]] = {
    "PST": (-8 * 60, "America/Los_Angeles"),
    "PDT": (-7 * 60, "America/Los_Angeles"),
    "MST": (-7 * 60, "America/Denver"),
    "MDT": (-6 * 60, "America/Denver"),
    "CST": (-6 * 60, "America/Chicago"),
    "CDT": (-5 * 60, "America/Chicago"),
    "EST": (-5 * 60, "America/New_York"),
    "EDT": (-4 * 60, "America/New_York"),
    "AKST": (-9 * 60, "America/Anchorage"),
    "HST": (-10 * 60, "Pacific/Honolulu"),
    "BST": (60, "Europe/London"),
    "WET": (0, "Europe/Lisbon"),
    "CET": (60, "Europe/Paris"),
    "CEST": (2 * 60, "Europe/Paris"),
    "EET": (2 * 60, "Europe/Athens"),
    "EEST": (3 * 60, "Europe/Athens"),
    "MSK": (3 * 60, "Europe/Moscow"),
    "IST": (5 * 60 + 30, "Asia/Kolkata"),
    "SGT": (8 * 60, "Asia/Singapore"),
    "HKT": (8 * 60, "Asia/Hong_Kong"),
    "JST": (9 * 60, "Asia/Tokyo"),
    "KST": (9 * 60, "Asia/Seoul"),
    "AWST": (8 * 60, "Australia/Perth"),
    "ACST": (9 * 60 + 30, "Australia/Adelaide"),
    "AEST": (10 * 60, "Australia/Sydney"),
    "AEDT": (11 * 60, "Australia/Sydney"),
    "NZST": (12 * 60, "Pacific/Auckland"),
    "NZDT": (13 * 60, "Pacific/Auckland"),
    # (Not AST: Atlantic and Arabia Standard Time both write it.)
    "ADT": (-3 * 60, "America/Halifax"),
    "BRT": (-3 * 60, "America/Sao_Paulo"),
    "WAT": (60, "Africa/Lagos"),
    "CAT": (2 * 60, "Africa/Maputo"),
    "SAST": (2 * 60, "Africa/Johannesburg"),
    "EAT": (3 * 60, "Africa/Nairobi"),
    "PKT": (5 * 60, "Asia/Karachi"),
    "ICT": (7 * 60, "Asia/Bangkok"),
    "WIB": (7 * 60, "Asia/Jakarta"),
}
# "UTC+5:30", "GMT-03:00", "+0545": a fixed offset from UTC.
_OFFSET = re.compile(r"^(?:UTC|GMT)?\s*([+-])\s*(\d{1,2})(?::?(\d{2}))?$", re.IGNORECASE)


def offset_name(minutes: int) -> str:
    """ "UTC+05:30" for 330 minutes ahead of UTC."""
    sign = "-" if minutes < 0 else "+"
    hours, rest = divmod(abs(minutes), 60)
    return f"UTC{sign}{hours:02d}:{rest:02d}"


def _zone(name: str) -> tuple[tzinfo, str, str | None]:
    """The zone a name means, how the answer names it, and the place an abbreviation belongs
    to (an offset is named by its value: "UTC+05:30", whatever way it was written)."""
    if name.upper() in ("UTC", "Z", "ZULU"):
        return UTC, name, None
    if name.upper() in ZONE_ABBREVIATIONS:
        minutes, place = ZONE_ABBREVIATIONS[name.upper()]
        return timezone(timedelta(minutes=minutes)), f"{name.upper()} ({offset_name(minutes)})", place
    if match := _OFFSET.match(name):
        hours, minutes = int(match.group(2)), int(match.group(3) or 0)
        total = (hours * 60 + minutes) * (-1 if match.group(1) == "-" else 1)
        if minutes > 59 or not -12 * 60 <= total <= 14 * 60:
            raise ValueError(f"{name!r} is not an offset any place keeps (UTC-12:00 to UTC+14:00)")
        return timezone(timedelta(minutes=total)), offset_name(total), None
    try:
        return ZoneInfo(name), name, None
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(
            f"unknown time zone {name!r}; use an IANA name such as Europe/Paris, an offset such as "
            "UTC+05:30, or an abbreviation such as PST"
        ) from None


def clock(timezone: str = "UTC") -> str:
    """Tool entry point: the current date and time in a time zone, a fixed offset from UTC or
    an abbreviation ("PDT": its own offset, and its place's time when that keeps another now)."""
    name = (timezone or "UTC").strip()
    zone, label, place = _zone(name)
    now = datetime.now(zone)
    text = f"{now:%A %d %B %Y, %H:%M:%S} {label} (ISO {now.isoformat(timespec='seconds')})"
    if place is not None:
        there = datetime.now(ZoneInfo(place))
        if there.utcoffset() != now.utcoffset():
            minutes = int(there.utcoffset().total_seconds() // 60)  # type: ignore[union-attr]
            text += (
                f"; {place} is on {there.tzname()} ({offset_name(minutes)}) at this time of year, "
                f"where it is {there:%H:%M}"
            )
    return text


CALCULATOR_SCHEMA = {
    "type": "object",
    "properties": {
        "expression": {
            "type": "string",
            "description": "Arithmetic such as '17*23' or 'sqrt(2) * pi'; functions: "
            + ", ".join(sorted(_FUNCTIONS)),
        }
    },
    "required": ["expression"],
}
# One description wherever the calculator is offered (in process and over MCP): it names what
# it computes in words, so a model, and the local answer check, can tell which questions it answers.
CALCULATOR_DESCRIPTION = (
    "Evaluate an arithmetic expression exactly: sums, products, percentages, powers, square roots and "
    "other functions. Use it for any calculation. "
    + CALCULATOR_SCHEMA["properties"]["expression"]["description"]
)

CLOCK_SCHEMA = {
    "type": "object",
    "properties": {
        "timezone": {
            "type": "string",
            "description": "IANA time zone (Europe/Paris), offset (UTC+05:30) or abbreviation (PST); "
            "default UTC",
        }
    },
}
