"""The flags `pytps run` and `pytps sweep` share, and the RunConfig they make (through
pytps.runner.config.make_config, which validates every value once)."""

from __future__ import annotations

import argparse
import sys
from contextlib import ExitStack
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytps.emulator import DEFAULT_ITL_US, DEFAULT_TTFT_MS
from pytps.errors import ConfigError
from pytps.sweep.cells import AXIS_FORMS
from pytps.transport.registry import TRANSPORT_NAMES
from pytps.workload.request_formats import ALL_APIS

if TYPE_CHECKING:
    from pytps.runner.config import RunConfig


def add_run_arguments(p: argparse.ArgumentParser, *, sweep: bool = False) -> None:
    """Every flag of a run; with sweep, the load and length flags take lists (the sweep's axes)."""
    ep = p.add_argument_group("endpoint")
    ep.add_argument("--base-url", help="e.g. http://127.0.0.1:8000 (default: start the built-in emulator)")
    ep.add_argument(
        "--api",
        choices=ALL_APIS,
        default="openai-chat",
        help="API dialect (default: openai-chat); openai-speech and openai-transcriptions are voice runs",
    )
    ep.add_argument(
        "--no-stream",
        dest="stream",
        action="store_false",
        help='generation requests ask for one JSON body ("stream": false): TTFB and E2E, no TTFT/TPOT/ITL',
    )
    ep.add_argument("--model", help="model name (default: the first of /v1/models)")
    ep.add_argument(
        "--api-key-env",
        metavar="VAR",
        help="environment variable holding the API key (default: OPENAI_API_KEY, or "
        "ANTHROPIC_API_KEY for --api anthropic)",
    )
    ep.add_argument("--header", action="append", default=[], metavar="K:V", help="extra request header")
    ep.add_argument("--extra-body", metavar="JSON", help="merged into each request body, e.g. '{\"ignore_eos\": true}'")
    ep.add_argument("--http2", action="store_true", help="use HTTP/2 (HTTP/1.1 by default; implies httpx)")
    ep.add_argument(
        "--transport",
        choices=TRANSPORT_NAMES,
        default="auto",
        help="native: HTTP/1.1 on a C++ engine thread that stamps and parses every read with no "
        "Python (auto's choice for http://, and https:// when built with OpenSSL, without a proxy); "
        "httpx: HTTP/2, proxies; asyncio: http:// HTTP/1.1 on asyncio protocols, one native call per "
        "read",
    )
    ep.add_argument(
        "--kernel-timestamps",
        action="store_true",
        help="native transport: also keep the kernel's receive stamp of every read "
        "(SO_TIMESTAMPING) and report kernel_read_lag_s, the time from the kernel's receipt to "
        "pytps's stamp",
    )
    ep.add_argument(
        "--ca-bundle",
        metavar="PATH",
        help="https://: trust the CA certificates in this PEM file instead of the system's "
        "(for a server with a private CA)",
    )
    ep.add_argument(
        "--insecure",
        action="store_true",
        help="https://: do not verify the server's certificate or host name (test setups only)",
    )
    wl = p.add_argument_group("workload")
    if sweep:
        wl.add_argument("--input-tokens", default="256", metavar="LIST", help=f"prompt lengths: {AXIS_FORMS}")
        wl.add_argument(
            "--output-tokens",
            metavar="LIST",
            help=f"output lengths: {AXIS_FORMS} (default 128; with --dataset, each record's own)",
        )
    else:
        wl.add_argument("--input-tokens", default="256", metavar="N|N:sd|lo-hi", help="prompt length (default 256)")
        wl.add_argument(
            "--output-tokens",
            metavar="N|N:sd|lo-hi",
            help="max output tokens (default 128; with --dataset, each record's own max_tokens or reply length)",
        )
    wl.add_argument("--shared-prefix-tokens", type=int, default=0, help="share a prefix of this many tokens")
    wl.add_argument(
        "--dataset", metavar="FILE", help="JSONL (prompt or messages, optional max_tokens) or ShareGPT JSON"
    )
    wl.add_argument(
        "--tokenizer",
        metavar="PATH",
        help="tokenizer.json to count output tokens when the server reports no usage (needs: pip install tokenizers)",
    )
    eb = p.add_argument_group("embeddings and rerank (--api openai-embeddings, ollama-embed, rerank)")
    eb.add_argument("--batch-size", type=int, default=1, metavar="N", help="texts per embeddings request (default 1)")
    eb.add_argument("--documents", type=int, default=8, metavar="N", help="documents per rerank query (default 8)")
    eb.add_argument("--top-n", type=int, metavar="N", help="rerank: results asked for (default: every document)")
    eb.add_argument("--encoding-format", choices=("float", "base64"), help="openai-embeddings: passed through")
    eb.add_argument("--dimensions", type=int, metavar="N", help="embeddings: vector length asked for, passed through")
    im = p.add_argument_group("image prompts (chat APIs; needs Pillow)")
    im.add_argument("--images", type=int, default=0, metavar="N", help="generated images per chat prompt (default 0)")
    im.add_argument("--image-size", default="512x512", metavar="WxH|LO-HI", help="image size, or each side's range")
    im.add_argument("--image-format", choices=("png", "jpeg"), default="png", help="encoding (default png)")
    im.add_argument("--shared-images", action="store_true", help="every request sends the same images")
    wl.add_argument("--seed", type=int, default=0)
    wl.add_argument("--salt", help="prompt salt (default: the run's UTC time, so runs do not share prefixes)")
    ss = p.add_argument_group("multi-turn sessions (docs/metrics.md, Workloads)")
    ss.add_argument("--turns", type=int, metavar="K", help="multi-turn sessions of K turns, each resending the history")
    ss.add_argument(
        "--sessions", type=int, metavar="N", help="sessions to run (default 10; --concurrency sets those in flight)"
    )
    ss.add_argument(
        "--max-context-tokens", type=int, metavar="N", help="drop a session's oldest turns beyond N tokens of history"
    )
    ss.add_argument(
        "--think-time",
        metavar="S|S:SD|LO-HI|exp:M",
        help="seconds a session waits between turns: fixed, normal, uniform or exponential (default 0)",
    )
    tr = p.add_argument_group("trace replay (docs/run-inputs.md)")
    tr.add_argument(
        "--trace",
        metavar="FILE",
        help="replay a production trace's requests at its timestamps (not report's --trace, a Chrome trace)",
    )
    tr.add_argument("--trace-format", choices=("mooncake", "azure", "burstgpt"), help="the trace file's format")
    tr.add_argument(
        "--trace-block-size", type=int, default=512, metavar="N", help="mooncake: tokens per hash id (default 512)"
    )
    tr.add_argument("--trace-speedup", type=float, default=1.0, metavar="X", help="replay X times faster (default 1)")
    tr.add_argument(
        "--trace-window", metavar="START:END", help="replay only this slice, in seconds from the trace's start"
    )
    tr.add_argument("--max-input-tokens", type=int, metavar="N", help="clip the trace's prompts to N tokens (counted)")
    tr.add_argument("--max-output-tokens", type=int, metavar="N", help="clip the trace's outputs to N tokens (counted)")
    ld = p.add_argument_group("load")
    if sweep:
        # The axes: each a list (1,2,4), a doubling range (1..64) or a stepped one (8..64+8).
        for flag, name in (("--concurrency", "concurrencies"), ("--rate", "rates in requests per second")):
            ld.add_argument(flag, metavar="LIST", help=f"sweep these {name}: {AXIS_FORMS}")
    else:
        ld.add_argument("--concurrency", type=int, help="closed loop with N users (default 1)")
        ld.add_argument("--rate", type=float, metavar="R", help="open loop: R requests per second")
    ld.add_argument("--arrival", choices=("poisson", "constant", "gamma"), default="poisson")
    ld.add_argument("--burstiness", type=float, default=1.0, help="gamma shape (1 = poisson)")
    ld.add_argument("--max-concurrency", type=int, help="cap on in-flight requests in rate mode")
    ld.add_argument("--requests", type=int, help="measured requests (default 100 unless --duration)")
    ld.add_argument("--duration", type=float, metavar="S", help="stop sending after S seconds")
    ld.add_argument("--warmup", type=int, default=0, help="requests measured but left out of the results")
    ld.add_argument("--max-error-rate", type=float, metavar="F", help="stop early above this error rate (0..1)")
    ld.add_argument("--timeout", type=float, default=120.0, metavar="S", help="read (idle) timeout in seconds")
    sl = p.add_argument_group("goodput and cost (docs/metrics.md)")
    sl.add_argument(
        "--slo",
        metavar="NAME=S,...",
        help="per-request limits in seconds that make a request useful, "
        "e.g. ttft=0.5,tpot=0.02,e2e=10 (names: ttft, ttfat, tpot, e2e, e2e_500)",
    )
    sl.add_argument(
        "--slo-run",
        metavar="NAME:STAT=S,...",
        help="run-level targets reported beside goodput, e.g. ttft:p90=0.5,e2e:p99=10",
    )
    sl.add_argument("--expect-regex", metavar="RE", help="a useful answer contains a match of this regular expression")
    sl.add_argument(
        "--expect-json",
        nargs="?",
        const="",
        metavar="KEY,...",
        help="a useful answer is JSON (an object with these keys, when given)",
    )
    sl.add_argument("--price-input", type=float, metavar="P", help="price per million input tokens")
    sl.add_argument(
        "--price-cached-input",
        type=float,
        metavar="P",
        help="price per million cached input tokens (default: the input price)",
    )
    sl.add_argument("--price-output", type=float, metavar="P", help="price per million output tokens")
    sl.add_argument("--price-request", type=float, metavar="P", help="fee per request")
    sl.add_argument("--currency", default="USD", help="currency label of the prices (default USD)")
    sl.add_argument(
        "--no-bill-failed",
        dest="bill_failed",
        action="store_false",
        help="failed requests cost nothing (default: billed for the tokens the server reported)",
    )
    gr = p.add_argument_group("graded answers (docs/grading.md)")
    gr.add_argument(
        "--tasks",
        metavar="NAME,...",
        help="a built-in graded task set, generated from --seed: arithmetic, choice, json-extract "
        "(--input-tokens pads the prompts, --output-tokens sets max_tokens)",
    )
    gr.add_argument(
        "--grader",
        metavar="NAME|module:function",
        help="the grader of --dataset records that name none: exact, contains, regex, number, choice, json, "
        "json-schema, or your own function (sync or async)",
    )
    gr.add_argument(
        "--keep-text",
        action="store_true",
        help="keep each answer's text (and reasoning) in requests.jsonl: what the grader saw",
    )
    out = p.add_argument_group("output")
    out.add_argument(
        "-c",
        "--config",
        metavar="FILE",
        help="a TOML matrix of endpoints x workloads (examples/bench.toml, docs/matrix.md): every cell "
        "is run into one results folder; flags given here override the file",
    )
    out.add_argument("--out", metavar="DIR", help="results directory (default results/<UTC time>-<model>/)")
    out.add_argument("--json", action="store_true", help="print the summary as JSON instead of a table")
    out.add_argument(
        "--store",
        metavar="PATH|URL",
        help="the results store the run is recorded in: a SQLite file, sqlite:///FILE or postgresql://... "
        "(default: $PYTPS_STORE, else $XDG_DATA_HOME/pytps/history.sqlite; see pytps history)",
    )
    out.add_argument("--no-store", action="store_true", help="do not record the run in the results store")
    sm = p.add_argument_group("server metrics (docs/server-metrics.md)")
    sm.add_argument(
        "--server-metrics",
        nargs="*",
        metavar="URL",
        help="scrape Prometheus metrics during the run (default URL: the base URL's origin + /metrics; "
        "several allowed, e.g. a DCGM exporter on :9400) into server_metrics.jsonl",
    )
    sm.add_argument("--server-metrics-interval", type=float, metavar="S", help="seconds between scrapes (default 0.5)")
    sm.add_argument(
        "--server-metrics-header",
        action="append",
        default=[],
        metavar="K:V",
        help="a header sent to the metrics URLs (the API key is never sent to them unless given here)",
    )
    sm.add_argument(
        "--server-metrics-raw", action="store_true", help="also keep each scrape's text (server_metrics_raw.jsonl)"
    )
    emu = p.add_argument_group("built-in emulator (when no --base-url)")
    emu.add_argument(
        "--emu-ttft-ms", type=float, default=DEFAULT_TTFT_MS, metavar="MS", help="TTFT in ms (default %(default)s)"
    )
    emu.add_argument(
        "--emu-itl-us", type=float, default=DEFAULT_ITL_US, metavar="US", help="µs between tokens (default %(default)s)"
    )
    emu.add_argument(
        "--emu-prefill-us-per-token", type=float, default=0.0, metavar="US", help="TTFT per uncached prompt token"
    )
    emu.add_argument(
        "--emu-prefix-cache-tokens", type=int, default=0, metavar="N", help="the emulator's prefix cache (0: none)"
    )
    emu.add_argument(
        "--emu-answer-accuracy",
        type=float,
        metavar="P",
        help="the emulator knows the --tasks / --dataset references and answers right with chance P",
    )
    emu.add_argument(
        "--emu-answer-accuracy-drop",
        type=float,
        default=0.0,
        metavar="D",
        help="the chance falls by D per request decoding beside it (quality under load)",
    )
    # What the flags default to, so that a matrix file is overridden only by flags actually given.
    p.set_defaults(parser_defaults={a.dest: a.default for a in p._actions if a.dest != "help"})


