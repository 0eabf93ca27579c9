"""The one table of settings. Each setting is one `Setting`: its name (make_config's keyword, the
TOML key, the flag's dest), the values it takes, its default and unit, its help, the group its
flag is shown in, and where it applies (run, sweep, toml). What an entry holds and what a table makes
of them is pytps.settings.setting; the entries of the commands with flags of their own (serve, rank,
agents) are in pytps.settings.commands. From the table come:

- the flags of `pytps run`, `sweep`, `serve`, `rank` and `agents` (`add_arguments`; a sweep's axes
  take lists),
- the settings of parsed flags (`from_flags`) and those given explicitly (`explicit`),
- the keys a TOML matrix's [[workload]] and [[endpoint]] tables take (`toml_keys`),
- make_config's keyword arguments, checked once (`resolve`: unknown names and wrong types are one
  ConfigError that starts with the setting's name, so a matrix error finds its line),
- the docs' flag check (tests/docs/test_help_vs_docs.py reads `flags`).

A new setting is one entry here plus the code that uses it (docs/architecture.md, Where things go).
"""

from __future__ import annotations

import argparse
from typing import Any

from pytps.emulator import DEFAULT_ITL_US, DEFAULT_TTFT_MS
from pytps.errors import ConfigError
from pytps.grading import DEFAULT_GRADER_TIMEOUT_S
from pytps.settings.commands import COMMAND_SETTINGS, RANK
from pytps.settings.defaults import DEFAULT_MAX_SCRAPE_BYTES
from pytps.settings.setting import BOTH, OPTIONS, RUN, SWEEP, TARGETS, Setting, Sweep, Table
from pytps.settings.tools import TOOL_SETTINGS

__all__ = ["AXIS_FORMS", "BOTH", "OPTIONS", "RUN", "SWEEP", "TABLE", "TARGETS", "Setting", "Sweep", "Table"]
from pytps.transport.registry import TRANSPORT_NAMES
from pytps.workload.request_formats import ALL_APIS

#: How a sweep's axis is written (pytps.sweep.cells.parse_axis reads it).
AXIS_FORMS = "a list (1,2,4), a doubling range (1..64) or a stepped range (8..64+8)"


def parse_headers(items: list[str], flag: str = "--header") -> dict[str, str]:
    headers = {}
    for item in items:
        key, sep, value = item.partition(":")
        if not sep or not key.strip():
            raise ConfigError(f"{flag} {item!r} is not K:V; write it like {flag} 'X-Team: bench'")
        headers[key.strip()] = value.strip()
    return headers


def _extra_body(args: argparse.Namespace) -> Any:
    from pytps.errors import loads_json

    text = args.extra_body
    if text is None:
        return None
    value = loads_json(text, "--extra-body")
    if not isinstance(value, dict):
        raise ConfigError("--extra-body must be a JSON object, e.g. '{\"ignore_eos\": true}'")
    return value


# Group titles, in the order `--help` shows them.
ENDPOINT = "endpoint"
WORKLOAD = "workload"
EMBED = "embeddings and rerank (--api openai-embeddings, ollama-embed, rerank)"
IMAGES = "image prompts (chat APIs; needs Pillow)"
SESSIONS = "multi-turn sessions (docs/metrics.md, Workloads)"
TRACE = "trace replay (docs/run-inputs.md)"
LOAD = "load"
GOODPUT = "goodput and cost (docs/metrics.md)"
GRADED = "graded answers (docs/grading.md)"
OUTPUT = "output"
SERVER_METRICS = "server metrics (docs/server-metrics.md)"
EMULATOR = "built-in emulator (when no --base-url)"
SWEEPING = "sweep"
SEARCH = "capacity search (docs/metrics.md, Capacity search)"
GROUPS: tuple[str, ...] = (ENDPOINT, WORKLOAD, EMBED, IMAGES, SESSIONS, TRACE, LOAD, GOODPUT, GRADED, OUTPUT)
SERVE = "launching the server (docs/tuning.md)"
VOICE = "voice (--api openai-speech, openai-transcriptions, openai-realtime, --pipeline; docs/voice.md)"
GROUPS += (SERVER_METRICS, EMULATOR, VOICE, SWEEPING, SEARCH, SERVE, RANK)

