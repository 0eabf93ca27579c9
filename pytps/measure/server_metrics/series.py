"""The scrapes of one URL as series: each common name's value per scrape (the engine tables'
names, label sets added up), each raw family's, and each histogram's cumulative buckets."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from pytps.measure.server_metrics.engines import BOUNDS, COMMON, lookup, plausible
from pytps.measure.server_metrics.parse import Scrape

_SUFFIXES = ("_bucket", "_sum", "_count", "_created", "_total")


@dataclass
class Hist:
    """A histogram at one scrape: cumulative counts by upper bound, the sum and the count."""

    buckets: dict[float, float] = field(default_factory=dict)
    sum: float = 0.0
    count: float = 0.0


@dataclass
class Series:
    url: str
    times_ns: list[int] = field(default_factory=list)
    uncertainties_ns: list[int] = field(default_factory=list)
    failed: int = 0
    errors: list[str] = field(default_factory=list)
    engines: set[str] = field(default_factory=set)
    # name -> kind; name -> value per scrape (NaN where a scrape lacked it)
    kinds: dict[str, str] = field(default_factory=dict)
    units: dict[str, str] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)  # common name -> the engine's metric name
    values: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    hists: dict[str, list[Hist | None]] = field(default_factory=lambda: defaultdict(list))
    common: set[str] = field(default_factory=set)
    # A counter's readings per series (label set), NaN where a scrape lacked it: its increase is
    # each series' increase added up, so one GPU's reset does not read as the others' whole count.
    per_series: dict[str, dict[tuple[tuple[str, str], ...], list[float]]] = field(
        default_factory=lambda: defaultdict(dict)
    )
    # name -> readings outside the name's physical bounds (engines.BOUNDS), and one of them
    implausible: dict[str, list[float]] = field(default_factory=dict)
    # samples whose value was NaN or +-Inf: no reading
    not_finite: int = 0

    def increase(self, name: str, idx: Sequence[int] | None = None) -> float:
        """A counter's increase over the scrapes idx (all when None), as Prometheus's increase()
        counts it, per series then added up."""
        cols = self.per_series.get(name)
        if not cols:
            values = self.values.get(name, [])
            return increase(values if idx is None else [values[i] for i in idx])
        return sum(increase(col if idx is None else [col[i] for i in idx]) for col in cols.values())


def _family(name: str, types: dict[str, str]) -> tuple[str, str]:
    """(family, type) of a sample name."""
    if name in types:
        return name, types[name]
    for suffix in _SUFFIXES:
        if name.endswith(suffix) and name[: -len(suffix)] in types:
            return name[: -len(suffix)], types[name[: -len(suffix)]]
    return name, "unknown"


def build(scrapes: Iterable[Scrape]) -> dict[str, Series]:
    """One Series per URL, in order of the URLs' first scrapes."""
    out: dict[str, Series] = {}
    for scrape in scrapes:
        s = out.setdefault(scrape.url, Series(scrape.url))
        if scrape.error is not None:
            s.failed += 1
            if scrape.error not in s.errors and len(s.errors) < 5:
                s.errors.append(scrape.error)
            continue
        n = len(s.times_ns)
        s.times_ns.append(scrape.t_ns)
        s.uncertainties_ns.append(scrape.uncertainty_ns)
        scalar: dict[str, list[float]] = defaultdict(list)
        counters: dict[str, dict[tuple[tuple[str, str], ...], float]] = defaultdict(dict)
        hists: dict[str, Hist] = {}
        for name, labels, value in scrape.samples:
            family, kind = _family(name, scrape.types)
            if name.endswith("_created"):
                continue  # a creation time, not a value
            if not math.isfinite(value):
                s.not_finite += 1  # NaN or Inf: no reading (a figure of NaN would poison every sum)
                continue
            if kind in ("histogram", "gaugehistogram") and name != family:
                found = lookup(family, labels)
                key = found[1].common if found else family
                scale = found[1].scale if found else 1.0
                if found:
                    s.engines.add(found[0])
                    s.sources[key] = family
                    s.common.add(key)
                h = hists.setdefault(key, Hist())
                if name.endswith("_bucket"):
                    le = labels.get("le", "+Inf")
                    bound = math.inf if le in ("+Inf", "Inf") else float(le) * scale
                    h.buckets[bound] = h.buckets.get(bound, 0.0) + value
                elif name.endswith("_sum"):
                    h.sum += value * scale
                elif name.endswith("_count"):
                    h.count += value
                # a mapped histogram's _sum may also be a common counter (TGI's token lengths)
                if not name.endswith("_sum") or lookup(name, labels) is None:
                    continue
            found = lookup(name, labels)
            if found is not None:
                engine, entry = found
                s.engines.add(engine)
                key = entry.common
                s.sources[key] = name
                s.common.add(key)
                kind_c, unit, _ = COMMON[key]
                s.kinds[key], s.units[key] = kind_c, unit
                scalar[key].append(value * entry.scale)
                if kind_c == "counter":
                    series_key = (("__name__", name), *sorted(labels.items()))
                    counters[key][series_key] = value * entry.scale
            else:
                s.kinds.setdefault(name, "counter" if kind == "counter" or name.endswith("_total") else kind)
                scalar[name].append(value)
                if s.kinds[name] == "counter":
                    counters[name][tuple(sorted(labels.items()))] = value
        for key, vals in scalar.items():
            agg = COMMON[key][2] if key in s.common and key in COMMON else "sum"
            total = sum(vals) / len(vals) if agg == "mean" else sum(vals)
            if key in s.common and key in BOUNDS and not plausible(key, total):
                s.implausible.setdefault(key, []).append(total)
                continue  # outside physical bounds: marked, and no reading
            col = s.values[key]
            col.extend([math.nan] * (n - len(col)))
            col.append(total)
        for key, by_series in counters.items():
            if key in s.implausible and len(s.values.get(key, ())) <= n:
                continue  # this scrape's reading of it was implausible
            cols = s.per_series[key]
            for series_key, value in by_series.items():
                c = cols.setdefault(series_key, [])
                c.extend([math.nan] * (n - len(c)))
                c.append(value)
        for key, h in hists.items():
            s.kinds[key] = "histogram"
            if key in COMMON:
                s.units[key] = COMMON[key][1]
            col_h = s.hists[key]
            col_h.extend([None] * (n - len(col_h)))
            col_h.append(h)
    for s in out.values():
        n = len(s.times_ns)
        for name in s.implausible:
            s.values.setdefault(name, [])  # a name with no plausible reading: all NaN
        for col in s.values.values():
            col.extend([math.nan] * (n - len(col)))
        for cols in s.per_series.values():
            for c in cols.values():
                c.extend([math.nan] * (n - len(c)))
        for col_h in s.hists.values():
            col_h.extend([None] * (n - len(col_h)))
    return out


def increase(values: Sequence[float]) -> float:
    """A counter's increase over consecutive readings, as Prometheus's increase() counts it: a
    drop is a reset, after which the counter counted from zero."""
    total, last = 0.0, math.nan
    for v in values:
        if math.isnan(v):
            continue
        if not math.isnan(last):
            total += v - last if v >= last else v
        last = v
    return total
