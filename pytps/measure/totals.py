"""The run summary's counts, and the figures made of them: throughput, goodput, error rate,
token sources (docs/metrics.md defines each).

One piece of code for both summaries of a run: pytps.measure.summary.RunSummary (exact columns,
the run's) and pytps.embed.bounded.RunningSummary (histograms, an instrumented program's) count
with RunTotals.add and finish with RunTotals.figures, so the same formulas give both.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pytps.measure.metrics import NS_PER_S, RequestMetrics, histogram_distribution


def measured_window_s(t_first_send_ns: int | None, t_last_finish_ns: int | None) -> float | None:
    """The measured window: first measured send to last measured finish (None: empty or zero)."""
    t0, t1 = t_first_send_ns, t_last_finish_ns
    return (t1 - t0) / NS_PER_S if t0 is not None and t1 is not None and t1 > t0 else None


@dataclass
class RunTotals:
    """Running counts of measured requests, O(1) per request."""

    requests: int = 0
    ok: int = 0
    retried: int = 0  # sent again on a new connection (a stale kept-alive one)
    usage_implausible: int = 0  # whose reported usage failed pytps.measure.usage's bounds
    tokens_ok: int = 0  # output tokens of successful requests
    events_ok: int = 0  # output events of successful requests
    useful: int = 0
    useful_tokens: int = 0
    errors: dict[str, int] = field(default_factory=dict)  # error class -> count
    token_sources: dict[str, int] = field(default_factory=dict)
    not_useful: dict[str, int] = field(default_factory=dict)  # error / slo / validation -> count
    first: tuple[int, float | None] | None = None  # (t_send_ns, ttft_s) of the earliest request
    prompt_tokens_ok: int = 0  # input tokens the server reported for successful requests
    inputs_ok: int = 0  # embeddings' texts, rerank's documents, of successful requests
    streamed: int = 0  # measured requests whose responses were streams (the rest: whole bodies)
    embedding_dims: dict[int, int] = field(default_factory=dict)  # vector length -> requests
    # Token agreement (docs/metrics.md): successful requests whose billed output tokens differ from
    # those counted from the stream, and the largest difference (billed - streamed, signed).
    token_mismatches: int = 0
    token_mismatch_max: int | None = None

    def add(
        self, m: RequestMetrics, *, retries: int, useful: bool, why_not: str | None, usage_implausible: bool = False
    ) -> bool:
        """One measured request; True when it succeeded (its figures count)."""
        self.requests += 1
        self.retried += retries > 0
        self.usage_implausible += usage_implausible
        if useful:
            self.useful += 1
            self.useful_tokens += m.output_tokens
        elif why_not is not None:
            kind = why_not.split(":")[0]
            self.not_useful[kind] = self.not_useful.get(kind, 0) + 1
        self.streamed += m.stream
        if self.first is None or m.t_send_ns < self.first[0]:
            self.first = (m.t_send_ns, m.ttft_s)
        if not m.ok:
            assert m.error is not None
            self.errors[m.error] = self.errors.get(m.error, 0) + 1
            return False
        self.ok += 1
        self.tokens_ok += m.output_tokens
        if m.tokens_billed is not None and m.tokens_streamed is not None and m.tokens_billed != m.tokens_streamed:
            diff = m.tokens_billed - m.tokens_streamed
            self.token_mismatches += 1
            if self.token_mismatch_max is None or abs(diff) > abs(self.token_mismatch_max):
                self.token_mismatch_max = diff
        self.events_ok += m.output_events
        self.token_sources[m.token_source] = self.token_sources.get(m.token_source, 0) + 1
        self.prompt_tokens_ok += m.prompt_tokens or 0
        self.inputs_ok += m.inputs or 0
        if m.embedding_dim is not None:
            self.embedding_dims[m.embedding_dim] = self.embedding_dims.get(m.embedding_dim, 0) + 1
        return True

    def figures(self, window_s: float | None) -> dict[str, Any]:
        """The summary's keys made of the counts, over the measured window, in results.json's order.
        The steady window's two keys are None: a summary that knows every event fills them in."""
        n, ok, useful = self.requests, self.ok, self.useful
        sources = self.token_sources
        return {
            "measured_window_s": window_s,
            "output_tokens_total": self.tokens_ok,
            "output_throughput_tps": self.tokens_ok / window_s if window_s else None,
            "request_throughput_rps": ok / window_s if window_s else None,
            "steady_window_s": None,
            "steady_output_throughput_tps": None,
            "requests_total": n,
            "requests_ok": ok,
            "requests_retried": self.retried,
            "usage_implausible": self.usage_implausible,
            "token_mismatches": self.token_mismatches,
            "token_mismatch_max": self.token_mismatch_max,
            "error_rate": (n - ok) / n if n else None,
            "errors": dict(sorted(self.errors.items())),
            "token_source": next(iter(sources)) if len(sources) == 1 else ("mixed" if sources else None),
            "token_sources": dict(sources),
            "tokens_per_event": self.tokens_ok / self.events_ok if self.events_ok else None,
            # Goodput: useful requests (docs/metrics.md, "Goodput and SLOs"), over the measured window.
            "useful_requests": useful,
            "useful_share": useful / n if n else None,
            "goodput_rps": useful / window_s if window_s else None,
            "goodput_tps": self.useful_tokens / window_s if window_s else None,
            "not_useful": dict(sorted(self.not_useful.items())),
            # Input side (docs/metrics.md, "Input throughput"): tokens the server reported, and
            # for embeddings and rerank the texts or documents, of successful requests.
            "streamed": self.streamed == n if n else None,
            "input_tokens_total": self.prompt_tokens_ok,
            "input_token_throughput_tps": self.prompt_tokens_ok / window_s if window_s else None,
            "inputs_total": self.inputs_ok,
            "input_throughput_per_s": self.inputs_ok / window_s if window_s and self.inputs_ok else None,
            "embedding_dim": next(iter(self.embedding_dims)) if len(self.embedding_dims) == 1 else None,
            "embedding_dims": {str(k): v for k, v in sorted(self.embedding_dims.items())},
        }

    @property
    def first_ttft_s(self) -> float | None:
        """TTFT of the earliest request sent (the cold start), None if it had none."""
        return None if self.first is None else self.first[1]


def request_distributions(dist: Callable[[str], dict[str, Any]], itl: Any, gaps: Any) -> dict[str, Any]:
    """The distributions a run's summary and the bounded collector's both begin with, in results.json's
    order: each a statistic of the requests (`dist`: exact columns, or histograms), but ITL and the
    chunk gaps, per token, from their histograms."""
    return {
        "ttft_s": dist("ttft_s"),
        "ttfat_s": dist("ttfat_s"),
        "tpot_s": dist("tpot_s"),
        "itl_s": histogram_distribution(itl),
        "e2e_s": dist("e2e_s"),
        "ttfb_s": dist("ttfb_s"),
        "decode_tps": dist("decode_tps"),
        "user_tps": dist("user_tps"),
        "chunk_gap_s": histogram_distribution(gaps),
    }
