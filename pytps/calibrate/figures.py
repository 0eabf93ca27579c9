"""A calibration cell's figures, from the client's measured stamps and the emulator's truth only.

Nothing here reads the emulator's schedule except to say how late the emulator itself was: every
error figure compares a client stamp with the emulator's stamp of the same event's write
(docs/calibrate.md, "The reference stamp").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

#: The emulator counts as keeping its schedule while its median lateness (write returned minus
#: the event's scheduled instant) stays within this, and every stream gets >= 90% of its event
#: rate. Lateness bunches events but leaves every figure exact (they are against the writes, not
#: the schedule); a late median, or less than 90% of the rate, means the cell no longer tests the
#: rate it names. (A p99 would stop rows for a moment's preemption on a busy host.)
EMULATOR_LATE_P50_US = 1_000.0
EMULATOR_MIN_RATE_SHARE = 0.9
#: The client kept up unless its stamp delay grew by more than this over a stream (the median,
#: over requests, of the last tenth's median minus the first tenth's) while its median delay
#: was beyond it too: a backlog that built up, not one moment's preemption.
KEPT_UP_GROWTH_US = 500.0


@dataclass
class ClientStream:
    """What a client measured for one request: its send stamp and one stamp per output event."""

    t_send_ns: int
    stamps_ns: np.ndarray  # int64, CLOCK_MONOTONIC, one per content event as the client saw it
    response_id: str | None = None  # None: matched to the truth by order of first event
    kernel_ns: np.ndarray | None = None  # the kernel's receive stamps of the same events (optional)
    ok: bool = True


@dataclass
class CellFigures:
    """Per cell: the client's error against the emulator's truth (times in µs unless named)."""

    requests: int = 0
    failed: int = 0
    events: int = 0
    tokens: int = 0
    stamp_delay_p50_us: float = math.nan
    stamp_delay_p99_us: float = math.nan
    stamp_delay_max_us: float = math.nan
    kernel_delay_p50_us: float | None = None  # the kernel's share: its receive stamp - the write
    kernel_delay_p99_us: float | None = None
    ttft_error_mean_ms: float = math.nan  # mean |client TTFT - true TTFT|
    ttft_error_signed_ms: float = math.nan  # mean client TTFT - true TTFT
    ttft_error_p99_ms: float = math.nan
    tpot_error_pct: float = math.nan  # mean |client TPOT - true TPOT| / true TPOT, in %
    cpu_us_per_token: float | None = None
    cpu_us_per_event: float | None = None
    read_floor_us_per_event: float | None = None
    kept_up: bool = True
    delay_growth_us: float = math.nan
    emulator_late_p50_us: float = math.nan
    emulator_late_p99_us: float = math.nan
    emulator_rate_share: float = math.nan  # achieved / scheduled events per second per stream
    emulator_kept_schedule: bool = True
    flags: dict[str, bool] = field(default_factory=dict)
    passed: bool = False

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k, v in self.__dict__.items():
            out[k] = None if isinstance(v, float) and not math.isfinite(v) else v
        return out


def _pct(a: np.ndarray, q: float) -> float:
    return float(np.percentile(a, q, method="inverted_cdf")) if len(a) else math.nan


def match_truth(
    streams: Sequence[ClientStream], truth: Sequence[dict[str, Any]]
) -> list[tuple[ClientStream, dict[str, Any]]]:
    """Each client stream with its truth record: by response id when the client knew it, else by
    order (the n-th first event the client saw belongs to the n-th first event written). Every
    stream of a cell has the same schedule, so a swap under the order rule costs at most the
    spread of the requests' receipts."""
    by_id = {t["id"]: t for t in truth}
    pairs: list[tuple[ClientStream, dict[str, Any]]] = []
    unnamed = [
        s for s in streams if s.ok and len(s.stamps_ns) and (s.response_id is None or s.response_id not in by_id)
    ]
    for s in streams:
        if s.ok and s.response_id is not None and s.response_id in by_id:
            pairs.append((s, by_id.pop(s.response_id)))
    rest = sorted((t for t in by_id.values() if len(t["sent_ns"])), key=lambda t: t["sent_ns"][0])
    unnamed.sort(key=lambda s: int(s.stamps_ns[0]))
    pairs.extend(zip(unnamed, rest, strict=False))  # more truth than streams: failed requests
    return pairs


