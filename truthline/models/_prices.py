"""The declared price table: USD per million tokens, prompt at the input rate, thinking
at the output rate (METRICS.md §5). Local and simulated models cost nothing.

Prices change; a spec option ``price_in=...;price_out=...`` overrides this table, and
``register_price`` adds a model for a whole session. A price's source date (the day its
pricing page was read; ``as_of``, or the spec option ``price_date``) is what a cost table
prints beside it (RealityBench Table 7); the built-in entries record none.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from truthline.errors import TruthlineError
from truthline.models._spec import ModelSpec


@dataclass(frozen=True)
class Price:
    """USD per million tokens; a negative or non-finite rate is refused when the price is
    made (a negative one would turn spending into credit and let a run past its budget)."""

    input_per_m: float
    output_per_m: float
    as_of: str | None = None
    """ISO date the list price was read from the developer's pricing page (None: not recorded)."""

    def __post_init__(self) -> None:
        for what, rate in (("input", self.input_per_m), ("output", self.output_per_m)):
            if not isinstance(rate, int | float) or not math.isfinite(rate) or rate < 0:
                raise TruthlineError(
                    f"price: the {what} rate {rate!r} is not a finite number of USD per "
                    "million tokens >= 0"
                )

    def cost(self, tokens_in: int, tokens_out: int, tokens_thinking: int = 0) -> float:
        return (
            tokens_in * self.input_per_m + (tokens_out + tokens_thinking) * self.output_per_m
        ) / 1e6


FREE = Price(0.0, 0.0)

# List prices (USD / 1M tokens) as declared for this release; override per spec.
PRICES: dict[str, Price] = {
    "gpt-4o": Price(2.50, 10.00),
    "gpt-4o-mini": Price(0.15, 0.60),
    "gpt-4.1": Price(2.00, 8.00),
    "gpt-4.1-mini": Price(0.40, 1.60),
    "gpt-4.1-nano": Price(0.10, 0.40),
    "o4-mini": Price(1.10, 4.40),
    "gpt-5": Price(1.25, 10.00),
    "gpt-5-mini": Price(0.25, 2.00),
}


def register_price(
    model: str, input_per_m: float, output_per_m: float, as_of: str | None = None
) -> None:
    """Declare a model's price for this session (rates checked as ``Price`` does)."""
    try:
        PRICES[model] = Price(input_per_m, output_per_m, as_of)
    except TruthlineError as exc:
        raise TruthlineError(f"model {model!r}: {exc}") from None


def check_budget(value: float | None, option: str = "--max-cost") -> float | None:
    """``value`` if it is a usable budget in USD (None: no budget); a negative, NaN or
    infinite one is refused with one line saying what to give."""
    if value is None:
        return None
    if not math.isfinite(value) or value < 0:
        raise TruthlineError(
            f"{option} {value!r}: give a finite amount of USD >= 0 (e.g. 5; 0 sends nothing "
            "to a paid model), or leave it out for no budget"
        )
    return float(value)


def price_known(spec: ModelSpec) -> bool:
    """Whether the spec's prices are declared (table entry, or both price options): a
    budget needs them; an unknown price would make every answer look free."""
    if spec.kind == "openai" and spec.name in PRICES:
        return True
    return spec.opt("price_in") is not None and spec.opt("price_out") is not None


def price_for(spec: ModelSpec) -> Price:
    """The spec's own price options, else the table entry for an OpenAI model, else free."""
    table = PRICES.get(spec.name) if spec.kind == "openai" else None
    base = table or FREE
    pin = spec.opt_float("price_in", base.input_per_m)
    pout = spec.opt_float("price_out", base.output_per_m)
    try:
        return Price(pin or 0.0, pout or 0.0)
    except TruthlineError as exc:
        raise TruthlineError(f"model spec {spec.text!r}: {exc}") from None


def price_date(spec: ModelSpec) -> str | None:
    """The source date of the spec's price: its ``price_date`` option, else the table
    entry's ``as_of`` (None when neither records one)."""
    table = PRICES.get(spec.name) if spec.kind == "openai" else None
    return spec.opt("price_date") or (table.as_of if table else None)
