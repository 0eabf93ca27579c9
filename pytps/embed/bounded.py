"""RunningSummary: results.json's summary of any number of records in constant memory, for
BoundedCollector. Where RunSummary keeps a compact column per figure (exact percentiles), this
keeps a histogram (percentiles within 0.1%, pytps.Histogram's bound) and running totals; the
formulas are pytps.measure.metrics's, and the counts' figures (throughput, goodput, error rate)
are pytps.measure.totals's, as RunSummary's are. What needs every event or request at the end (the steady window,
the time series) is None here.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pytps._native import _core
from pytps.measure.metrics import finish_ns, histogram_distribution, itl_samples, measure
from pytps.measure.totals import RunTotals, measured_window_s, request_distributions
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
    "ttfb_s": 1e-9,
}


class RunningSummary:
    def __init__(self) -> None:
        self._hists = {name: _core.Histogram() for name in _SCALED}
        self._itl = _core.Histogram()
        self._gaps = _core.Histogram()
        self.totals = RunTotals()
        self._t0: int | None = None
        self._t1: int | None = None

    def _record(self, name: str, value: float | None) -> None:
        if value is not None:
            self._hists[name].record(max(1, round(value / _SCALED[name])))

    def add(self, record: Record) -> None:
        rec = record.request
        if rec is None:
            return
        m, layout = measure(rec)
        self._record("send_overhead_s", m.send_overhead_s)
        self._t0 = rec.t_send_ns if self._t0 is None else min(self._t0, rec.t_send_ns)
        done = finish_ns(rec)
        if done is not None:
            self._t1 = done if self._t1 is None else max(self._t1, done)
        why_not = None if record.why_not_useful is None else str(record.why_not_useful)
        implausible = rec.usage_implausible is not None
        if not self.totals.add(
            m, retries=rec.retries, useful=bool(record.useful), why_not=why_not, usage_implausible=implausible
        ):
            return
        for name in ("ttft_s", "ttfat_s", "tpot_s", "e2e_s", "decode_tps", "user_tps", "e2e_500_s", "ttfb_s"):
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

        summary: dict[str, Any] = {
            **request_distributions(dist, self._itl, self._gaps),
            "send_overhead_s": dist("send_overhead_s"),
            "e2e_500_s": dist("e2e_500_s"),
            **self.totals.figures(measured_window_s(self._t0, self._t1)),
            "server_timings": None,
            "first_ttft_s": self.totals.first_ttft_s,
            "cache": None,
            "ttft_by_prompt_tokens": None,
            "e2e_by_output_tokens": None,
            "time_series": None,
        }
        return summary


__all__ = ["RunningSummary"]