def cell_figures(
    streams: Sequence[ClientStream],
    truth: Sequence[dict[str, Any]],
    *,
    events_per_s: float,
    cpu_s: float | None,
    thresholds: dict[str, float],
    read_floor_us_per_event: float | None = None,
) -> CellFigures:
    """The figures of one cell. thresholds: ttft_error_ms, tpot_error_pct, stamp_p99_ms."""
    fig = CellFigures(requests=len(streams), failed=sum(1 for s in streams if not s.ok))
    fig.read_floor_us_per_event = read_floor_us_per_event
    delays: list[np.ndarray] = []
    kernel: list[np.ndarray] = []
    ttft_err: list[float] = []
    tpot_err: list[float] = []
    growth: list[float] = []
    late: list[np.ndarray] = []
    rate_share: list[float] = []
    for s, t in match_truth(streams, truth):
        sent = np.asarray(t["sent_ns"], dtype=np.int64)
        tokens = np.asarray(t["tokens"], dtype=np.int64)
        k = min(len(sent), len(s.stamps_ns))
        if k == 0:
            continue
        d = np.asarray(s.stamps_ns[:k], dtype=np.int64) - sent[:k]
        delays.append(d)
        fig.events += k
        fig.tokens += int(tokens[:k].sum())
        if s.kernel_ns is not None and len(s.kernel_ns) >= k:
            kernel.append(np.asarray(s.kernel_ns[:k], dtype=np.int64) - sent[:k])
        # True TTFT from when the kernel had the request (the emulator's delay in reading it is
        # TTFT a client really sees), else from the emulator's own receipt.
        received = t.get("received_kernel_ns")
        received = t["received_ns"] if received is None else received
        err = (int(s.stamps_ns[0]) - s.t_send_ns) - (int(sent[0]) - int(received))
        ttft_err.append(err / 1e6)
        after_first = int(tokens[1:k].sum())
        if k >= 2 and after_first > 0 and sent[k - 1] > sent[0]:
            true_tpot = (sent[k - 1] - sent[0]) / after_first
            client_tpot = (int(s.stamps_ns[k - 1]) - int(s.stamps_ns[0])) / after_first
            tpot_err.append(abs(client_tpot - true_tpot) / true_tpot * 100)
            rate_share.append(((k - 1) / ((sent[k - 1] - sent[0]) / 1e9)) / events_per_s)
        tenth = max(1, k // 10)
        growth.append(float(np.median(d[-tenth:]) - np.median(d[:tenth])) / 1e3)
        sched = np.asarray(t.get("scheduled_ns") or [], dtype=np.int64)
        if len(sched) >= k:
            late.append(sent[:k] - sched[:k])
    all_d = np.concatenate(delays) / 1e3 if delays else np.zeros(0)
    fig.stamp_delay_p50_us = _pct(all_d, 50)
    fig.stamp_delay_p99_us = _pct(all_d, 99)
    fig.stamp_delay_max_us = float(all_d.max()) if len(all_d) else math.nan
    if kernel:
        all_k = np.concatenate(kernel) / 1e3
        fig.kernel_delay_p50_us, fig.kernel_delay_p99_us = _pct(all_k, 50), _pct(all_k, 99)
    if ttft_err:
        e = np.asarray(ttft_err)
        fig.ttft_error_mean_ms = float(np.abs(e).mean())
        fig.ttft_error_signed_ms = float(e.mean())
        fig.ttft_error_p99_ms = _pct(np.abs(e), 99)
    if tpot_err:
        fig.tpot_error_pct = float(np.mean(tpot_err))
    if cpu_s is not None and fig.tokens:
        fig.cpu_us_per_token = cpu_s * 1e6 / fig.tokens
        fig.cpu_us_per_event = cpu_s * 1e6 / fig.events
    if growth:
        fig.delay_growth_us = float(np.median(growth))
        fig.kept_up = not (fig.delay_growth_us > KEPT_UP_GROWTH_US and fig.stamp_delay_p50_us > KEPT_UP_GROWTH_US)
    if late:
        all_late = np.concatenate(late) / 1e3
        fig.emulator_late_p50_us, fig.emulator_late_p99_us = _pct(all_late, 50), _pct(all_late, 99)
    if rate_share:
        fig.emulator_rate_share = float(np.mean(rate_share))
    fig.emulator_kept_schedule = not (
        fig.emulator_late_p50_us > EMULATOR_LATE_P50_US or fig.emulator_rate_share < EMULATOR_MIN_RATE_SHARE
    )
    measured = fig.events > 0
    fig.flags = {
        "ttft": measured and fig.ttft_error_mean_ms <= thresholds["ttft_error_ms"],
        "tpot": measured and fig.tpot_error_pct <= thresholds["tpot_error_pct"],
        "stamp_p99": measured and fig.stamp_delay_p99_us <= thresholds["stamp_p99_ms"] * 1e3,
        "no_errors": fig.failed == 0 and len(delays) == fig.requests,
    }
    # A cell whose emulator fell behind did not test the rate it names: it is no pass, whatever
    # its flags (output shows it as "emulator late"; run_verdict says so).
    fig.passed = all(fig.flags.values()) and fig.emulator_kept_schedule
    return fig