def _parse_headers(items: list[str], flag: str = "--header") -> dict[str, str]:
    headers = {}
    for item in items:
        key, sep, value = item.partition(":")
        if not sep or not key.strip():
            raise ConfigError(f"{flag} {item!r} is not K:V; write it like {flag} 'X-Team: bench'")
        headers[key.strip()] = value.strip()
    return headers


def build_config(args: argparse.Namespace, base_url: str, **cell: Any) -> RunConfig:
    """The RunConfig of these flags; `cell` overrides some (a sweep's axis values, its cell's folder)."""
    from pytps.runner.config import make_config

    settings = flag_settings(args)
    settings.update(cell)
    return make_config(base_url, **settings)


def explicit_settings(args: argparse.Namespace, parser_defaults: dict[str, Any]) -> dict[str, Any]:
    """The settings of the flags given on the command line (those that differ from their defaults):
    what overrides a matrix file."""
    given = {dest for dest, default in parser_defaults.items() if getattr(args, dest, default) != default}
    renamed = {"header": "headers", "no_store": "store", "server_metrics_header": "server_metrics_headers"}
    return {k: v for k, v in flag_settings(args).items() if k in {renamed.get(d, d) for d in given}}


def flag_settings(args: argparse.Namespace) -> dict[str, Any]:
    """make_config's keyword arguments, from the flags."""
    from pytps.runner.config import parse_json_object

    return dict(
        api=args.api,
        model=args.model,
        api_key_env=args.api_key_env,
        headers=_parse_headers(args.header),
        extra_body=parse_json_object(args.extra_body, "--extra-body"),
        http2=args.http2,
        transport=args.transport,
        kernel_timestamps=args.kernel_timestamps,
        input_tokens=args.input_tokens,
        output_tokens=args.output_tokens,
        shared_prefix_tokens=args.shared_prefix_tokens,
        dataset=args.dataset,
        seed=args.seed,
        salt=args.salt,
        concurrency=args.concurrency,
        rate=args.rate,
        arrival=args.arrival,
        burstiness=args.burstiness,
        max_concurrency=args.max_concurrency,
        requests=args.requests,
        duration=args.duration,
        warmup=args.warmup,
        max_error_rate=args.max_error_rate,
        timeout=args.timeout,
        out=args.out,
        ca_bundle=args.ca_bundle,
        insecure=args.insecure,
        tokenizer=args.tokenizer,
        slo=args.slo,
        slo_run=args.slo_run,
        expect_regex=args.expect_regex,
        expect_json=args.expect_json,
        price_input=args.price_input,
        price_cached_input=args.price_cached_input,
        price_output=args.price_output,
        price_request=args.price_request,
        currency=args.currency,
        bill_failed=args.bill_failed,
        turns=args.turns,
        sessions=args.sessions,
        max_context_tokens=args.max_context_tokens,
        think_time=args.think_time,
        trace=args.trace,
        trace_format=args.trace_format,
        trace_block_size=args.trace_block_size,
        trace_speedup=args.trace_speedup,
        trace_window=args.trace_window,
        max_input_tokens=args.max_input_tokens,
        max_output_tokens=args.max_output_tokens,
        store=False if args.no_store else args.store,
        tasks=args.tasks,
        grader=args.grader,
        keep_text=args.keep_text,
        stream=args.stream,
        batch_size=args.batch_size,
        documents=args.documents,
        top_n=args.top_n,
        encoding_format=args.encoding_format,
        dimensions=args.dimensions,
        images=args.images,
        image_size=args.image_size,
        image_format=args.image_format,
        shared_images=args.shared_images,
        server_metrics=args.server_metrics,
        server_metrics_interval=args.server_metrics_interval,
        server_metrics_headers=_parse_headers(args.server_metrics_header, "--server-metrics-header") or None,
        server_metrics_raw=args.server_metrics_raw,
    )


