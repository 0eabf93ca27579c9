"""The summary's workload figures (docs/metrics.md, "Workloads"): the prefix cache as the server
reported it, TTFT against prompt length and E2E against output length in bins, and, for
multi-turn sessions, figures per turn index and the sessions in flight.

Like pytps.measure.summary, it keeps a few numbers per request in compact columns as requests finish, so
every figure is exact and results.json stays small (bins, not points: the points are in the
journal).
"""

from __future__ import annotations

import math
from array import array
from pathlib import Path
from typing import Any

import numpy as np

from pytps.measure.columns import Columns
from pytps.measure.metrics import RequestMetrics, distribution

#: A request is "mostly cached" when the server reported at least this share of its prompt as
#: cached tokens (docs/metrics.md).
MOSTLY_CACHED = 0.5


def cache_counts(usage: dict[str, Any], prompt_includes_cached: bool) -> tuple[int | None, int | None]:
    """(prompt tokens, cached tokens) as the server reported them (a record's usage), the prompt
    counting cache reads too (Anthropic's input_tokens leave them out); None where not reported."""
    prompt = usage.get("prompt_tokens")
    cached = usage.get("cached_tokens")
    if prompt is not None and not prompt_includes_cached:
        prompt += cached or 0
    return prompt, cached


def log2_bins(x: np.ndarray, y: np.ndarray) -> list[dict[str, Any]]:
    """y's median, p90 and mean per power-of-two bin of x ([lo, 2 lo)); empty bins left out."""
    keep = ~np.isnan(y) & (x >= 1)
    x, y = x[keep], y[keep]  # copies: worked on in place below, to keep the finish's memory low
    del keep
    if not len(x):
        return []
    lg = np.log2(x, out=x) if x.dtype == np.float64 else np.log2(x)
    del x
    np.floor(lg, out=lg)
    exp = lg.astype(np.int64)
    del lg
    out = []
    for e in np.flatnonzero(np.bincount(exp)):  # the bins present, in order (exp >= 0: x >= 1)
        d = distribution(y[exp == e], scratch=True)
        out.append({"lo": int(2**e), "hi": int(2 ** (e + 1)), "count": d["count"], "p50": d["p50"],
                    "p90": d["p90"], "mean": d["mean"]})  # fmt: skip
    return out


def _ttft_stats(ttft: np.ndarray) -> dict[str, Any]:
    d = distribution(ttft)
    return {"ttft_p50_s": d["p50"], "ttft_mean_s": d["mean"]}


