"""RunningSummary: results.json's summary of any number of records in constant memory, for
BoundedCollector. Where RunSummary keeps a compact column per figure (exact percentiles), this
keeps a histogram (percentiles within 0.1%, pytps.Histogram's bound) and running totals; the
formulas are pytps.measure.metrics's. What needs every event or request at the end (the steady window,
the time series) is None here.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pytps._native import _core
from pytps.measure.metrics import NS_PER_S, finish_ns, histogram_distribution, itl_samples, measure
from pytps.results.record import Record

# Figure -> (histogram scale: value = recorded x scale). Seconds are kept as ns, speeds as milli-tok/s.
_SCALED = {
    "ttft_s": 1e-9,
    "ttfat_s": 1e-9,
    "tpot_s": 1e-9,
    "e2e_s": 1e-9,
    "decode_tps": 1e-3,
    "user_tps": 1e-3,
    "send_overhead_s": 1e-9,
    "e2e_500_s": 1e-9,
}


class RunningSummary:
    def __init__(self) -> None:
        self._hists = {name: _core.Histogram() for name in _SCALED}
        self._itl = _core.Histogram()
        self._gaps = _core.Histogram()
        self.requests = self.ok = self.retried = self.tokens_ok = self.events_ok = self.useful = 0
        self.usage_implausible = 0  # requests whose usage failed pytps.measure.usage's bounds
        self.useful_tokens = 0
        self._errors: dict[str, int] = {}
        self._sources: dict[str, int] = {}
        self._why_not: dict[str, int] = {}
        self._t0: int | None = None
        self._t1: int | None = None
        self._first: tuple[int, float | None] | None = None

    def _record(self, name: str, value: float | None) -> None:
        if value is not None:
            self._hists[name].record(max(1, round(value / _SCALED[name])))

    def add(self, record: Record) -> None:
        rec = record.request
        if rec is None:
            return
        m, layout = measure(rec)
        self.requests += 1
        self.retried += rec.retries > 0
        self.usage_implausible += rec.usage_implausible is not None
        self._record("send_overhead_s", m.send_overhead_s)
        self._t0 = rec.t_send_ns if self._t0 is None else min(self._t0, rec.t_send_ns)
        done = finish_ns(rec)
        if done is not None:
            self._t1 = done if self._t1 is None else max(self._t1, done)
        if self._first is None or rec.t_send_ns < self._first[0]:
            self._first = (rec.t_send_ns, m.ttft_s)
        if record.useful:
            self.useful += 1
            self.useful_tokens += m.output_tokens
        elif record.why_not_useful is not None:
            kind = str(record.why_not_useful).split(":")[0]
            self._why_not[kind] = self._why_not.get(kind, 0) + 1
        if not m.ok:
            assert m.error is not None
            self._errors[m.error] = self._errors.get(m.error, 0) + 1
            return
        self.ok += 1
        self.tokens_ok += m.output_tokens
        self.events_ok += m.output_events
        self._sources[m.token_source] = self._sources.get(m.token_source, 0) + 1
        for name in ("ttft_s", "ttfat_s", "tpot_s", "e2e_s", "decode_tps", "user_tps", "e2e_500_s"):
            self._record(name, getattr(m, name))
        values, counts = itl_samples(rec.output_times_ns, layout)
        if len(values):
            self._itl.record_many(np.repeat(np.maximum(1, np.rint(values)).astype(np.int64), counts))
        if len(rec.output_times_ns) > 1:
            self._gaps.record_many(np.maximum(1, np.diff(rec.output_times_ns)))

    def finish(self) -> dict[str, Any]:
        """The keys of RunSummary.finish(), as far as running totals give them."""

        def dist(name: str) -> dict[str, Any]:
            return histogram_distribution(self._hists[name], scale=_SCALED[name])

        t0, t1 = self._t0, self._t1
        window_s = (t1 - t0) / NS_PER_S if t0 is not None and t1 is not None and t1 > t0 else None
        n = self.requests
        sources = self._sources
        summary: dict[str, Any] = {
            "ttft_s": dist("ttft_s"),
            "ttfat_s": dist("ttfat_s"),
            "tpot_s": dist("tpot_s"),
            "itl_s": histogram_distribution(self._itl),
            "e2e_s": dist("e2e_s"),
            "decode_tps": dist("decode_tps"),
            "user_tps": dist("user_tps"),
            "chunk_gap_s": histogram_distribution(self._gaps),
            "send_overhead_s": dist("send_overhead_s"),
            "e2e_500_s": dist("e2e_500_s"),
            "measured_window_s": window_s,
            "output_tokens_total": self.tokens_ok,
            "output_throughput_tps": self.tokens_ok / window_s if window_s else None,
            "request_throughput_rps": self.ok / window_s if window_s else None,
            "steady_window_s": None,
            "steady_output_throughput_tps": None,
            "requests_total": n,
            "requests_ok": self.ok,
            "requests_retried": self.retried,
            "usage_implausible": self.usage_implausible,
            "error_rate": (n - self.ok) / n if n else None,
            "errors": dict(sorted(self._errors.items())),
            "token_source": next(iter(sources)) if len(sources) == 1 else ("mixed" if sources else None),
            "token_sources": dict(sources),
            "tokens_per_event": self.tokens_ok / self.events_ok if self.events_ok else None,
            "useful_requests": self.useful,
            "useful_share": self.useful / n if n else None,
            "goodput_rps": self.useful / window_s if window_s else None,
            "goodput_tps": self.useful_tokens / window_s if window_s else None,
            "not_useful": dict(sorted(self._why_not.items())),
            "server_timings": None,
            "first_ttft_s": None if self._first is None else self._first[1],
            "cache": None,
            "ttft_by_prompt_tokens": None,
            "e2e_by_output_tokens": None,
            "time_series": None,
        }
        return summary


__all__ = ["RunningSummary"]