def endpoint_url(args: argparse.Namespace, stack: ExitStack, doing: str) -> str:
    """--base-url, or the built-in emulator's (started for as long as `stack` lasts) when none is given."""
    if args.base_url is not None:
        return str(args.base_url)
    from pytps.emulator import Emulator

    answers: Any = None
    if args.emu_answer_accuracy is not None:
        if args.tasks is None and args.dataset is None:
            raise ConfigError("--emu-answer-accuracy needs --tasks or --dataset: the references the emulator knows")
        # A sweep's cells all run the same items: enough for the longest of them.
        sessions = (args.sessions or 10) * (args.turns or 1) if args.turns or args.sessions else 0
        count = max(args.requests or 0, sessions, 1000) + args.warmup + 1
        answers = f"tasks:{args.tasks}:{count}:{args.seed}" if args.tasks is not None else args.dataset
    # No truth kept in memory: nothing reads it, and it would grow with the run.
    emu = stack.enter_context(
        Emulator(
            ttft_ms=args.emu_ttft_ms,
            itl_us=args.emu_itl_us,
            prefill_us_per_token=args.emu_prefill_us_per_token,
            prefix_cache_tokens=args.emu_prefix_cache_tokens,
            keep_truth=False,
            answers=answers,
            answer_accuracy=1.0 if args.emu_answer_accuracy is None else args.emu_answer_accuracy,
            answer_accuracy_drop=args.emu_answer_accuracy_drop,
        )
    )
    print(f"no --base-url: {doing} the built-in emulator at {emu.base_url}", file=sys.stderr)
    return emu.base_url


def results_dir(args: argparse.Namespace, kind: str) -> Path:
    """--out, or results/<UTC time>-<kind>/."""
    if args.out:
        from pytps.runner.config import check_out_dir

        return check_out_dir(Path(args.out))
    return Path("results") / (datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ") + f"-{kind}")


def cell_summary(cfg: RunConfig, codes: list[int] | None = None) -> dict[str, Any]:
    """One cell of a sweep or a matrix: a whole run, judged against this host's trust envelope. A
    Ctrl-C during it ends the sweep (the cells done so far are kept)."""
    from pytps.calibrate.envelope import envelope_for
    from pytps.runner.event_loop import run_coroutine
    from pytps.runner.loop import Runner

    cfg.store_as = cfg.store_as and "sweep_cell"  # the results store files it as a sweep's cell
    result = run_coroutine(Runner(cfg, envelope=envelope_for(cfg)).run())
    if result.interrupted:
        raise KeyboardInterrupt
    if codes is not None:  # each cell's exit status, for the sweep's own (pytps.cli.exit_codes)
        from pytps.cli.exit_codes import run_exit_code

        codes.append(run_exit_code(result.summary, result.metadata))
    return result.summary
