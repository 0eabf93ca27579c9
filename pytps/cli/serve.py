"""`pytps serve`: the streaming emulator on 127.0.0.1, until Ctrl-C."""

from __future__ import annotations

import argparse
import contextlib
import sys

from pytps.emulator import DEFAULT_ITL_US, DEFAULT_TTFT_MS

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


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--port", type=int, default=8000, help="port on 127.0.0.1 (0 picks a free one; default 8000)")
    p.add_argument(
        "--ttft-ms", type=float, default=DEFAULT_TTFT_MS, help="time to first token in ms (default %(default)s)"
    )
    p.add_argument("--ttft-dist", choices=["fixed", "normal", "lognormal"], default="fixed")
    p.add_argument("--ttft-sd-ms", type=float, default=0.0, help="TTFT standard deviation for normal/lognormal")
    p.add_argument(
        "--itl-us", type=float, default=DEFAULT_ITL_US, help="gap between token events in µs (default %(default)s)"
    )
    p.add_argument("--itl-dist", choices=["fixed", "normal", "lognormal", "replay"], default="fixed")
    p.add_argument("--itl-sd-us", type=float, default=0.0, help="gap standard deviation for normal/lognormal")
    p.add_argument(
        "--itl-replay-us",
        type=lambda s: [float(x) for x in s.split(",") if x.strip()],
        default=None,
        metavar="G1,G2,...",
        help="gaps in µs to cycle through (implies --itl-dist replay)",
    )
    p.add_argument("--prefill-us-per-token", type=float, default=0.0, help="extra TTFT per prompt token in µs")
    p.add_argument("--embed-ms", type=float, default=2.0, help="embeddings and rerank: base latency in ms (default 2)")
    p.add_argument(
        "--embed-us-per-token", type=float, default=10.0, help="embeddings and rerank: µs per input token (default 10)"
    )
    p.add_argument("--embedding-dim", type=int, default=384, help="embedding vector length (default 384)")
    p.add_argument(
        "--prefix-cache-tokens",
        type=int,
        default=0,
        metavar="N",
        help="an LRU prefix cache of N tokens of prompt blocks: a prompt's cached prefix skips its "
        "prefill time and is reported as cached tokens in usage (default 0: no cache)",
    )
    p.add_argument(
        "--prefix-cache-block-tokens",
        type=int,
        default=16,
        metavar="B",
        help="tokens per prefix-cache block (default 16, as vLLM)",
    )
    p.add_argument(
        "--ttft-ramp-ms-per-s",
        type=float,
        default=0.0,
        metavar="MS",
        help="a drifting server: each request's TTFT grows by MS ms per second since the server started (default 0)",
    )
    p.add_argument(
        "--usage-overbill",
        type=float,
        default=0.0,
        metavar="SHARE",
        help="a server that bills more than it streams: usage reports SHARE more output tokens (0.1: 10%%) than "
        "were sent (default 0)",
    )
    p.add_argument(
        "--max-batch",
        type=int,
        default=0,
        metavar="N",
        help="at most N requests decode at once; later ones wait in a FIFO queue (default 0: no limit)",
    )
    p.add_argument(
        "--batch-slowdown",
        type=float,
        default=0.0,
        metavar="S",
        help="each gap grows to gap x (1 + S x (n - 1)) with n requests decoding (default 0)",
    )
    p.add_argument(
        "--power-idle-w",
        type=float,
        default=0.0,
        metavar="W",
        help="/metrics' power model: W drawn always (DCGM_FI_DEV_POWER_USAGE, energy in mJ; default 0: none)",
    )
    p.add_argument(
        "--power-per-stream-w",
        type=float,
        default=0.0,
        metavar="W",
        help="and W more per request holding a batch slot (default 0)",
    )
    p.add_argument("--tokens-per-event", type=int, default=1, help="tokens each event carries (default 1)")
    p.add_argument("--coalesce", type=int, default=1, help="events per write (default 1; 0: all events already due)")
    p.add_argument("--reasoning-tokens", type=int, default=0, help="reasoning tokens before the answer")
    p.add_argument("--tool-calls", action="store_true", help="answer with one streamed tool call")
    # ---- agents (issue 35): the emulator plays an agent model ----
    p.add_argument(
        "--agent-turns",
        type=int,
        default=0,
        metavar="K",
        help="a request with tools gets tool calls for K turns, then a final answer (default 0: off)",
    )
    p.add_argument(
        "--agent-calls", type=int, default=1, metavar="N", help="parallel tool calls per agent turn (default 1)"
    )
    p.add_argument(
        "--agent-invalid",
        type=float,
        default=0.0,
        metavar="P",
        help="chance that a tool call's arguments break its schema (default 0)",
    )
    p.add_argument("--keepalive-ms", type=float, default=None, help="SSE keep-alive after this much silence")
    p.add_argument("--max-output-tokens", type=int, default=4096, help="cap on any request's output")
    p.add_argument("--default-output-tokens", type=int, default=64, help="output when the request sets no limit")
    p.add_argument("--model", default="pytps-emulator", help="model name when the request names none")
    p.add_argument(
        "--fault",
        action="append",
        default=[],
        metavar="KIND:key=value,...",
        help="inject a fault, e.g. 429:p=0.1 or stall:every=5,seconds=2 (repeatable)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the timing and fault draws")
    p.add_argument(
        "--draws-by-prompt",
        action="store_true",
        help="key each request's timing and answer draws by its prompt, not its arrival order, so the same "
        "item gets the same draws on every emulator of one seed (docs/emulator.md, Seeds)",
    )
    p.add_argument(
        "--spin-us",
        type=float,
        default=60.0,
        help="most µs to busy-wait before each deadline (the window adapts below it; default 60)",
    )
    p.add_argument(
        "--realtime",
        action="store_true",
        help="SCHED_FIFO for the timing thread, so other load cannot preempt it (root or CAP_SYS_NICE)",
    )
    p.add_argument("--truth-log", default=None, metavar="FILE", help="write ground truth as JSON lines to FILE")
    p.add_argument(
        "--answers",
        metavar="FILE|tasks:NAMES:COUNT[:SEED]",
        help="reference records (a --dataset JSONL file with expected answers, or a built-in task set): the "
        "emulator ends each known prompt's content with a right or wrong answer (docs/emulator.md, Answers)",
    )
    p.add_argument(
        "--answer-accuracy", type=float, default=1.0, metavar="P", help="chance of the right answer (default 1)"
    )
    p.add_argument(
        "--answer-accuracy-drop",
        type=float,
        default=0.0,
        metavar="D",
        help="the chance falls by D per other request decoding at admission (quality under load; default 0)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import inspect
    import signal
    import threading

    from pytps.emulator import Emulator
    from pytps.errors import ConfigError

    try:
        # Each flag is the Emulator keyword of its name (--fault: faults). A long-running server keeps
        # no records in memory; --truth-log has them.
        given = vars(args)
        keywords = {name: given[name] for name in inspect.signature(Emulator).parameters if name in given}
        emu = Emulator(**keywords, faults=args.fault, keep_truth=False)
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