S = Setting
W, E = "workload", "endpoint"

SETTINGS: tuple[Setting, ...] = (
    # ---- endpoint ----
    S("base_url", "str", target="cli", help="e.g. http://127.0.0.1:8000 (default: start the built-in emulator)"),
    S("api_key", "str", None, "the API key itself (the library's; the CLI reads --api-key-env)", flag=None,
      applies=frozenset()),
    S("api", "str", "openai-chat", "API dialect (default: openai-chat); openai-speech, openai-transcriptions and "
      "openai-realtime are voice runs (docs/voice.md)", choices=ALL_APIS, toml=E),
    S("stream", "bool", True, 'generation requests ask for one JSON body ("stream": false): TTFB and E2E, no '
      "TTFT/TPOT/ITL", flag="--no-stream", action="store_false"),
    S("model", "str", None, "model name (default: the first of /v1/models)", toml=E),
    S("api_key_env", "str", None, "environment variable holding the API key (default: OPENAI_API_KEY, or "
      "ANTHROPIC_API_KEY for --api anthropic)", metavar="VAR", toml=E),
    S("headers", "mapping", None, "extra request header", flag="--header", dest="header", action="append",
      flag_default=[], metavar="K:V", toml=E, from_args=lambda a: parse_headers(a.header)),
    S("request_id_header", "str", None, "send each request an id in this header (e.g. X-Request-Id), kept in the "
      "journal as sent_request_id, so the server's logs can be joined with the run", metavar="NAME", toml=E),
    S("extra_body", "mapping", None, "merged into each request body, e.g. '{\"ignore_eos\": true}'",
      metavar="JSON", toml=E, from_args=_extra_body),
    S("http2", "bool", False, "use HTTP/2 (HTTP/1.1 by default; implies httpx)", action="store_true", toml=E),
    S("transport", "str", "auto", "native: HTTP/1.1 on a C++ engine thread that stamps and parses every read "
      "with no Python (auto's choice for http://, and https:// when built with OpenSSL, without a proxy); "
      "httpx: HTTP/2, proxies; asyncio: http:// HTTP/1.1 on asyncio protocols, one native call per read",
      choices=TRANSPORT_NAMES, toml=E),
    S("kernel_timestamps", "bool", False, "native transport: also keep the kernel's receive stamp of every read "
      "(SO_TIMESTAMPING) and report kernel_read_lag_s, the time from the kernel's receipt to pytps's stamp",
      action="store_true", toml=W),
    S("ca_bundle", "path", None, "https://: trust the CA certificates in this PEM file instead of the system's "
      "(for a server with a private CA)", metavar="PATH", toml=E),
    S("insecure", "bool", False, "https://: do not verify the server's certificate or host name (test setups "
      "only)", action="store_true", toml=E),
    # ---- workload ----
    S("input_tokens", "length", "256", "prompt length (default 256)", WORKLOAD, "tokens", metavar="N|N:sd|lo-hi",
      toml=W, sweep=Sweep("LIST", f"prompt lengths: {AXIS_FORMS}")),
    S("output_tokens", "length", None, "max output tokens (default 128; with --dataset, each record's own "
      "max_tokens or reply length)", WORKLOAD, "tokens", metavar="N|N:sd|lo-hi", toml=W,
      sweep=Sweep("LIST", f"output lengths: {AXIS_FORMS} (default 128; with --dataset, each record's own)")),
    S("shared_prefix_tokens", "int", 0, "share a prefix of this many tokens", WORKLOAD, "tokens", toml=W),
    S("dataset", "path", None, "JSONL (prompt or messages, optional max_tokens) or ShareGPT JSON", WORKLOAD,
      metavar="FILE", toml=W),
    S("tokenizer", "path", None, "tokenizer.json to count output tokens when the server reports no usage "
      "(needs: pip install tokenizers)", WORKLOAD, metavar="PATH", toml=W),
    # ---- embeddings and rerank ----
    S("batch_size", "int", 1, "texts per embeddings request (default 1)", EMBED, metavar="N"),
    S("documents", "int", 8, "documents per rerank query (default 8)", EMBED, metavar="N"),
    S("top_n", "int", None, "rerank: results asked for (default: every document)", EMBED, metavar="N"),
    S("encoding_format", "str", None, "openai-embeddings: passed through", EMBED, choices=("float", "base64")),
    S("dimensions", "int", None, "embeddings: vector length asked for, passed through", EMBED, metavar="N"),
    # ---- images ----
    S("images", "int", 0, "generated images per chat prompt (default 0)", IMAGES, metavar="N"),
    S("image_size", "str", "512x512", "image size, or each side's range", IMAGES, metavar="WxH|LO-HI"),
    S("image_format", "str", "png", "encoding (default png)", IMAGES, choices=("png", "jpeg")),
    S("shared_images", "bool", False, "every request sends the same images", IMAGES, action="store_true"),
    # (the workload group's last two: after the image flags on the usage line, as they always were)
    S("seed", "int", 0, None, WORKLOAD, toml=W),
    S("salt", "str", None, "prompt salt (default: the run's UTC time, so runs do not share prefixes)", WORKLOAD,
      toml=W),
    # ---- multi-turn sessions ----
    S("turns", "int", None, "multi-turn sessions of K turns, each resending the history", SESSIONS, metavar="K",
      toml=W),
    S("sessions", "int", None, "sessions to run (default 10; --concurrency sets those in flight)", SESSIONS,
      metavar="N", toml=W),
    S("max_context_tokens", "int", None, "drop a session's oldest turns beyond N tokens of history", SESSIONS,
      "tokens", metavar="N", toml=W),
    S("think_time", "seconds", None, "seconds a session waits between turns: fixed, normal, uniform or "
      "exponential (default 0)", SESSIONS, "s", metavar="S|S:SD|LO-HI|exp:M", toml=W),
    # ---- trace replay ----
    S("trace", "path", None, "replay a production trace's requests at its timestamps (not report's --trace, a "
      "Chrome trace)", TRACE, metavar="FILE", toml=W),
    S("trace_format", "str", None, "the trace file's format", TRACE, choices=("mooncake", "azure", "burstgpt"),
      toml=W),
    S("trace_block_size", "int", 512, "mooncake: tokens per hash id (default 512)", TRACE, "tokens", metavar="N",
      toml=W),
    S("trace_speedup", "float", 1.0, "replay X times faster (default 1)", TRACE, metavar="X", toml=W),
    S("trace_window", "str", None, "replay only this slice, in seconds from the trace's start", TRACE, "s",
      metavar="START:END", toml=W),
    S("max_input_tokens", "int", None, "clip the trace's prompts to N tokens (counted)", TRACE, "tokens",
      metavar="N", toml=W),
    S("max_output_tokens", "int", None, "clip the trace's outputs to N tokens (counted)", TRACE, "tokens",
      metavar="N", toml=W),
    # ---- load ----
    S("concurrency", "int", None, "closed loop with N users (default 1)", LOAD, "requests in flight", toml=W,
      sweep=Sweep("LIST", f"sweep these concurrencies: {AXIS_FORMS}")),
    S("rate", "float", None, "open loop: R requests per second", LOAD, "requests/s", metavar="R", toml=W,
      sweep=Sweep("LIST", f"sweep these rates in requests per second: {AXIS_FORMS}")),
    S("arrival", "str", "poisson", None, LOAD, choices=("poisson", "constant", "gamma"), toml=W),
    S("burstiness", "float", 1.0, "gamma shape (1 = poisson)", LOAD, toml=W),
    S("max_concurrency", "int", None, "cap on in-flight requests in rate mode", LOAD, "requests in flight", toml=W),
    S("requests", "int", None, "measured requests (default 100 unless --duration)", LOAD, toml=W),
    S("duration", "float", None, "stop sending after S seconds", LOAD, "s", metavar="S", toml=W),
    S("warmup", "int", 0, "requests measured but left out of the results", LOAD, "requests", toml=W),
    S("max_error_rate", "float", None, "stop early above this error rate (0..1)", LOAD, metavar="F", toml=W),
    S("timeout", "float", 120.0, "read (idle) timeout in seconds", LOAD, "s", metavar="S", toml=W),
    # ---- goodput and cost ([slo] and an endpoint's prices in a matrix: pytps.sweep.matrix) ----
    S("slo", "slo", None, "per-request limits in seconds that make a request useful, e.g. "
      "ttft=0.5,tpot=0.02,e2e=10 (names: ttft, ttfat, tpot, e2e, e2e_500)", GOODPUT, "s", metavar="NAME=S,..."),
    S("slo_run", "slo", None, "run-level targets reported beside goodput, e.g. ttft:p90=0.5,e2e:p99=10", GOODPUT,
      "s", metavar="NAME:STAT=S,..."),
    S("expect_regex", "str", None, "a useful answer contains a match of this regular expression", GOODPUT,
      metavar="RE"),
    S("expect_json", "keys", None, "a useful answer is JSON (an object with these keys, when given)", GOODPUT,
      nargs="?", const="", metavar="KEY,..."),
    S("price_input", "float", None, "price per million input tokens", GOODPUT, "per Mtok", metavar="P"),
    S("price_cached_input", "float", None, "price per million cached input tokens (default: the input price)",
      GOODPUT, "per Mtok", metavar="P"),
    S("price_output", "float", None, "price per million output tokens", GOODPUT, "per Mtok", metavar="P"),
    S("price_request", "float", None, "fee per request", GOODPUT, "per request", metavar="P"),
    S("currency", "str", "USD", "currency label of the prices (default USD)", GOODPUT),
    S("bill_failed", "bool", True, "failed requests cost nothing (default: billed for the tokens the server "
      "reported)", GOODPUT, flag="--no-bill-failed", action="store_false"),
    # ---- graded answers ----
    S("tasks", "names", None, "a built-in graded task set, generated from --seed: arithmetic, choice, "
      "json-extract (--input-tokens pads the prompts, --output-tokens sets max_tokens)", GRADED,
      metavar="NAME,...", toml=W),  # a matrix's workload key: `pytps rank -c FILE` ranks on graded tasks
    S("grader", "str", None, "the grader of --dataset records that name none: exact, contains, regex, number, "
      "choice, json, json-schema, or your own function (sync or async)", GRADED, metavar="NAME|module:function",
      toml=W),
    S("keep_text", "bool", False, "keep each answer's text (and reasoning) in requests.jsonl: what the grader "
      "saw", GRADED, action="store_true"),
    S("grader_timeout_s", "float", DEFAULT_GRADER_TIMEOUT_S, "the most one answer's grading may take (a user's "
      "grader, a JSON Schema); past it the verdict is grader_timeout (default %(default)s)", GRADED, "s",
      metavar="S"),
    # ---- output ----
    S("config", "path", None, "a TOML matrix of endpoints x workloads (examples/bench.toml, docs/matrix.md): "
      "every cell is run into one results folder; flags given here override the file", OUTPUT, short="-c",
      metavar="FILE", target="cli"),
    S("out", "path", None, "results directory (default results/<UTC time>-<model>/)", OUTPUT, metavar="DIR"),
    S("json", "bool", False, "print the summary as JSON instead of a table", OUTPUT, action="store_true",
      target="cli"),
    S("store", "store", None, "the results store the run is recorded in: a SQLite file, sqlite:///FILE or "
      "postgresql://... (default: $PYTPS_STORE, else $XDG_DATA_HOME/pytps/history.sqlite; see pytps history)",
      OUTPUT, metavar="PATH|URL", reads=("store", "no_store"),
      from_args=lambda a: False if a.no_store else a.store),
    S("no_store", "bool", False, "do not record the run in the results store", OUTPUT, action="store_true",
      target="cli"),
    S("otlp", "str", None, "after the run, export it over OTLP/HTTP to an OpenTelemetry collector: a span "
      "per request and the GenAI metrics (URL default: $OTEL_EXPORTER_OTLP_ENDPOINT; docs/interop.md)", OUTPUT,
      nargs="?", const="", metavar="URL", applies=RUN, target="cli"),
    # ---- server metrics ----
    S("server_metrics", "urls", None, "scrape Prometheus metrics during the run (default URL: the base URL's "
      "origin + /metrics; several allowed, e.g. a DCGM exporter on :9400) into server_metrics.jsonl",
      SERVER_METRICS, nargs="*", metavar="URL", toml=E),
    S("server_metrics_interval", "float", None, "seconds between scrapes (default 0.5)", SERVER_METRICS, "s",
      metavar="S", toml=E),
    S("server_metrics_headers", "mapping", None, "a header sent to the metrics URLs (the API key is never sent to "
      "them unless given here)", SERVER_METRICS, flag="--server-metrics-header", dest="server_metrics_header",
      action="append", flag_default=[], metavar="K:V", toml=E,
      from_args=lambda a: parse_headers(a.server_metrics_header, "--server-metrics-header") or None),
    S("server_metrics_raw", "bool", False, "also keep each scrape's text (server_metrics_raw.jsonl)",
      SERVER_METRICS, action="store_true", toml=E),
    S("server_metrics_max_bytes", "int", DEFAULT_MAX_SCRAPE_BYTES, "the most one scrape of /metrics may read; "
      "a larger body is dropped and warned of once (default %(default)s: 16 MiB)", SERVER_METRICS, "bytes",
      metavar="N", toml=E),
    # ---- the built-in emulator (its keyword arguments: the names less "emu_") ----
    S("emu_ttft_ms", "float", DEFAULT_TTFT_MS, "TTFT in ms (default %(default)s)", EMULATOR, "ms", metavar="MS",
      target="emulator"),
    S("emu_itl_us", "float", DEFAULT_ITL_US, "µs between tokens (default %(default)s)", EMULATOR, "µs",
      metavar="US", target="emulator"),
    S("emu_prefill_us_per_token", "float", 0.0, "TTFT per uncached prompt token", EMULATOR, "µs", metavar="US",
      target="emulator"),
    S("emu_prefix_cache_tokens", "int", 0, "the emulator's prefix cache (0: none)", EMULATOR, "tokens",
      metavar="N", target="emulator"),
    S("emu_answer_accuracy", "float", None, "the emulator knows the --tasks / --dataset references and answers "
      "right with chance P", EMULATOR, metavar="P", target="emulator"),
    S("emu_answer_accuracy_drop", "float", 0.0, "the chance falls by D per request decoding beside it (quality "
      "under load)", EMULATOR, metavar="D", target="emulator"),
    # ---- voice (issue 36): a voice run's own settings, read by pytps.app.voice (docs/voice.md) ----
    S("playback_buffer_ms", "float", 200.0, "text to speech: the simulated player holds the first audio this "
      "long before it plays (default %(default)s)", VOICE, "ms", metavar="MS", target="cli"),
    S("audio_format", "str", "pcm", "text to speech's response_format (compressed ones are decoded by PyAV: "
      "pytps[voice])", VOICE, choices=("pcm", "wav", "mp3", "opus", "aac", "flac"), target="cli"),
    S("speech_stream_format", "str", "audio", "text to speech: raw audio bytes, or SSE speech.audio.delta "
      "events (default audio)", VOICE, choices=("audio", "sse"), target="cli"),
    S("voice", "str", "alloy", "text to speech's voice (default alloy)", VOICE, target="cli"),
    S("sample_rate", "int", 24000, "pcm's sample rate (default 24000)", VOICE, "Hz", metavar="HZ",
      target="cli"),
    S("speech_texts", "path", None, "text to speech: one text per line (default: generated)", VOICE,
      metavar="FILE", target="cli"),
    S("speech_words", "int", 12, "words per generated text (default 12)", VOICE, metavar="N",
      target="cli"),
    S("audio_dataset", "path", None, 'speech to text: JSONL of {"audio": "file.wav", "text": "its transcript"} '
      "(default: espeak-ng speech)", VOICE, metavar="FILE", target="cli"),
    S("stt_request", "str", "transcriptions", "speech to text: a multipart upload to /v1/audio/transcriptions, "
      "or chat: the audio as an input_audio part of a /v1/chat/completions message (audio-input chat models, "
      "e.g. llama-server --mmproj; --output-tokens caps the answer) (default transcriptions)", VOICE,
      choices=("transcriptions", "chat"), target="cli"),
    S("frame_ms", "float", 20.0, "realtime: audio per frame (default 20)", VOICE, "ms", metavar="MS",
      applies=RUN, target="cli"),
    S("realtime_shape", "str", "openai", "realtime: OpenAI's transcription session or vLLM's /v1/realtime "
      "(default openai)", VOICE, choices=("openai", "vllm"), applies=RUN, target="cli"),
    S("pipeline", "str", None, "a voice turn: 'stt,chat,tts' (end of user speech -> first audio of the reply, "
      "in three stages)", VOICE, metavar="STAGES", applies=RUN, target="cli"),
    S("stt_url", "str", None, "a voice turn's stt endpoint (default --base-url)", VOICE, metavar="URL",
      applies=RUN, target="cli"),
    S("stt_model", "str", None, "a voice turn's stt model", VOICE, metavar="NAME", applies=RUN, target="cli"),
    S("chat_url", "str", None, "a voice turn's chat endpoint (default --base-url)", VOICE, metavar="URL",
      applies=RUN, target="cli"),
    S("chat_model", "str", None, "a voice turn's chat model", VOICE, metavar="NAME", applies=RUN, target="cli"),
    S("tts_url", "str", None, "a voice turn's tts endpoint (default --base-url)", VOICE, metavar="URL",
      applies=RUN, target="cli"),
    S("tts_model", "str", None, "a voice turn's tts model", VOICE, metavar="NAME", applies=RUN, target="cli"),
    S("emu_speech_rtf", "float", 0.5, "emulator: TTS real-time factor", VOICE, metavar="X",
      target="cli"),
    S("emu_speech_chunk_ms", "float", 40.0, "emulator: TTS chunk", VOICE, "ms", metavar="MS",
      target="cli"),
    S("emu_stt_rtfx", "float", 20.0, "emulator: STT speed", VOICE, metavar="X", target="cli"),
    S("emu_stt_word_error_rate", "float", 0.0, "emulator: planted WER", VOICE, metavar="P",
      target="cli"),
    S("emu_stt_vllm_shape", "bool", False, "emulator: stream vLLM's chat-style transcription chunks", VOICE,
      action="store_true", target="cli"),
    # ---- a sweep's own ----
    S("refine", "int", 0, "add cells halfway between the knee and its neighbours, up to N rounds (default 0)",
      SWEEPING, metavar="N", applies=SWEEP, target="sweep"),
    S("slo_target", "float", 0.95, "share of useful requests a cell needs to count toward the SLO capacity "
      "(default 0.95)", SWEEPING, metavar="F", applies=SWEEP, target="sweep"),
    S("stop_error_rate", "float", 0.5, "stop the sweep after a cell with a higher error rate (default 0.5)",
      SWEEPING, metavar="F", applies=SWEEP, target="sweep"),
    S("stop_e2e_factor", "float", 20.0, "stop the sweep after a cell whose median E2E is X times the first "
      "cell's (default 20)", SWEEPING, metavar="X", applies=SWEEP, target="sweep"),
    # ---- a capacity search's (`pytps sweep --search`, a matrix workload's `search`) ----
    S("search", "str", None, "find the highest load whose --slo-run targets and error rate hold, by bracketing "
      "and narrowing, instead of running a grid", SEARCH,
      choices=("rate", "concurrency", "agents"), applies=SWEEP, toml=W, target="search"),
    S("search_agents", "str", None, "--search agents: the agents' trajectories, synthetic:KEY=VALUE,..., example or "
      "a file (default example; docs/agents.md)", SEARCH, metavar="WORK", applies=SWEEP, toml=W, target="search"),
    S("search_start", "float", None, "the first probe's load (default: rate, what one request in flight "
      "sustains, from a short run at concurrency 1; concurrency, 1)", SEARCH, metavar="LOAD", applies=SWEEP,
      toml=W, target="search"),
    S("search_precision", "float", 0.05, "stop when the bracket is narrower than this share of the load "
      "(default 0.05)", SEARCH, metavar="F", applies=SWEEP, toml=W, target="search"),
    S("search_max_probes", "int", 10, "at most N runs in all (default 10)", SEARCH, metavar="N", applies=SWEEP,
      toml=W, target="search"),
    S("search_repeats", "int", 2, "run an undecided probe (an interval straddling a limit) up to N more times "
      "(default 2)", SEARCH, metavar="N", applies=SWEEP, toml=W, target="search"),
    S("search_max_error_rate", "float", 0.01, "a probe fails above this error rate (default 0.01)", SEARCH,
      metavar="F", applies=SWEEP, toml=W, target="search"),
    S("search_probe_s", "float", 10.0, "each probe sends for S seconds, and at least 5 of the server's TTFTs "
      "(default 10); --duration and --requests do not apply to probes", SEARCH, "s", metavar="S", applies=SWEEP,
      toml=W, target="search"),
    S("search_budget_s", "float", 300.0, "the whole search's time budget: when the next probe would not fit, it "
      "stops and reports its best bracket so far (default 300)", SEARCH, "s", metavar="S", applies=SWEEP, toml=W,
      target="search"),
    # ---- launching the server (issue 38; pytps.app.served) ----
    S("serve", "str", None, "start this server command per configuration and benchmark it (no --base-url): a "
      "template with {port} and the {name}s of --serve-grid, e.g. 'llama-server -m m.gguf -np {np} --port {port}'",
      SERVE, metavar="CMD", target="serve"),
    S("serve_grid", "names", None, "a server setting to vary: one configuration per combination (repeatable)",
      SERVE, metavar="NAME=V1,V2", action="append", flag_default=[], target="serve"),
    S("serve_ready", "str", None, "when the server is ready: auto (default: GET /health, then /v1/models), a path "
      "or http://127.0.0.1 URL answering 200, log:REGEX (a line of its output), or request (a first request)",
      SERVE, metavar="WHEN", target="serve"),
    S("serve_timeout", "float", 300.0, "most seconds to wait until it is ready (default 300)", SERVE, "s",
      metavar="S", target="serve"),
    S("serve_grace", "float", 10.0, "seconds between SIGTERM and SIGKILL when stopping it (default 10)", SERVE,
      "s", metavar="S", target="serve"),
    S("serve_starts", "int", 0, "after each configuration's cell, N more (warm) starts timed to their first "
      "token (default 0)", SERVE, metavar="N", target="serve"),
    S("serve_info", "names", None, "also keep what this path or URL of the server answers, in server.json "
      "(repeatable)", SERVE, metavar="URL", action="append", flag_default=[], target="serve"),
    S("before_cell", "str", None, "run before each cell (or probe): a command, a URL to POST, or reset:vllm, "
      "reset:sglang, reset:llama-server", SERVE, metavar="CMD|URL|PRESET", target="serve"),
    S("after_cell", "str", None, "run after each cell (as --before-cell)", SERVE, metavar="CMD|URL|PRESET",
      target="serve"),
    S("resume", "bool", False, "with --serve and --out: keep the configurations tuning.json says are finished, "
      "run the rest", SERVE, action="store_true", applies=SWEEP, target="serve"),
)  # fmt: skip


TABLE = Table(SETTINGS + COMMAND_SETTINGS + TOOL_SETTINGS, GROUPS)
