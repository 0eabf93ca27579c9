"""The bootstrap pytps uses wherever a figure needs its interval: `pytps compare` (differences
between runs), `pytps sweep --search` (a probe's percentile against its target). Requests are
resampled with replacement (runs too, when a side has several), and the interval is the
percentile interval of the replicates (docs/compare.md)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

# Resampled statistics are computed in blocks of about this many values, so memory stays bounded
# however long the runs (2,000 resamples of 100,000 requests would otherwise be 1.6 GB).
BLOCK_VALUES = 4_000_000


def _stat_fn(stat: str) -> Callable[[np.ndarray], np.ndarray]:
    """The statistic along the last axis, NaN (padding) ignored: mean, p50, or any pNN (pytps's
    percentiles are numpy's linear interpolation, as the summary's)."""
    if stat == "mean":
        return lambda a: np.nanmean(a, axis=-1)
    if stat == "p50":
        return lambda a: np.nanmedian(a, axis=-1)
    q = _percentile(stat)
    return lambda a: np.nanpercentile(a, q, axis=-1)


def _percentile(stat: str) -> float:
    if stat.startswith("p"):
        try:
            q = float(stat[1:])
        except ValueError:
            q = -1.0
        if 0 <= q <= 100:
            return q
    raise ValueError(f"unknown statistic {stat!r}: mean, p50 or pNN")


def point(runs: Sequence[np.ndarray], stat: str) -> float | None:
    """The statistic of a side: over all its measured requests pooled."""
    pooled = np.concatenate(list(runs)) if runs else np.empty(0)
    if pooled.size == 0:
        return None
    if stat == "mean":
        return float(np.mean(pooled))
    return float(np.median(pooled)) if stat == "p50" else float(np.percentile(pooled, _percentile(stat)))


def resample(runs: Sequence[np.ndarray], stat: str, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """`resamples` bootstrap replicates of the statistic of a side's pooled requests.

    One run: resample its requests with replacement. Several runs: a two-level bootstrap, so the
    spread covers run-to-run variation too: draw as many runs as there are, with replacement, then
    resample each drawn run's requests with replacement, and pool. Vectorized: a block of replicates
    is one (replicates, runs, longest run) array, each run's short rows padded with NaN.
    """
    runs = [np.asarray(r, dtype=np.float64) for r in runs]
    if not runs or any(r.size == 0 for r in runs):
        raise ValueError("every run needs at least one value")
    fn = _stat_fn(stat)
    k = len(runs)
    sizes = np.array([r.size for r in runs])
    longest = int(sizes.max())
    padded = np.full((k, longest), np.nan)
    for i, r in enumerate(runs):
        padded[i, : r.size] = r
    out = np.empty(resamples)
    block = max(1, BLOCK_VALUES // (k * longest))
    for start in range(0, resamples, block):
        b = min(block, resamples - start)
        # Which runs each replicate draws (all the one run when there is one: no draw, no RNG use,
        # so a single-run side is the plain one-level bootstrap).
        chosen = rng.integers(0, k, size=(b, k)) if k > 1 else np.zeros((b, 1), dtype=np.int64)
        n = sizes[chosen]  # (b, k): each drawn run's own request count
        idx = (rng.random((b, k, longest)) * n[..., None]).astype(np.int64)
        vals = padded[chosen[..., None], idx]
        vals[np.arange(longest)[None, None, :] >= n[..., None]] = np.nan
        out[start : start + b] = fn(vals.reshape(b, k * longest))
    return out


def interval95(
    values: Sequence[float] | np.ndarray, stat: str, *, resamples: int = 2000, seed: int = 0
) -> tuple[float, float]:
    """The percentile bootstrap 95% interval of one run's statistic (stat: mean, p50, pNN)."""
    replicates = resample([np.asarray(values, dtype=np.float64)], stat, resamples, np.random.default_rng(seed))
    lo, hi = np.percentile(replicates, [2.5, 97.5])
    return float(lo), float(hi)


def paired_replicates(
    sides: Sequence[np.ndarray],
    stat: Callable[[np.ndarray], np.ndarray],
    resamples: int,
    rng: np.random.Generator,
    run: int = 1,
) -> np.ndarray:
    """The paired bootstrap of `pytps rank`: `resamples` replicates of a statistic of every side,
    each replicate drawing ONE set of item positions (with replacement) that every side is read at,
    so the differences between sides keep their pairing (the same items, sent at the same time).

    run > 1: the moving-block bootstrap (Künsch 1989): positions are drawn as runs of `run`
    consecutive items (in send order, wrapping at the end), so that items sent close in time, which
    share the state of the machine and the network, stay together and the interval keeps their
    dependence; one at a time, a burst of load would read as independent evidence.

    sides: one (items, columns) array per side, row i holding the same item on every side (NaN:
    none, e.g. no TTFT for a failed request). stat: (replicates, items, columns) -> (replicates,).
    Returns a (resamples, sides) array; the difference of two sides' columns is the paired
    replicate of their difference.
    """
    arrays = [np.asarray(s, dtype=np.float64) for s in sides]
    if not arrays:
        raise ValueError("paired_replicates needs at least one side")
    n = arrays[0].shape[0]
    if n == 0 or any(a.shape[0] != n for a in arrays):
        raise ValueError("every side needs the same items, at least one")
    width = max(a.shape[1] for a in arrays) if arrays[0].ndim > 1 else 1
    out = np.empty((resamples, len(arrays)))
    block = max(1, BLOCK_VALUES // (n * width * len(arrays)))
    for start in range(0, resamples, block):
        b = min(block, resamples - start)
        if run > 1:
            starts = rng.integers(0, n, size=(b, -(-n // run)))
            idx = ((starts[:, :, None] + np.arange(run)[None, None, :]) % n).reshape(b, -1)[:, :n]
        else:
            idx = rng.integers(0, n, size=(b, n))
        for k, a in enumerate(arrays):
            out[start : start + b, k] = stat(a[idx])
    return out
