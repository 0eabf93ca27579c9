"""pytps.Histogram speed: per-call record(), bulk record_many(), queries, and the ratio to numpy
computing the same percentiles from the raw values. Prints figures; asserts nothing."""

from __future__ import annotations

import time

import numpy as np

from pytps import Histogram

N_CALLS = 300_000
N_BULK = 5_000_000
PS = [50, 90, 99, 99.9, 99.99]


def per_item_ns(fn, n):
    t = time.perf_counter()
    fn()
    return (time.perf_counter() - t) / n * 1e9


def main() -> None:
    rng = np.random.default_rng(0)
    values = (rng.lognormal(np.log(5e6), 1.5, size=N_BULK) + 1).astype(np.int64)
    values = np.clip(values, 1, 3_600_000_000_000)
    small = [int(v) for v in values[:N_CALLS]]

    h = Histogram()
    record = h.record
    ns_record = per_item_ns(lambda: [record(v) for v in small], N_CALLS)
    ns_loop = per_item_ns(lambda: [None for _ in small], N_CALLS)

    h = Histogram()
    ns_many = per_item_ns(lambda: h.record_many(values), N_BULK)
    ns_np_sort = per_item_ns(lambda: np.percentile(values, PS, method="inverted_cdf"), N_BULK)

    reps = 200
    us_pct = per_item_ns(lambda: [h.percentiles(PS) for _ in range(reps)], reps) / 1e3
    blob = h.to_bytes()
    us_to = per_item_ns(lambda: [h.to_bytes() for _ in range(reps)], reps) / 1e3
    us_from = per_item_ns(lambda: [Histogram.from_bytes(blob) for _ in range(reps)], reps) / 1e3

    print(f"record()            {ns_record - ns_loop:8.1f} ns/call (Python call overhead included)")
    print(f"record_many()       {ns_many:8.2f} ns/value over {N_BULK:,} values")
    print(f"np.percentile       {ns_np_sort:8.2f} ns/value (inverted_cdf, same {len(PS)} percentiles)")
    print(f"  ratio numpy / record_many: {ns_np_sort / ns_many:.2f}x")
    print(f"percentiles({len(PS)})      {us_pct:8.1f} us")
    print(f"to_bytes            {us_to:8.1f} us, {len(blob):,} bytes")
    print(f"from_bytes          {us_from:8.1f} us")
    print(f"bucket memory       {h.allocated_bytes:,} bytes")


if __name__ == "__main__":
    main()
