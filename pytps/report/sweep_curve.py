"""A sweep's curve as a table (units in every header), then what it says: the knee, the most
goodput, the SLO capacity. Printed by `pytps sweep` and, from sweep.json, by `pytps report`."""

from __future__ import annotations

from typing import Any


def print_curve(index: dict[str, Any]) -> None:
    """The curve as a table (units in every header), then what it says."""
    names = list(index["axes"])
    cols = [
        ("p50 TTFT [ms]", "ttft_p50_s", 1e3, ".1f"),
        ("p50 TPOT [ms]", "tpot_p50_s", 1e3, ".2f"),
        ("mean tok/s/user (E2E)", "user_tps_mean", 1, ",.1f"),
        ("mean decode tok/s/user", "decode_tps_mean", 1, ",.1f"),
        ("output tok/s (all users)", "output_throughput_tps", 1, ",.0f"),
        ("goodput [req/s]", "goodput_rps", 1, ",.2f"),
        ("errors", "error_rate", 100, ".1f"),
    ]
    header = [*names, *(c[0] for c in cols)]
    rows = []
    for cell in index["cells"]:
        h = cell["headline"] or {}
        row = [str(cell["values"][n]) for n in names]
        for _, key, scale, fmt in cols:
            v = h.get(key)
            row.append("-" if v is None else format(v * scale, fmt) + ("%" if key == "error_rate" else ""))
        if cell["status"] != "done":
            row[len(names)] = cell["status"] + (f": {cell['error']}" if cell.get("error") else "")
            row[len(names) + 1 :] = [""] * (len(row) - len(names) - 1)
        rows.append(row)
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    print(" | ".join(h.rjust(w) for h, w in zip(header, widths, strict=True)))
    print("-+-".join("-" * w for w in widths))
    for r in rows:
        print(" | ".join(v.rjust(w) for v, w in zip(r, widths, strict=True)))
    for a in index["analysis"]:
        where = ", ".join(f"{k}={v}" for k, v in a["fixed"].items())
        prefix = f"[{where}] " if where else ""
        best = a["max_goodput"]
        most = "-" if best is None else "{:.2f} req/s at {}".format(best["goodput_rps"], best["value"])
        print(
            f"{prefix}knee ({a['axis']}, per-user output tok/s over E2E): {_or_none(a['knee'])} · "
            f"knee on decode tok/s: {_or_none(a['knee_decode'])} · max goodput: {most} · "
            f"SLO capacity ({a['slo_target']:.0%} useful): {_or_none(a['slo_capacity'])}"
        )
    if index.get("stopped"):
        print(f"the sweep {index['stopped']}")


def _or_none(value: Any) -> str:
    return "none in this range" if value is None else str(value)
