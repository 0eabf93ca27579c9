"""`pytps serve`: the streaming emulator on 127.0.0.1, until Ctrl-C."""

from __future__ import annotations

import argparse
import contextlib
import sys

EXAMPLES = """examples:
  pytps serve --port 8000                                   # OpenAI base URL http://127.0.0.1:8000/v1
  pytps serve --ttft-ms 200 --itl-us 250 --tokens-per-event 4
  pytps serve --ttft-ms 5 --itl-us 1000 --max-batch 16      # a loaded server: 16 decode at once, the rest queue
  pytps serve --max-batch 64 --batch-slowdown 0.02          # and each stream slows as the batch grows
  pytps serve --fault 429:p=0.05 --fault stall:every=50,seconds=2 --truth-log truth.jsonl
  pytps serve --power-idle-w 60 --power-per-stream-w 15    # /metrics: a GPU's power and energy (DCGM's names)
"""


HELP = "run the streaming emulator (OpenAI, Anthropic, Ollama endpoints) on 127.0.0.1"
DESCRIPTION = (
    "Serve OpenAI (/v1/chat/completions, /v1/completions, /v1/responses), Anthropic "
    "(/v1/messages) and Ollama (/api/chat, /api/generate) streaming endpoints on 127.0.0.1 with a "
    "precise native schedule. Runs until Ctrl-C. See docs/emulator.md."
)


def run(args: argparse.Namespace) -> int:
    import signal
    import threading

    from pytps.emulator import Emulator
    from pytps.errors import ConfigError
    from pytps.settings.table import TABLE

    try:
        # Each setting is the Emulator keyword of its name (pytps.settings.commands). A long-running
        # server keeps no records in memory; --truth-log has them.
        emu = Emulator(**TABLE.from_flags(args, "server"), keep_truth=False)
        emu.start()
    except (ValueError, ConfigError) as exc:
        print(f"pytps serve: {exc}", file=sys.stderr)
        return 2
    done = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: done.set())
    print(f"pytps emulator serving on {emu.base_url} (OpenAI base URL {emu.base_url}/v1); Ctrl-C stops it", flush=True)
    try:
        while not done.wait(0.5):
            pass
    finally:
        emu.stop()
    stats = emu.stats()
    # Whoever started the server may have stopped reading its output (a script, a closed pipe).
    with contextlib.suppress(BrokenPipeError):
        print(
            f"pytps emulator stopped: {stats['generation_requests']} generation requests, "
            f"{stats['events_sent']} events, {stats['faults']} faults; "
            f"first connection accepted at {stats['first_accept_ns']} ns (CLOCK_MONOTONIC)",
            flush=True,
        )
    return 0
