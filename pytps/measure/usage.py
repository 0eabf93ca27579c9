"""The server's usage counts, checked against what arrived before anything trusts them.

A server's `usage` is untrusted input: a hostile or buggy server can report 10**15 completion
tokens for a five-event stream, or 2**63-1 prompt tokens. pytps never sizes an allocation by
such a count (metrics take counts as weights), and this module decides, per request, which
counts are plausible (docs/metrics.md, "Implausible usage"):

- completion tokens: at most 64 per event received (the stream's SSE events, at least one), and,
  when the request set max_tokens, at most 4 x max_tokens + 64;
- prompt and cached tokens: at most the request body's bytes + 65,536 (a token covers at least a
  byte of the prompt; the margin is the chat template, images, tools), and never above 2**24;
- every count: a non-negative integer.

An implausible count is removed from the record's usage by RequestRecord.fill_from_recorder
(every transport's records are checked alike, once) (so output tokens fall back to a local
tokenizer or the events, and cost and cache figures leave it out) and kept, as reported, in
`usage_implausible`, which the journal records and the summary counts.
"""

from __future__ import annotations

from typing import Any

#: Completion tokens a single SSE event may plausibly carry (speculative decoding, batched chunks).
MAX_TOKENS_PER_EVENT = 64
#: Prompt tokens beyond the request body's bytes: a chat template, images, tool schemas.
PROMPT_MARGIN_TOKENS = 65_536
#: No prompt is longer than this (16,777,216 tokens), whatever the body.
MAX_PROMPT_TOKENS = 1 << 24


def completion_bound(events: int, max_tokens: int | None) -> int:
    """The most completion tokens a request that received `events` SSE events can plausibly have."""
    bound = MAX_TOKENS_PER_EVENT * max(1, events)
    if max_tokens is not None and max_tokens > 0:
        bound = min(bound, 4 * max_tokens + 64)
    return bound


def prompt_bound(request_bytes: int | None) -> int:
    """The most prompt (or cached) tokens a request of `request_bytes` body bytes can plausibly have."""
    if request_bytes is None:
        return MAX_PROMPT_TOKENS
    return min(MAX_PROMPT_TOKENS, request_bytes + PROMPT_MARGIN_TOKENS)


def implausible_counts(
    usage: dict[str, Any], events: int, max_tokens: int | None, request_bytes: int | None
) -> dict[str, Any]:
    """The usage fields that fail the bounds above, with the values the server reported."""
    out: dict[str, Any] = {}
    completion = completion_bound(events, max_tokens)
    prompt = prompt_bound(request_bytes)
    bounds = {
        "completion_tokens": completion,
        "reasoning_tokens": completion,
        "prompt_tokens": prompt,
        "cached_tokens": prompt,
        "total_tokens": completion + prompt,
    }
    for name, value in usage.items():
        valid = isinstance(value, int) and not isinstance(value, bool) and value >= 0
        if not valid or value > bounds.get(name, MAX_PROMPT_TOKENS):
            out[name] = value
    return out
