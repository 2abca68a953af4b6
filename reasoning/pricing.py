"""What a call cost, in US dollars, from its token counts.

Prices are per million tokens. Cache writes cost 1.25x the input price and cache reads
0.1x, as Anthropic bills them. Unknown models (local servers, the offline model) cost 0.
"""

from __future__ import annotations

from decimal import Decimal

from reasoning.llm.base import Usage

MILLION = Decimal(1_000_000)

# (input, output) per million tokens, matched by model-name prefix, longest first.
PRICES: dict[str, tuple[Decimal, Decimal]] = {
    "claude-opus-4-5": (Decimal("5"), Decimal("25")),
    "claude-opus-4": (Decimal("15"), Decimal("75")),
    "claude-sonnet-4": (Decimal("3"), Decimal("15")),
    "claude-3-7-sonnet": (Decimal("3"), Decimal("15")),
    "claude-3-5-sonnet": (Decimal("3"), Decimal("15")),
    "claude-haiku-4": (Decimal("1"), Decimal("5")),
    "claude-3-5-haiku": (Decimal("0.80"), Decimal("4")),
    "claude-3-haiku": (Decimal("0.25"), Decimal("1.25")),
}


def price_for(model: str) -> tuple[Decimal, Decimal] | None:
    for prefix in sorted(PRICES, key=len, reverse=True):
        if model.startswith(prefix):
            return PRICES[prefix]
    return None


def cost_of(model: str, usage: Usage) -> Decimal:
    price = price_for(model or "")
    if price is None:
        return Decimal(0)
    input_price, output_price = price
    total = (
        usage.input_tokens * input_price
        + usage.output_tokens * output_price
        + usage.cache_write_tokens * input_price * Decimal("1.25")
        + usage.cache_read_tokens * input_price * Decimal("0.1")
    ) / MILLION
    return total.quantize(Decimal("0.000001"))
