"""The settings of the commands that read saved runs, the results store or this machine: `pytps report`,
`compare`, `history` (and its `add` and `check`), `import`, `clock` and `calibrate`. One entry each, as
in pytps.settings.commands; each command's settings are a namespace of their own (their target).
Positional arguments (a run's folder, the runs compared, the file imported) stay with the command."""

from __future__ import annotations

import argparse
from functools import partial

from pytps.settings.setting import OPTIONS, Setting


def _floats(s: str) -> tuple[float, ...]:
    return tuple(float(x) for x in s.split(",") if x.strip())


def _ints(s: str) -> tuple[int, ...]:
    return tuple(int(x) for x in s.split(",") if x.strip())


def _entry(command: str, target: str | None = None) -> partial[Setting]:
    return partial(Setting, group=OPTIONS, applies=frozenset({command}), target=target or command)


P = _entry("report")
C = _entry("compare")
I = _entry("import")  # noqa: E741
K = _entry("clock")
L = _entry("calibrate")
H = _entry("history")
HA = _entry("history add", "history")
HC = _entry("history check", "history")
# History's flags that its subcommands take too (there, without a default: Table.add_arguments).
H3 = partial(H, applies=frozenset({"history", "history add", "history check"}))
H2 = partial(H, applies=frozenset({"history", "history check"}))

_STORE = "the results store"

