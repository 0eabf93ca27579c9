"""A sweep's curve as a table (units in every header), then what it says: the knee, the most
goodput, the SLO capacity. Printed by `pytps sweep` and, from sweep.json, by `pytps report`."""

from __future__ import annotations

from typing import Any

# How many digits each column of the cells' table prints: a cell's figures side by side in a column
# line up on the point.
DIGITS = {
    "ttft_p50_s": ".1f",
    "e2e_p50_s": ".1f",
    "e2e_p99_s": ".1f",
    "request_throughput_rps": ",.2f",
    "input_throughput_per_s": ",.1f",
    "tpot_p50_s": ".2f",
    "user_tps_mean": ",.1f",
    "decode_tps_mean": ",.1f",
    "output_throughput_tps": ",.0f",
    "goodput_rps": ",.2f",
    "error_rate": ".1f",
    "accuracy": ".1f",
    "joules_per_output_token": ".4g",
}


def print_curve(index: dict[str, Any]) -> None:
    """The curve as a table (units in every header), then what it says."""
    from pytps.measure.catalogue import metric
    from pytps.sweep.cells import headline_metric, table

    names = list(index["axes"])
    cols = [(name, *headline_metric(name)) for name in table(index["cells"])]
    graded = any((c["headline"] or {}).get("accuracy") is not None for c in index["cells"])
    if graded:
        cols.append(("accuracy", metric("accuracy").heading, metric("accuracy")))
    cols += optional_columns(index["cells"])
    header = [*names, *(heading for _, heading, _ in cols)]
    rows = []
    for cell in index["cells"]:
        h = cell["headline"] or {}
        row = [str(cell["values"][n]) for n in names]
        row += ["-" if h.get(name) is None else format(m.shown(h[name]), DIGITS[name]) for name, _, m in cols]
        if graded and h.get("accuracy") is not None and h.get("accuracy_ci95"):
            lo, hi = (metric("accuracy").shown(x) for x in h["accuracy_ci95"])
            row[-1] += f" [{lo:.1f}, {hi:.1f}]"
        if cell["status"] != "done":
            row[len(names)] = cell["status"] + (f": {cell['error']}" if cell.get("error") else "")
            row[len(names) + 1 :] = [""] * (len(row) - len(names) - 1)
        rows.append(row)
    # max() of a list: a search whose budget ended after its start run has no cell to show.
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(header)]
    print(" | ".join(h.rjust(w) for h, w in zip(header, widths, strict=True)))
    print("-+-".join("-" * w for w in widths))
    for r in rows:
        print(" | ".join(v.rjust(w) for v, w in zip(r, widths, strict=True)))
    user, decode = metric("user_tps"), metric("decode_tps")
    per_user = any((c.get("headline") or {}).get("user_tps_mean") is not None for c in index["cells"]) or not any(
        c.get("headline") for c in index["cells"]
    )
    for a in index["analysis"]:
        where = ", ".join(f"{k}={v}" for k, v in a["fixed"].items())
        prefix = f"[{where}] " if where else ""
        best = a["max_goodput"]
        most = "-" if best is None else "{:.2f} req/s at {}".format(best["goodput_rps"], best["value"])
        knees = (
            f"knee ({a['axis']}, on {user.label}): {_or_none(a['knee'])} · "
            f"knee on {decode.label}: {_or_none(a['knee_decode'])}"
            if per_user
            else "no knee: no output tokens to time per user (embeddings or rerank)"
        )
        print(
            f"{prefix}{knees} · max goodput: {most} · "
            f"SLO capacity ({a['slo_target']:.0%} useful): {_or_none(a['slo_capacity'])}"
        )
        if a.get("accuracy_first") is not None:
            at_knee = a.get("accuracy_at_knee")
            print(
                f"{prefix}accuracy at the lowest {a['axis']}: {a['accuracy_first']:.1%} · at the knee: "
                + ("-" if at_knee is None else f"{at_knee:.1%}")
            )
    if index.get("stopped"):
        print(f"the sweep {index['stopped']}")


def optional_columns(cells: list[dict[str, Any]]) -> list[tuple[str, str, Any]]:
    """Headline columns shown only when a cell has the figure: joules per output token
    (--server-metrics with an energy counter or a power gauge)."""
    from pytps.sweep.cells import headline_metric

    names = ("joules_per_output_token",)
    return [(n, *headline_metric(n)) for n in names if any((c.get("headline") or {}).get(n) is not None for c in cells)]


def _or_none(value: Any) -> str:
    return "none in this range" if value is None else str(value)