class WorkloadFigures:
    """Accumulates successful measured requests' lengths, cache figures and turns."""

    def __init__(self, prompt_includes_cached: bool = True, spill_path: Path | None = None) -> None:
        self.prompt_includes_cached = prompt_includes_cached
        # prompt, cached: -1 when not reported; turn: -1 when not a session's turn. Spilled to
        # spill_path a block at a time (pytps.measure.columns), or kept in memory without one.
        spec = {
            "ttft": "d", "e2e": "d", "decode": "d", "prompt": "q", "cached": "q", "output": "q", "turn": "q",
            "images": "q", "pixels": "q", "image_bytes": "q",
        }  # fmt: skip
        self.columns = Columns(spec, spill_path)
        live = self.columns.live
        self._ttft, self._e2e, self._decode = live["ttft"], live["e2e"], live["decode"]
        self._prompt, self._cached, self._output, self._turn = (
            live["prompt"],
            live["cached"],
            live["output"],
            live["turn"],
        )
        self._session_start = array("q")
        self._session_end = array("q")

    def add(self, usage: dict[str, Any], turn: int | None, m: RequestMetrics) -> None:
        """One successful measured request: its usage and turn (a record's, or a journal line's)."""
        prompt, cached = cache_counts(usage, self.prompt_includes_cached)
        self._ttft.append(math.nan if m.ttft_s is None else m.ttft_s)
        self._e2e.append(math.nan if m.e2e_s is None else m.e2e_s)
        self._decode.append(math.nan if m.decode_tps is None else m.decode_tps)
        self._prompt.append(-1 if prompt is None else prompt)
        self._cached.append(-1 if cached is None else cached)
        self._output.append(m.output_tokens)
        self._turn.append(-1 if turn is None else turn)
        live = self.columns.live
        live["images"].append(m.images)
        live["pixels"].append(m.image_pixels)
        live["image_bytes"].append(m.image_bytes)
        self.columns.commit()

    def add_session(self, t_start_ns: int, t_end_ns: int) -> None:
        """A measured session, from its first turn's send to its last turn's finish."""
        self._session_start.append(t_start_ns)
        self._session_end.append(t_end_ns)

    @property
    def sessions(self) -> tuple[np.ndarray, np.ndarray]:
        return np.frombuffer(self._session_start, dtype=np.int64), np.frombuffer(self._session_end, dtype=np.int64)

    def finish(self) -> dict[str, Any]:
        # The columns are read back a few at a time (pytps.measure.columns), and each dropped once
        # used, so the finish's memory is a few columns, whatever the run's length.
        cols = self.columns
        ttft, prompt, cached = cols.column("ttft"), cols.column("prompt"), cols.column("cached")
        reported = (prompt > 0) & (cached >= 0)
        p_sum, c_sum = int(prompt.sum(where=reported)), int(cached.sum(where=reported))
        share = np.maximum(prompt, 1, dtype=np.float64)  # cached / prompt, made in place
        np.divide(cached, share, out=share)
        mostly = reported & (share >= MOSTLY_CACHED)
        fewer = reported & (share < MOSTLY_CACHED)
        del share
        out: dict[str, Any] = {
            "cache": {
                "requests_reporting": int(reported.sum()),
                "prompt_tokens": p_sum,
                "cached_tokens": c_sum,
                "hit_rate": c_sum / p_sum if p_sum else None,
                "ttft_mostly_cached_s": distribution(ttft[mostly], scratch=True),
                "ttft_mostly_uncached_s": distribution(ttft[fewer], scratch=True),
            },
        }
        del mostly, fewer
        turn = cols.column("turn")
        if (turn >= 0).any():
            decode = cols.column("decode")
            rows = []
            for k in np.unique(turn[turn >= 0]):
                sel = turn == k
                t, d = distribution(ttft[sel]), distribution(decode[sel])
                known = sel & (prompt >= 0)
                with_cache = sel & reported
                rows.append({
                    "turn": int(k),
                    "requests": int(sel.sum()),
                    "ttft_p50_s": t["p50"],
                    "ttft_mean_s": t["mean"],
                    "decode_tps_p50": d["p50"],
                    "prompt_tokens_mean": float(prompt[known].mean()) if known.any() else None,
                    "cached_tokens_mean": float(cached[with_cache].mean()) if with_cache.any() else None,
                })  # fmt: skip
            out["per_turn"] = rows
            out["sessions_measured"] = len(self._session_start)
        del cached, reported, turn
        out["ttft_by_prompt_tokens"] = log2_bins(prompt, ttft)
        del ttft, prompt
        output, e2e = cols.column("output"), cols.column("e2e")
        out["e2e_by_output_tokens"] = log2_bins(output, e2e)
        del output, e2e
        images = cols.column("images")
        if images.any():
            # Image prompts (--images): TTFT by image count and by pixels per request, as by prompt length.
            pixels, ttft = cols.column("pixels"), cols.column("ttft")
            sent = images > 0
            out["images"] = {
                "requests": int(sent.sum()),
                "images_total": int(images.sum()),
                "image_bytes_total": int(cols.column("image_bytes").sum()),
                "pixels_per_request_mean": float(pixels[sent].mean()),
                "ttft_by_images": [
                    {"images": int(k), "requests": int((images == k).sum()), **_ttft_stats(ttft[images == k])}
                    for k in np.unique(images)
                ],
                "ttft_by_pixels": log2_bins(pixels.astype(np.float64), ttft),
            }
        order = ("cache", "ttft_by_prompt_tokens", "e2e_by_output_tokens", "images", "per_turn", "sessions_measured")
        return {k: out[k] for k in order if k in out}
