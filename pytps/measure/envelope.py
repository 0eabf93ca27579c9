"""A run's verdict against a trust envelope (what `pytps calibrate` saved, pytps.calibrate.envelope):
whether the run's point, its events per second per stream and its concurrency, lies in a ladder
cell that passed. Pure arithmetic on the envelope's dict and the run's summary, so the run can
judge itself with the envelope handed to it as a value, without importing calibrate.
"""

from __future__ import annotations

from typing import Any

# A measured speed up to this fraction above a rung counts as that rung.
RUNG_TOLERANCE = 0.05


def passing_region(env: dict[str, Any]) -> list[dict[str, float]]:
    """The envelope proper: the (events/s per stream, concurrency) points whose every cell passed."""
    points: dict[tuple[float, int], bool] = {}
    for c in env["cells"]:
        key = (float(c["events_per_s"]), int(c["concurrency"]))
        points[key] = points.get(key, True) and bool(c["passed"])
    return [{"events_per_s": e, "concurrency": n} for (e, n), ok in sorted(points.items()) if ok]


def run_point(metadata: dict[str, Any], summary: dict[str, Any]) -> tuple[float | None, float | None]:
    """A run's measured (events per second per stream, concurrency): the median decode speed over
    tokens per event, and the concurrency the run held (rate mode: Little's law, requests per
    second x mean end-to-end latency)."""
    decode = (summary.get("decode_tps") or {}).get("p50")
    tpe = summary.get("tokens_per_event") or 1.0
    events = decode / tpe if decode else None
    load = metadata.get("load") or {}
    conc: float | None = None
    if load.get("mode") == "concurrency" and load.get("concurrency"):
        conc = float(load["concurrency"])
    else:
        rps, e2e = summary.get("request_throughput_rps"), (summary.get("e2e_s") or {}).get("mean")
        conc = rps * e2e if rps and e2e else None
    return events, conc


def run_verdict(
    env: dict[str, Any] | None, metadata: dict[str, Any], summary: dict[str, Any] | None
) -> dict[str, Any] | None:
    """The envelope as results.json records it (key ``envelope``), with this run's verdict: inside
    when the ladder cell that covers the run's point (the next rung up on both axes) was measured
    and passed. None without a saved envelope."""
    if env is None:
        return None
    out: dict[str, Any] = {
        k: env.get(k)
        for k in ("path", "transport", "date_utc", "host", "cpu_model", "cpu_count", "kernel", "pytps_version")
    }
    out["thresholds"] = env.get("thresholds")
    out["region"] = passing_region(env)
    events, conc = run_point(metadata, summary or {})
    out["run_events_per_s"], out["run_concurrency"] = events, conc
    inside: bool | None = None
    reason = None
    out["cell"] = None
    if events is None or conc is None:
        reason = "the run measured no per-stream speed or concurrency"
    else:
        rates = sorted({float(c["events_per_s"]) for c in env["cells"]})
        concs = sorted({int(c["concurrency"]) for c in env["cells"]})
        # A measured speed jitters around the rate a server schedules (a late first event makes
        # the rest look faster): within RUNG_TOLERANCE above a rung is that rung.
        up_rate = next((r for r in rates if r * (1 + RUNG_TOLERANCE) >= events), None)
        up_conc = next((n for n in concs if n * (1 + RUNG_TOLERANCE) >= conc), None)
        if up_rate is None or up_conc is None:
            inside, reason = False, "beyond the calibrated ladder"
        else:
            cover = [
                c for c in env["cells"] if float(c["events_per_s"]) == up_rate and int(c["concurrency"]) == up_conc
            ]
            if not cover:
                inside, reason = False, f"the cell {up_rate:g} events/s x {up_conc} was not measured"
            else:
                failed = sorted({f for c in cover for f, ok in (c.get("flags") or {}).items() if not ok})
                inside = all(c["passed"] for c in cover)
                if not inside:
                    why = ", ".join(failed) or "the emulator could not keep its schedule there"
                    reason = f"the cell {up_rate:g} events/s x {up_conc} failed: {why}"
                out["cell"] = {"events_per_s": up_rate, "concurrency": up_conc}
    out["inside"], out["reason"] = inside, reason
    return out
