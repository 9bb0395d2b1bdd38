"""List prices of LLM APIs in USD per million tokens, to turn a response's usage into cost.

PRICES_AS_OF says when the table was compiled. Sources: the providers' published pricing
pages (Anthropic: docs "Pricing"; OpenAI: API "Pricing"; Gemini API: "Pricing", the paid
tier, prompts up to 200k tokens), as captured between March and April
2026; models released after that (e.g. `claude-sonnet-5`, `claude-opus-4-8`) are NOT in it.
Prices change: a runtime's `prices` option overrides or adds entries, and a model found
nowhere costs 0 with `meta.price_unknown: true` on the observation (never a guess).

Standard (non-batch, non-priority) rates; Anthropic's long-context surcharges are ignored.
Prompt caching: Anthropic bills cache writes (5-minute) at 1.25x and cache reads at 0.1x the
input price; OpenAI bills cached prompt tokens at the model's `cache_read` price, where the
table has one, else at the input price (an upper bound).
"""

import re
from collections.abc import Mapping
from dataclasses import dataclass

from pydantic import ConfigDict, Field

from ix.domain.model import Model

PRICES_AS_OF = "2026-11-26"


@dataclass(frozen=True)
class Price:
    """USD per million tokens."""

    input: float
    output: float
    cache_read: float | None = None   # None: the provider's default rule (see module doc)
    cache_write: float | None = None


