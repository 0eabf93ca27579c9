"""`pytps calibrate`: how exact pytps (and any other streaming client) is on this host."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

EXAMPLES = """examples:
  pytps calibrate --quick                  # under a minute: the native transport, 3 rates x 3 concurrencies
  pytps calibrate                          # the full ladder, every transport; saves each envelope
  pytps calibrate --baseline               # and a plain httpx + json.loads client beside pytps
  pytps calibrate --quick --client openai --client mypkg.client:stream --json cal.json --plot cal.png
  pytps calibrate --transports none --realtime   # the realtime (WebSocket) transport alone
"""


HELP = "measure how exact pytps (or another client) is on this host: the trust envelope"
DESCRIPTION = (
    "Run the emulator in a separate process on 127.0.0.1 and measure a client against "
    "its ground truth over a ladder of per-stream rates x concurrency: stamp delay (client stamp - "
    "emulator write), TTFT and TPOT error, CPU per token beside the read floor. The cells that pass "
    "make the trust envelope, saved per host and transport for `pytps run` to check. See docs/calibrate.md."
)


def run(args: argparse.Namespace) -> int:
    from pytps.calibrate.clients import ClientUnavailable, resolve_clients
    from pytps.calibrate.envelope import build_envelope, save_envelope
    from pytps.calibrate.ladder import Ladder
    from pytps.calibrate.output import print_report, write_heatmap
    from pytps.calibrate.session import Settings, Who, run_calibration
    from pytps.errors import ConfigError
    from pytps.transport.registry import check_transport

    ladder = Ladder.quick() if args.quick else Ladder.full()
    if args.rates:
        ladder.rates_tps = args.rates
    if args.concurrency:
        ladder.concurrency = args.concurrency
    if args.stream_s is not None:
        ladder.stream_s = args.stream_s
    if args.rounds < 1 or ladder.stream_s <= 0 or min(ladder.concurrency) < 1 or min(ladder.rates_tps) <= 0:
        raise ConfigError("calibrate: --rounds, --stream-s, --rates and --concurrency must be positive")
    names = args.transports or ("native" if args.quick else "native,asyncio,httpx")
    who = []
    for t in (x.strip() for x in names.split(",") if x.strip() and x.strip() != "none"):
        check_transport(t)
        if t == "auto":
            raise ConfigError("calibrate --transports: name transports (native, asyncio, httpx), not auto")
        who.append(Who(t, transport=t))
    skipped = []
    wanted = [*args.client, *(["httpx"] if args.baseline and "httpx" not in args.client else [])]
    for name in wanted:
        try:
            for c in resolve_clients(name):
                who.append(Who(c.name, client=c))
        except ClientUnavailable as exc:
            print(f"pytps calibrate: skipping --client {name}: {exc}", file=sys.stderr)
            skipped.append({"client": name, "why": str(exc)})
    if not who and not args.realtime:
        raise ConfigError("calibrate: nothing to measure (no transport, and every --client was skipped)")
    if args.realtime and (args.realtime_sessions < 1 or min(args.realtime_concurrency, default=0) < 1):
        raise ConfigError("calibrate: --realtime-sessions and --realtime-concurrency must be positive")
    if not who:  # --realtime alone
        from pytps.calibrate.realtime import print_realtime, realtime_rows

        rows = realtime_rows(args.realtime_concurrency, args.realtime_sessions, args.max_stamp_p99_ms)
        if args.json == "-":
            print(json.dumps({"realtime": rows}, indent=1))
        else:
            print_realtime(rows, args.max_stamp_p99_ms)
            if args.json:
                with open(args.json, "w", encoding="utf-8") as f:
                    json.dump({"realtime": rows}, f, indent=1)
        return 0
    thresholds = {
        "ttft_error_ms": args.max_ttft_error_ms,
        "tpot_error_pct": args.max_tpot_error_pct,
        "stamp_p99_ms": args.max_stamp_p99_ms,
    }
    settings = Settings(
        ladder, who, thresholds, kernel_timestamps=args.kernel_timestamps,
        read_delay_ns=int(args.test_read_delay_us * 1e3), read_floor_s=0.2 if args.quick else 0.4,
        skipped=skipped,
    )  # fmt: skip

    def progress(c: dict[str, Any]) -> None:
        f = c["figures"]
        print(
            f"  {c['client']:<14} {c['rate_tps']:>8,.0f} tok/s x{c['tokens_per_event']} x{c['concurrency']:<4} "
            f"p99 {f['stamp_delay_p99_us'] or float('nan'):>8,.0f} µs  {'pass' if f['passed'] else 'FAIL'}",
            file=sys.stderr,
            flush=True,
        )

    data = run_calibration(settings, on_cell=progress)
    if args.realtime and not data["interrupted"]:
        from pytps.calibrate.realtime import realtime_rows

        data["realtime"] = realtime_rows(args.realtime_concurrency, args.realtime_sessions, args.max_stamp_p99_ms)
    if args.save:
        saved = {}
        for w in who:
            if w.transport is None:
                continue
            env = build_envelope(w.transport, [c for c in data["cells"] if c["client"] == w.name], thresholds)
            env["read_delay_us"] = data["read_delay_us"]
            saved[w.transport] = str(save_envelope(env))
        data["envelopes"] = saved
    if args.json == "-":
        print(json.dumps(data, indent=1))
    else:
        print_report(data)
        if data.get("realtime"):
            from pytps.calibrate.realtime import print_realtime

            print_realtime(data["realtime"], args.max_stamp_p99_ms)
        if args.json:
            with open(args.json, "w", encoding="utf-8") as f:
                json.dump(data, f, indent=1)
    if not args.no_store:
        from pathlib import Path

        from pytps.store.calibration_entry import record_calibration

        record_calibration(data, args.store, Path(args.json if args.json and args.json != "-" else "."))
    if args.plot:
        print(f"heat map: {write_heatmap(data, args.plot)}", file=sys.stderr)
    for t, path in (data.get("envelopes") or {}).items():
        print(f"envelope ({t}) saved to {path}", file=sys.stderr)
    if data["interrupted"]:
        print("pytps calibrate: interrupted; the cells above were measured before it", file=sys.stderr)
        return 130
    return 0
