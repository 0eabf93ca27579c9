"""A peer's run as pytps reads it (`pytps import`): what the peer recorded, per request where it
kept requests and as its own aggregates where it kept only those, with where it came from. Nothing
is invented: a figure the peer did not record stays None, and pytps's per-request figures are
computed from the peer's by pytps's own definitions (docs/metrics.md) only where they follow from
them exactly (docs/interop.md, "Importing peers' results")."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any


@dataclass
class ImportedRequest:
    """One request of a peer's run: its times in seconds, from the request's send."""

    ok: bool
    error: str | None = None
    ttft_s: float | None = None
    e2e_s: float | None = None
    #: The gaps between the stream's output-bearing chunks after the first, as the peer kept them.
    chunk_gaps_s: list[float] | None = None
    #: The request's time per output token, as the peer computed it (used when no chunk gaps are kept).
    tpot_s: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    #: The send, in seconds on the peer's own clock (its epoch or its counter): only differences count.
    start_s: float | None = None
    request_id: str | None = None


@dataclass
class ImportedRun:
    """One run of a peer: its tool, the settings it ran with, its requests (None when it kept only
    aggregates) and its aggregates, in pytps's names and units (seconds, tokens per second)."""

    tool: str
    tool_version: str | None
    source: str
    #: When the peer ran, ISO 8601 UTC (None when its file does not say).
    date_utc: str | None
    model: str | None = None
    base_url: str | None = None
    api: str | None = None
    input_tokens: str | None = None
    output_tokens: str | None = None
    concurrency: int | None = None
    rate_rps: float | None = None
    requests: list[ImportedRequest] | None = None
    #: The peer's own aggregates: pytps distribution keys (ttft_s, tpot_s, itl_s, e2e_s) to
    #: {"mean", "p50", ...} in seconds, and run figures (output_throughput_tps, request_throughput_rps,
    #: requests_total, requests_ok, duration_s).
    aggregates: dict[str, Any] = field(default_factory=dict)
    #: A label inside the file (a guidellm benchmark's strategy), when one file holds several runs.
    part: str | None = None
    notes: list[str] = field(default_factory=list)


def first_event_tokens(tokens: int, events: int) -> int:
    """The tokens pytps's token layout gives the first of `events` output-bearing events carrying
    `tokens` in all, when no per-chunk counts are trusted: ⌈tokens / events⌉ (docs/metrics.md)."""
    return -(-tokens // events)


def tpot_from_gaps(gaps_s: list[float], tokens: int | None) -> float | None:
    """TPOT by pytps's definition from a request's chunk gaps and its output tokens: the time from
    the first to the last token-carrying event over the tokens after the first event's, the tokens
    laid on the events evenly (docs/metrics.md, "token layout"). None where it is not defined."""
    events = len(gaps_s) + 1
    if tokens is None or not gaps_s or tokens < events:
        # Fewer tokens than events: the layout leaves some events empty, and which is the last
        # token-carrying one is not known from the gaps alone.
        return None
    after_first = tokens - first_event_tokens(tokens, events)
    span = math.fsum(gaps_s)
    if after_first <= 0 or not span > 0:
        return None
    return span / after_first
