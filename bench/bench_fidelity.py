"""How close pytps's numbers are to the truth, beside a plain httpx + json.loads client.

A thin caller of `pytps calibrate` (docs/calibrate.md), which does the measuring: the emulator in
its own process, pytps's native transport and the plain client (`--baseline`) one after the
other on the same cells, every figure against the emulator's truth:
  (a) one stream at 5,000 tok/s (ITL 200 us);
  (b) 32 streams at 1,000 tok/s each (ITL 1 ms).

Targets: (a) TTFT within 0.3 ms of truth; (b) TTFT within 5 ms and TPOT within 1%; pytps CPU
per token at most half the plain client's.

    python bench/bench_fidelity.py [--stream-s 1.0]
"""

from __future__ import annotations

import argparse

from pytps.calibrate.clients import resolve_clients
from pytps.calibrate.envelope import THRESHOLDS
from pytps.calibrate.ladder import Ladder
from pytps.calibrate.output import print_report
from pytps.calibrate.session import Settings, Who, run_calibration

CASES = [
    ("(a) 1 stream @ 5,000 tok/s", 5000.0, 1, {"ttft_error_mean_ms": 0.3}),
    ("(b) 32 streams @ 1,000 tok/s", 1000.0, 32, {"ttft_error_mean_ms": 5.0, "tpot_error_pct": 1.0}),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stream-s", type=float, default=1.0, help="seconds each stream lasts")
    args = ap.parse_args()
    who = [Who("native", transport="native"), *(Who(c.name, client=c) for c in resolve_clients("httpx"))]
    for label, rate, conc, targets in CASES:
        ladder = Ladder((rate,), (conc,), stream_s=args.stream_s, tokens_per_event={rate: (1,)})
        data = run_calibration(Settings(ladder, who, dict(THRESHOLDS)))
        print(label)
        print_report(data)
        figs = {c["client"]: c["figures"] for c in data["cells"]}
        ours, theirs = figs.get("native"), figs.get("httpx+json")
        if ours is None or theirs is None:
            print("   a row stopped before this cell: see above")
            continue
        verdicts = [f"{k} {'MET' if ours[k] <= v else 'MISSED'} (target {v})" for k, v in targets.items()]
        ratio = ours["cpu_us_per_token"] / theirs["cpu_us_per_token"]
        verdicts.append(f"CPU ratio pytps/plain {ratio:.2f} {'MET' if ratio <= 0.5 else 'MISSED'} (target 0.5)")
        print("   " + "; ".join(verdicts))


if __name__ == "__main__":
    main()
