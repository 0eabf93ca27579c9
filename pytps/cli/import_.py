"""`pytps import FILE`: a peer's result file (vLLM `bench serve`, aiperf, guidellm) read into pytps
results folders and the results store (pytps.app.imports does the work; docs/interop.md)."""

from __future__ import annotations

import argparse
import json

#: The command's name: `import` is a Python keyword, so the module is import_.
NAME = "import"

EXAMPLES = """examples:
  pytps import vllm_result.json --out results/vllm                 # vllm bench serve --save-result --save-detailed
  pytps import artifacts/profile_export.jsonl --out results/aiperf  # aiperf's per-request export
  pytps import benchmarks.json --out results/guidellm              # guidellm: one folder per benchmark
  pytps compare results/pytps results/vllm results/aiperf results/guidellm

Each imported run keeps what the peer recorded: per request where it kept requests, else its own
aggregates (the run says so, and compare shows them without intervals). docs/interop.md.
"""

HELP = "read a peer's results (vLLM bench serve, aiperf, guidellm) into results folders and the store"
DESCRIPTION = (
    "Read a result file written by vLLM's `bench serve`, aiperf or guidellm into pytps results folders "
    "(one per run in the file), with where it came from under metadata.imported, and record each in the "
    "results store, so that `pytps compare` and `pytps history` read them beside pytps's runs."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", metavar="FILE", help="the peer's result file (JSON, or aiperf's JSONL)")


def run(args: argparse.Namespace) -> int:
    from pytps.app.imports import import_file

    done = import_file(args.file, args.out, fmt=args.fmt, store=args.store, record=not args.no_store)
    if args.json:
        rows = [
            {
                "folder": str(d.folder),
                "tool": d.tool,
                "part": d.part,
                "requests": d.requests,
                "per_request": d.per_request,
                "ttft_p50_s": d.ttft_p50_s,
                "store_id": d.store_id,
            }
            for d in done
        ]
        print(json.dumps(rows, indent=2))
        return 0
    for d in done:
        kept = "per request" if d.per_request else "aggregates only"
        ttft = "-" if d.ttft_p50_s is None else f"{d.ttft_p50_s * 1000:.2f} ms"
        part = f" ({d.part})" if d.part else ""
        stored = "" if d.store_id is None else f", store run {d.store_id}"
        print(f"{d.folder}: {d.tool}{part}, {d.requests} requests, {kept}, TTFT p50 {ttft}{stored}")
    return 0
