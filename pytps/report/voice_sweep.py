"""A voice sweep's table (voice_sweep.json, pytps.app.voice_sweep): one line per concurrency with
the voice figures against load, headed by the catalogue's labels and units, then the knee."""

from __future__ import annotations

from typing import Any

from pytps.measure.catalogue import figure_heading, of_figure

__all__ = ["voice_sweep_lines"]


def _cell(name: str, value: Any) -> str:
    m = of_figure(name)
    if value is None:
        return "-"
    v = float(value) * (m.scale if m is not None else 1.0)
    return f"{v:.1f}" if abs(v) >= 100 else f"{v:.3g}" if abs(v) < 1 else f"{v:.2f}"


def voice_sweep_lines(index: dict[str, Any]) -> str:
    cells = index["cells"]
    names = [k for k in cells[0] if k not in ("concurrency", "requests", "ok", "dir")] if cells else []
    heads = ["concurrency", "ok", *(figure_heading(n) for n in names)]
    rows = [[str(c["concurrency"]), f"{c['ok']}/{c['requests']}", *(_cell(n, c.get(n)) for n in names)] for c in cells]
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(heads)]
    what = "text to speech" if index["api"] == "openai-speech" else "speech to text"
    out = [f"voice sweep: {what} ({index['api']}) over concurrency"]
    out.append("  ".join(h.rjust(w) for h, w in zip(heads, widths, strict=True)))
    out += ["  ".join(v.rjust(w) for v, w in zip(r, widths, strict=True)) for r in rows]
    knee = index["knee"]
    if knee["concurrency"] is None:
        out.append(f"knee: none ({knee['rule']} fails already at concurrency {knee['first_failing']})")
    else:
        tail = (
            f"; fails from {knee['first_failing']}" if knee["first_failing"] is not None else "; at every level swept"
        )
        out.append(f"knee: concurrency {knee['concurrency']} (the highest with {knee['rule']}{tail})")
    return "\n".join(out)
