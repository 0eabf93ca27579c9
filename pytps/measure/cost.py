"""What requests cost, from the token counts the server reported and the prices given
(docs/metrics.md, "Cost"). Prices are per million tokens, plus an optional fee per request."""

from __future__ import annotations

from dataclasses import dataclass

from pytps.errors import ConfigError
from pytps.measure.records import RequestRecord


@dataclass(frozen=True)
class Prices:
    input_per_mtok: float = 0.0
    cached_input_per_mtok: float | None = None  # None: cached input tokens cost as input
    output_per_mtok: float = 0.0
    per_request: float = 0.0
    currency: str = "USD"
    bill_failed: bool = True  # providers bill failed requests for the tokens they processed

    def __post_init__(self) -> None:
        for name in ("input_per_mtok", "cached_input_per_mtok", "output_per_mtok", "per_request"):
            value = getattr(self, name)
            if value is not None and not value >= 0:
                raise ConfigError(f"price {name} must be >= 0, got {value!r}")

    def request_cost(self, rec: RequestRecord, output_tokens: int, *, prompt_includes_cached: bool = True) -> float:
        """A request's cost: its prompt (cached part at the cached price), its output, its fee.
        Failed requests are billed for what the server reported, unless bill_failed is off.
        prompt_includes_cached: OpenAI-style prompt_tokens count cache reads too; Anthropic's
        input_tokens leave them out."""
        if not rec.ok and not self.bill_failed:
            return 0.0
        cached = rec.usage.get("cached_tokens", 0)
        prompt = rec.usage.get("prompt_tokens", 0) + (0 if prompt_includes_cached else cached)
        cached = min(cached, prompt)
        cached_price = self.input_per_mtok if self.cached_input_per_mtok is None else self.cached_input_per_mtok
        tokens_cost = (
            (prompt - cached) * self.input_per_mtok + cached * cached_price + output_tokens * self.output_per_mtok
        )
        return tokens_cost / 1e6 + self.per_request