class PriceOption(Model):
    """One entry of a runtime's `prices` option: `{input_per_mtok, output_per_mtok, ...}`."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    input_per_mtok: float = Field(ge=0)
    output_per_mtok: float = Field(ge=0)
    cache_read_per_mtok: float | None = Field(None, ge=0)
    cache_write_per_mtok: float | None = Field(None, ge=0)

    def price(self) -> Price:
        return Price(self.input_per_mtok, self.output_per_mtok, self.cache_read_per_mtok,
                     self.cache_write_per_mtok)


def _p(inp: float, out: float, cache_read: float | None = None) -> Price:
    return Price(inp, out, cache_read)


ANTHROPIC: dict[str, Price] = {
    "claude-opus-4-7": _p(5.0, 25.0),
    "claude-opus-4-6": _p(5.0, 25.0),
    "claude-opus-4-5": _p(5.0, 25.0),
    "claude-opus-4-1": _p(15.0, 75.0),
    "claude-opus-4-0": _p(15.0, 75.0),
    "claude-opus-4": _p(15.0, 75.0),
    "claude-sonnet-4-6": _p(3.0, 15.0),
    "claude-sonnet-4-5": _p(3.0, 15.0),
    "claude-sonnet-4-0": _p(3.0, 15.0),
    "claude-sonnet-4": _p(3.0, 15.0),
    "claude-3-7-sonnet": _p(3.0, 15.0),
    "claude-haiku-4-5": _p(1.0, 5.0),
    "claude-3-5-haiku": _p(0.80, 4.0),
    "claude-3-haiku": _p(0.25, 1.25),
}

OPENAI: dict[str, Price] = {
    "gpt-5.1": _p(1.25, 10.0, 0.125),
    "gpt-5": _p(1.25, 10.0, 0.125),
    "gpt-5-mini": _p(0.25, 2.0, 0.025),
    "gpt-5-nano": _p(0.05, 0.40, 0.005),
    "gpt-4.1": _p(2.0, 8.0, 0.50),
    "gpt-4.1-mini": _p(0.40, 1.60, 0.10),
    "gpt-4.1-nano": _p(0.10, 0.40, 0.025),
    "gpt-4o": _p(2.50, 10.0, 1.25),
    "gpt-4o-mini": _p(0.15, 0.60, 0.075),
    "o3": _p(2.0, 8.0, 0.50),
    "o4-mini": _p(1.10, 4.40, 0.275),
    "o3-mini": _p(1.10, 4.40, 0.55),
}

GEMINI: dict[str, Price] = {
    "gemini-3-pro-preview": _p(2.0, 12.0, 0.20),
    "gemini-2.5-pro": _p(1.25, 10.0, 0.125),
    "gemini-2.5-flash": _p(0.30, 2.50, 0.03),
    "gemini-2.5-flash-lite": _p(0.10, 0.40, 0.01),
    "gemini-2.0-flash": _p(0.10, 0.40, 0.025),
    "gemini-2.0-flash-lite": _p(0.075, 0.30),
}

# A dated snapshot id costs what its alias costs: claude-sonnet-4-5-20250929, gpt-4o-2024-08-06.
_SNAPSHOT = re.compile(r"-(\d{8}|\d{4}-\d{2}-\d{2})$")
# Claude on Bedrock (`anthropic.claude-sonnet-4-5-20250929-v1:0`, with a cross-region
# inference profile's prefix: `us.`, `eu.`, `apac.`, `global.`, ...) and on Vertex
# (`claude-sonnet-4-5@20250929`) costs what the same model costs on the Anthropic API: the
# table's rates are the providers' global on-demand ones (regional endpoints of models from
# Sonnet 4.5 on bill 10% more: a `prices` entry gives exact costs there).
_BEDROCK = re.compile(r"^(?:[a-z]{2,7}(?:-[a-z]+)?\.)?anthropic\.(claude-.+?)(?:-v\d+(?::\d+)?)?$")
_VERTEX = re.compile(r"^(claude-[^@]+)@.+$")


def normalise(model: str) -> str:
    name = model.strip().lower()
    cloud = _BEDROCK.match(name) or _VERTEX.match(name)
    if cloud is not None:
        name = cloud.group(1)
    return _SNAPSHOT.sub("", name)


def find_price(table: Mapping[str, Price], overrides: Mapping[str, PriceOption],
               *models: str | None) -> Price | None:
    """The price of the first of `models` known: `overrides` (the runtime's `prices` option)
    before the built-in `table`; names compare without case and without a date suffix."""
    names = [normalise(m) for m in models if m]
    mine = {normalise(k): v for k, v in overrides.items()}
    for name in names:
        if name in mine:
            return mine[name].price()
    for name in names:
        if name in table:
            return table[name]
    return None


def anthropic_cost(price: Price, *, input_tokens: int, output_tokens: int,
                   cache_write_tokens: int = 0, cache_read_tokens: int = 0) -> float:
    """USD for one Messages response's `usage` (input_tokens excludes cached tokens there)."""
    write = price.cache_write if price.cache_write is not None else price.input * 1.25
    read = price.cache_read if price.cache_read is not None else price.input * 0.1
    return (input_tokens * price.input + output_tokens * price.output
            + cache_write_tokens * write + cache_read_tokens * read) / 1e6


def openai_cost(price: Price, *, prompt_tokens: int, completion_tokens: int,
                cached_tokens: int = 0) -> float:
    """USD for one Chat Completions `usage` (prompt_tokens includes the cached ones)."""
    cached = min(max(cached_tokens, 0), prompt_tokens)
    read = price.cache_read if price.cache_read is not None else price.input
    return ((prompt_tokens - cached) * price.input + cached * read
            + completion_tokens * price.output) / 1e6


def gemini_cost(price: Price, *, prompt_tokens: int, output_tokens: int,
                cached_tokens: int = 0) -> float:
    """USD for one `usageMetadata` (promptTokenCount includes the cached tokens; output is
    candidates plus thoughts): as Chat Completions bills, cache reads at `cache_read`."""
    return openai_cost(price, prompt_tokens=prompt_tokens, completion_tokens=output_tokens,
                       cached_tokens=cached_tokens)


def estimate_cost(model: str | None, input_tokens: int, output_tokens: int = 0) -> float:
    """A rough cost for `ix run --dry-run`: the table's prices, 0 for an unknown model."""
    price = find_price({**ANTHROPIC, **OPENAI, **GEMINI}, {}, model)
    if price is None:
        return 0.0
    return round((input_tokens * price.input + output_tokens * price.output) / 1e6, 6)