TOOL_SETTINGS: tuple[Setting, ...] = (
    # ---- pytps report DIR (its --html is add_html_argument's, shared with run, sweep and rank) ----
    P("json", "bool", False, "print the summary as JSON", action="store_true", exclusive=True),
    P("markdown", "bool", False, "print the summary table as Markdown (metric, unit, mean, …, n)",
      action="store_true", exclusive=True),
    P("csv", "bool", False, "print the summary table as CSV, full precision", action="store_true", exclusive=True),
    P("format", "str", None, "llmd-report: print the run (or a sweep's cells, as a JSON list) as llm-d's benchmark "
      "report v0.2, and on stderr the fields it cannot fill and why (docs/interop.md)", choices=("llmd-report",),
      exclusive=True),
    P("trace", "path", None, "write the run as a Chrome trace (JSON trace events: chrome://tracing, Perfetto): a "
      "track per connection, a slice per request with its phases, an instant per output event (docs/trace.md)",
      metavar="FILE"),
    P("trace_max_requests", "int", 10_000, "with --trace: at most N requests, spread evenly over a longer run "
      "(default: 10,000)", metavar="N"),
    P("repair", "bool", False, "for a run that did not finish (killed, or a corrupt results.json): write the "
      "results.json and events.npz rebuilt from its journal and event log", action="store_true"),
    # ---- pytps compare RUN... (pytps.app.compare.ComparePlan's fields, and the output) ----
    C("seed", "int", 0, "the bootstrap's seed: the same seed, the same intervals"),
    C("resamples", "int", 2000, "bootstrap resamples (default 2000)"),
    C("max_days", "float", 7.0, "warn when the runs started more than this many days apart (default 7)", unit="days"),
    C("json", "bool", False, "print the comparison as JSON", action="store_true"),
    C("html", "path", None, "also write the comparison as one self-contained HTML file, with overlaid CDFs "
      "(docs/report.md)", metavar="FILE"),
    # ---- pytps import FILE ----
    I("fmt", "str", "auto", "the file's format (default auto: recognized by its keys)", flag="--from",
      choices=("auto", "vllm", "aiperf", "guidellm")),
    I("out", "path", None, "the results folder (default results/<UTC time>-import-<tool>/; a file of several runs "
      "gives DIR/1, DIR/2, ...)", metavar="DIR"),
    I("store", "str", None, f"{_STORE} (default: $PYTPS_STORE, else the user's)", metavar="PATH|URL"),
    I("no_store", "bool", False, "do not record the imported runs in the results store", action="store_true"),
    I("json", "bool", False, "print what was imported as JSON", action="store_true"),
    # ---- pytps clock ----
    K("read_floor", "bool", True, "skip the 1 s measurement of the bare reader's CPU per event",
      flag="--no-read-floor", action="store_false"),
    K("connections", "int", 32, "connections for the read floor (default 32)"),
    K("gap_us", "float", 1000.0, "gap between events per connection (default 1000)", unit="µs"),
    # ---- pytps calibrate ----
    L("quick", "bool", False, "a small ladder (native only): under a minute", action="store_true"),
    L("transports", "str", None, "pytps transports to measure, comma-separated (default: native,asyncio,httpx; "
      "--quick: native; none: only --client)"),
    L("client", "names", None, "also measure another client: openai (sync and async SDK), anthropic, httpx, "
      "aiohttp, or module:function (def f(base_url, body, on_chunk)); repeatable", action="append",
      flag_default=[], metavar="NAME"),
    L("baseline", "bool", False, "the same as --client httpx (plain httpx + json.loads)", action="store_true"),
    L("rates", "names", None, "per-stream tok/s rungs", unit="tok/s", flag_type=_floats, metavar="TPS,..."),
    L("concurrency", "names", None, "concurrency rungs", flag_type=_ints, metavar="N,..."),
    L("stream_s", "float", None, "seconds each stream lasts (default 1)", unit="s"),
    L("rounds", "int", 1, "requests per stream slot in each cell (default 1)"),
    L("kernel_timestamps", "bool", False, "also show the kernel's share (native)", action="store_true"),
    L("max_ttft_error_ms", "float", 0.5, "a cell passes within this (default 0.5)", unit="ms"),
    L("max_tpot_error_pct", "float", 0.5, "a cell passes within this (default 0.5)", unit="%"),
    L("max_stamp_p99_ms", "float", 1.0, "a cell passes within this (default 1)", unit="ms"),
    L("realtime", "bool", False, "also measure the realtime (WebSocket) transport against the realtime emulator: "
      "the final transcript's stamp error and the frames' lateness (needs espeak-ng)", action="store_true"),
    L("realtime_concurrency", "names", (1, 8), "--realtime's concurrent sessions, one row each (default 1,8)",
      flag_type=_ints, metavar="N,..."),
    L("realtime_sessions", "int", 16, "--realtime's sessions per row (default 16)"),
    L("json", "path", None, "write the raw numbers as JSON ('-': stdout)", metavar="FILE"),
    L("plot", "path", None, "a PNG or SVG heat map (needs matplotlib)", metavar="FILE"),
    L("save", "bool", True, "do not save the envelope", flag="--no-save", action="store_false"),
    L("store", "str", None, f"{_STORE} to record the calibration in (pytps history)", metavar="PATH|URL"),
    L("no_store", "bool", False, "do not record the calibration in the results store", action="store_true"),
    # The slowed-client test hook: each native read stamped this much later (tests only).
    L("test_read_delay_us", "float", 0.0, argparse.SUPPRESS, unit="µs"),
    # ---- pytps history, history add DIR..., history check (pytps.app.history's plans) ----
    HA("prune", "bool", False, "forget runs whose folders are gone", action="store_true"),
    H3("store", "str", None, f"{_STORE}: a SQLite file, sqlite:///FILE or postgresql://... (default: $PYTPS_STORE, "
       "else $XDG_DATA_HOME/pytps/history.sqlite)", metavar="PATH|URL"),
    H2("endpoint", "str", None, "only this endpoint (its base URL)", metavar="URL"),
    H2("model", "str", None, "only this model"),
    H2("fingerprint", "str", None, "only this workload fingerprint (a prefix will do)", metavar="F"),
    H("metric", "names", None, "the metrics to trend (default ttft_p50,tpot_p50,decode_tps_p50,"
      "output_throughput_tps)", metavar="M[,M...]"),
    H("baseline", "int", None, "the run (its id) changes are measured against", metavar="RUN"),
    H("limit", "int", 10, "the last N runs of each group (default 10)", metavar="N"),
    H("all", "bool", False, "also sweep cells and calibrations (runs only by default)", action="store_true"),
    H("json", "bool", False, "print JSON", action="store_true"),
    H("csv", "bool", False, "print CSV: one row per run and metric", action="store_true"),
    H("html", "path", None, "write the trend as one offline HTML page (Bokeh)", metavar="FILE"),
    # The trend page's marks (issue 41): the band and the check's verdicts.
    H("band_max_change", "str", "10%", "--html: the band of no change drawn around the baseline, and the limit the "
      "runs are checked with (history check's --max-change; default 10%%)", flag="--max-change", metavar="PCT"),
    H("relative", "bool", False, "--html: plot the change against the baseline in %% (default: absolute values)",
      action="store_true"),
    HC("check_metric", "names", None, "the metrics to check (default ttft_p50)", flag="--metric",
       metavar="M[,M...]"),
    HC("max_change", "str", "10%", "the largest change for the worse allowed (default 10%%)"),
    HC("limits", "path", None, 'per-metric limits in TOML: [limits] ttft_p50 = "10%%"', metavar="FILE"),
    HC("window", "int", 5, "earlier comparable runs to compare with (default 5)", unit="runs"),
    HC("seed", "int", 0, "the bootstrap's seed"),
    HC("resamples", "int", 2000, "bootstrap resamples (default 2000)"),
    HC("check_json", "bool", False, "print every finding as JSON", flag="--json", action="store_true"),
)  # fmt: skip
