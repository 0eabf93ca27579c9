"""A matrix's cells as lines (`pytps run -c` / `pytps sweep -c`), from its matrix.json index."""

from __future__ import annotations

from typing import Any


def _values_label(values: dict[str, Any]) -> str:
    return "".join(f" {k}={v}" for k, v in values.items())


def _fmt(headline: dict[str, Any], key: str, scale: float, fmt: str) -> str:
    v = headline.get(key)
    return "-" if v is None else format(v * scale, fmt)


def print_matrix(index: dict[str, Any]) -> None:
    for c in index["cells"]:
        h = c["headline"] or {}
        name = f"{c['endpoint']} x {c['workload']}{_values_label(c.get('values') or {})}"
        if c["status"] != "done":
            print(f"{name}: {c['status']} {c['error'] or ''}")
        elif index["kind"] == "run":
            print(
                f"{name}: p50 TTFT {_fmt(h, 'ttft_p50_s', 1e3, '.1f')} ms · "
                f"p50 TPOT {_fmt(h, 'tpot_p50_s', 1e3, '.2f')} ms · "
                f"{_fmt(h, 'output_throughput_tps', 1, ',.0f')} tok/s (all users) · goodput "
                f"{_fmt(h, 'goodput_rps', 1, ',.2f')} req/s · errors {_fmt(h, 'error_rate', 100, '.1f')}%"
            )
        else:
            if c.get("capacity"):
                cap = c["capacity"]
                low, high = (f"{v:.4g}" if v is not None else "?" for v in (cap["low"], cap["high"]))
                print(f"{name}: capacity {low}–{high} (the cell's sweep.json has the probes)")
                continue
            for a in c["analysis"] or []:
                best = (a["max_goodput"] or {}).get("value")
                print(
                    f"{name}: knee {_or_none(a['knee'])} · max goodput at {_or_none(best)} · "
                    f"SLO capacity {_or_none(a['slo_capacity'])}"
                )


def _or_none(value: Any) -> str:
    """A sweep's figure that was not found (no knee within the range) says so, not `None`."""
    return "none in this range" if value is None else str(value)
