"""asyncio against native transport: how close each one's read stamps are to the truth.

Against pytps.Emulator on 127.0.0.1, the same workload through each transport:
  (a) one stream at 5,000 tok/s (ITL 200 us);
  (b) 32 streams at 1,000 tok/s each (ITL 1 ms).
Printed per transport: the median read lag (client stamp of an event minus the emulator's
write of it, median per request, then over requests; it can be slightly negative on loopback,
where a woken reader may return before the writer's write() does), the mean |TTFT error|
against the emulator's (first token written minus request received), and the process CPU
time per token (the emulator's thread included: the same for both, so differences are the
client's).

    python bench/bench_transports.py [--tokens 400] [--requests-b 64]
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import tempfile

import numpy as np

import pytps
from pytps.api import make_config
from pytps.runner import Runner


def cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def measure(transport: str, concurrency: int, itl_us: int, requests: int, tokens: int) -> dict[str, float]:
    with pytps.Emulator(ttft_ms=20, itl_us=itl_us) as emu:
        cfg = make_config(emu.base_url, out=tempfile.mkdtemp(), requests=requests, output_tokens=tokens,
                          input_tokens=32, concurrency=concurrency, transport=transport)
        c0 = cpu_s()
        result = asyncio.run(Runner(cfg).run())
        cpu = cpu_s() - c0
        truth = {t["id"]: t for t in emu.wait_truth(requests)}
    lags, ttft_err = [], []
    for rec in result.records:
        t = truth[rec.response_id]
        k = len(rec.output_times_ns)
        lags.append(np.median(rec.output_times_ns - t["sent_ns"][:k]))
        ttft_err.append(abs((rec.first_output_ns - rec.t_send_ns) - (t["sent_ns"][0] - t["received_ns"])))
    return {"read_lag_us": float(np.median(lags)) / 1e3, "ttft_err_us": float(np.mean(ttft_err)) / 1e3,
            "cpu_us_per_token": cpu / (requests * tokens) * 1e6}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tokens", type=int, default=400)
    ap.add_argument("--requests-a", type=int, default=10)
    ap.add_argument("--requests-b", type=int, default=64)
    args = ap.parse_args()
    for label, conc, itl, n in (("(a) 1 x 5000 tok/s", 1, 200, args.requests_a),
                                ("(b) 32 x 1000 tok/s", 32, 1000, args.requests_b)):
        rows = {tr: measure(tr, conc, itl, n, args.tokens) for tr in ("asyncio", "native")}
        print(label)
        for tr, m in rows.items():
            print(f"  {tr:8s} read lag {m['read_lag_us']:7.1f} us   |TTFT err| {m['ttft_err_us']:7.1f} us   "
                  f"CPU/token {m['cpu_us_per_token']:6.1f} us")
        a, n_ = rows["asyncio"], rows["native"]
        print(f"  native/asyncio: read lag {n_['read_lag_us'] / a['read_lag_us']:.2f}, "
              f"CPU/token {n_['cpu_us_per_token'] / a['cpu_us_per_token']:.2f}")


if __name__ == "__main__":
    main()
