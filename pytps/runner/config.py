"""A run's configuration: RunConfig, and make_config(), which builds a validated one from the same
settings as the `pytps run` flags (the CLI and the library both go through it)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlsplit, urlunsplit

from pytps.errors import ConfigError
from pytps.grading.graders import Grading, build_grading
from pytps.measure.cost import Prices
from pytps.measure.redact import Redactor, secrets_of, url_secrets
from pytps.measure.slo import Judge, Validation, parse_slo, parse_slo_run
from pytps.results.folder import refuse_used_folder
from pytps.runner.schedule import LoadPlan
from pytps.runner.scrape_settings import ServerMetrics
from pytps.settings.table import TABLE
from pytps.transport.base_url import refuse_userinfo_with_key
from pytps.transport.registry import check_transport
from pytps.workload import request_formats
from pytps.workload.images import ImageSpec
from pytps.workload.inputs import InputShape
from pytps.workload.synthetic import Workload

if TYPE_CHECKING:
    from pytps.workload.tasks import TaskWorkload


class TokenCounter(Protocol):
    """Counts output tokens locally when the server reports no usage (pytps.workload.tokenizer.LocalTokenizer)."""

    path: str

    def count(self, text: str) -> int: ...


def normalize_base_url(base_url: str) -> str:
    """base_url without a trailing "/" or "/v1": pytps's request paths carry /v1 themselves, and
    users of the OpenAI SDK write the base URL with it (http://host:8000/v1). ConfigError when it
    is not an http(s) URL with a host."""
    url = urlsplit(base_url)
    if url.scheme not in ("http", "https") or not url.hostname:
        shown = Redactor(url_secrets(base_url))(base_url)
        raise ConfigError(
            f"base URL (--base-url) {shown!r} is not an http:// or https:// URL with a host; "
            "write it like http://127.0.0.1:8000"
        )
    path = url.path.rstrip("/")
    path = path.removesuffix("/v1")
    return urlunsplit(url._replace(path=path)).rstrip("/")


def check_out_dir(path: Path) -> Path:
    """path, when it is a directory or one can be made there; ConfigError (one line, before
    anything runs) for a file, or a place where no directory can be made."""
    if path.exists() and not path.is_dir():
        raise ConfigError(f"--out {path} is a file, not a directory: name a directory for the results")
    parent = path
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise ConfigError(f"--out {path}: {parent} is a file, so no directory can be made there")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ConfigError(f"--out {path}: {parent} is not writable: name a directory you can write to")
    return path


@dataclass
class RunConfig:
    base_url: str
    api: str
    workload: Workload
    plan: LoadPlan
    model: str | None = None
    api_key: str | None = field(default=None, repr=False)
    headers: dict[str, str] = field(default_factory=dict, repr=False)  # values may be secrets
    extra_body: dict[str, Any] | None = None
    http2: bool = False
    # "native" (HTTP/1.1 on a C++ thread, http:// or https://), "httpx" (HTTP/2, proxies),
    # "asyncio" (http:// HTTP/1.1 on the event loop), or "auto" (pytps.transport.registry)
    transport: str = "auto"
    # Native transport only: keep the kernel's receive stamp of each read beside pytps's own.
    kernel_timestamps: bool = False
    out_dir: Path | None = None
    max_error_rate: float | None = None
    request_timeout_s: float = 600.0
    connect_timeout_s: float = 10.0
    read_timeout_s: float = 120.0
    ca_bundle: str | None = None  # https://: a PEM CA bundle trusted instead of the system's
    insecure: bool = False  # https://: no certificate or host name verification
    seed: int = 0
    tokenizer: TokenCounter | None = None
    # Which requests are useful, and what they cost (pytps.measure.slo, pytps.measure.cost).
    judge: Judge = field(default_factory=Judge)
    # The results store the finished run is recorded in (pytps.store.store): None is $PYTPS_STORE,
    # else $XDG_DATA_HOME/pytps/history.sqlite. store_as is the row's kind; None: not recorded (--no-store).
    store: str | None = None
    store_as: str | None = "run"
    # False: generation requests ask for one JSON body ("stream": false), read whole.
    stream: bool = True
    # Embeddings and rerank requests (pytps.workload.inputs).
    inputs: InputShape = field(default_factory=InputShape)
    # Images with each chat prompt (pytps.workload.images).
    images: ImageSpec = field(default_factory=ImageSpec)
    # --server-metrics: the Prometheus URLs scraped during the run (pytps.runner.scraper); None: off.
    server_metrics: ServerMetrics | None = field(default=None, repr=False)
    # Every setting of pytps.settings.table as make_config resolved it (the API key left out): a
    # new setting reaches the run here before it has a field of its own.
    settings: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def request_headers(self) -> dict[str, str]:
        """What every request sends: the API's auth header for the key, then --header's (which win)."""
        return {**request_formats.auth_headers(self.api, self.api_key), **self.headers}

    @property
    def secrets(self) -> list[str]:
        """Every secret of these settings (pytps.measure.redact's one rule): the key, secret header
        values, the URL's userinfo and secret query values (the metrics URLs' and headers' too)."""
        found = secrets_of(self.api_key, self.headers, self.base_url)
        if self.server_metrics is not None:
            for url in self.server_metrics.urls:
                found += secrets_of(None, self.server_metrics.headers, url)
        return found


class Settings(dict[str, Any]):
    """A run's settings as make_config resolved them (pytps.settings.table), read as attributes."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name: str, value: Any) -> None:
        self[name] = value


def make_config(base_url: str, **settings: Any) -> RunConfig:
    """A validated RunConfig from the same settings as the CLI flags, named as in
    pytps.settings.table (ConfigError when unusable: an unknown name, a wrong type, a bad value).
    store: the results store to record the run in (a path or URL); False: not recorded."""
    from pytps.workload.synthetic import DEFAULT_OUTPUT_TOKENS, DatasetWorkload, LengthSpec, SyntheticWorkload
    from pytps.workload.tokenizer import LocalTokenizer

    s = Settings(TABLE.resolve(settings))

    request_formats.check_api(s.api)
    if s.api in (*request_formats.AUDIO_APIS, request_formats.REALTIME_API):
        raise ConfigError(
            f"--api {s.api} is a voice run: `pytps run --api {s.api}` runs it (pytps.runner.voice); "
            "sweeps, matrices and pytps.run() of voice runs are not built yet"
        )
    inputs = InputShape(s.batch_size, s.documents, s.top_n, s.encoding_format, s.dimensions).validate(s.api)
    image_spec = ImageSpec(s.images, s.image_size, s.image_format, s.shared_images, s.seed).validate()
    if s.images and s.api not in ("openai-chat", "openai-responses", "anthropic", "ollama"):
        raise ConfigError(
            f"--images go with chat prompts: use --api openai-chat, openai-responses, anthropic or ollama, not {s.api}"
        )
    if not s.stream and s.api in request_formats.BODY_APIS:
        raise ConfigError(f"--no-stream is for generation APIs; {s.api} answers with one body already")
    if s.api in request_formats.BODY_APIS and (s.turns is not None or s.sessions is not None or s.tasks is not None):
        raise ConfigError(f"--api {s.api} sends single requests: leave out --turns, --sessions and --tasks")
    if s.output_tokens is None and (s.dataset is None or s.turns is not None or s.trace is not None):
        s.output_tokens = str(DEFAULT_OUTPUT_TOKENS)  # a plain dataset run sends each record's own length
    output = (
        None if s.output_tokens is None else LengthSpec.parse(s.output_tokens, name="output_tokens (--output-tokens)")
    )
    # A fresh salt per run keeps a server's prefix cache from answering a repeated run;
    # it is recorded, so the prompts can be rebuilt.
    s.salt = s.salt if s.salt is not None else datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S")
    task_set = (
        _task_workload(
            s.tasks, s.dataset, s.trace, s.input_tokens, s.output_tokens or str(DEFAULT_OUTPUT_TOKENS), s.seed
        )
        if s.tasks is not None
        else None
    )
    special = _special_workload(
        dataset=s.dataset, input_tokens=s.input_tokens, seed=s.seed, salt=s.salt, tasks=task_set,
        output_tokens=s.output_tokens if s.output_tokens is not None else str(DEFAULT_OUTPUT_TOKENS),
        turns=s.turns, sessions=s.sessions, max_context_tokens=s.max_context_tokens, think_time=s.think_time,
        warmup=s.warmup, trace=s.trace, trace_format=s.trace_format, trace_block_size=s.trace_block_size,
        trace_speedup=s.trace_speedup, trace_window=s.trace_window, max_input_tokens=s.max_input_tokens,
        max_output_tokens=s.max_output_tokens, concurrency=s.concurrency, rate=s.rate, requests=s.requests,
    )  # fmt: skip
    schedule_ns: list[int] | None = None
    if special is not None:
        workload, schedule_ns, s.requests = special
    elif task_set is not None:
        workload = task_set
    elif s.dataset is not None:
        workload = DatasetWorkload.from_file(s.dataset, output_tokens=output, seed=s.seed)
    else:
        inp = LengthSpec.parse(s.input_tokens, name="input_tokens (--input-tokens)")
        assert output is not None  # given, or the default: only a plain dataset run leaves it None
        workload = SyntheticWorkload(inp, output, shared_prefix_tokens=s.shared_prefix_tokens, seed=s.seed, salt=s.salt)
    if s.max_error_rate is not None and not 0 <= s.max_error_rate <= 1:
        raise ConfigError(f"max_error_rate (--max-error-rate) {s.max_error_rate} is outside 0..1")
    if s.timeout <= 0:
        raise ConfigError(f"timeout must be > 0 seconds, got {s.timeout}")
    plan = LoadPlan(
        concurrency=s.concurrency,
        rate_rps=s.rate,
        arrival=s.arrival,
        burstiness=s.burstiness,
        max_concurrency=s.max_concurrency,
        requests=s.requests,
        duration_s=s.duration,
        warmup=s.warmup,
        schedule_ns=schedule_ns,
    )
    if s.ca_bundle is not None:
        if s.insecure:
            raise ConfigError(
                "ca_bundle (--ca-bundle) and insecure (--insecure) together: --insecure skips "
                "certificate verification, so the bundle would not be used; pass one of them"
            )
        if not Path(s.ca_bundle).is_file():
            raise ConfigError(
                f"ca_bundle (--ca-bundle) {os.fspath(s.ca_bundle)}: no such file; pass a PEM file of "
                "the CA certificates to trust"
            )
    check_transport(s.transport)
    if s.api_key is None:
        if s.api_key_env is not None and s.api_key_env not in os.environ:
            raise ConfigError(f"api_key_env {s.api_key_env}: that environment variable is not set")
        s.api_key = os.environ.get(s.api_key_env or request_formats.default_api_key_env(s.api)) or None
    refuse_userinfo_with_key(base_url, s.api_key, s.headers or {})
    keys = tuple(k.strip() for k in s.expect_json.split(",") if k.strip()) if isinstance(s.expect_json, str) else ()
    priced = any(p is not None for p in (s.price_input, s.price_cached_input, s.price_output, s.price_request))
    prices = (
        Prices(
            input_per_mtok=s.price_input or 0.0,
            cached_input_per_mtok=s.price_cached_input,
            output_per_mtok=s.price_output or 0.0,
            per_request=s.price_request or 0.0,
            currency=s.currency,
            bill_failed=s.bill_failed,
        )
        if priced
        else None
    )
    timeout_s = s.grader_timeout_s
    if not (isinstance(timeout_s, (int, float)) and 0 < timeout_s < float("inf")):
        raise ConfigError(
            f"grader_timeout_s (--grader-timeout-s) {timeout_s}: give a positive number of seconds, e.g. 30"
        )
    grading = _grading(workload, s.grader, task_set is not None, float(timeout_s))
    judge = Judge(
        grading=grading,
        keep_text=s.keep_text,
        slo=parse_slo(s.slo),
        slo_run=parse_slo_run(s.slo_run),
        validation=Validation(
            regex=s.expect_regex, json=s.expect_json is not None and s.expect_json is not False, json_keys=keys
        ),
        prices=prices,
        prompt_includes_cached=s.api != "anthropic",
    )
    if s.out is not None:
        refuse_used_folder(Path(s.out))
    return RunConfig(
        judge=judge,
        base_url=normalize_base_url(base_url),
        api=s.api,
        model=s.model,
        workload=workload,
        plan=plan,
        api_key=s.api_key,
        headers=dict(s.headers or {}),
        extra_body=s.extra_body,
        http2=s.http2,
        transport=s.transport,
        kernel_timestamps=s.kernel_timestamps,
        out_dir=check_out_dir(Path(s.out)) if s.out is not None else None,
        max_error_rate=s.max_error_rate,
        read_timeout_s=s.timeout,
        seed=s.seed,
        ca_bundle=os.fspath(s.ca_bundle) if s.ca_bundle is not None else None,
        insecure=s.insecure,
        tokenizer=LocalTokenizer(s.tokenizer) if s.tokenizer is not None else None,
        store=None if s.store is None or isinstance(s.store, bool) else os.fspath(s.store),
        store_as=None if s.store is False else "run",
        stream=s.stream,
        inputs=inputs,
        images=image_spec,
        server_metrics=ServerMetrics.make(
            s.server_metrics,
            normalize_base_url(base_url),
            s.server_metrics_interval,
            s.server_metrics_headers,
            s.server_metrics_raw,
            max_bytes=s.server_metrics_max_bytes,
        ),
        settings={k: v for k, v in s.items() if k != "api_key"},
    )


def _task_workload(
    tasks: str | list[str],
    dataset: str | os.PathLike[str] | None,
    trace: str | os.PathLike[str] | None,
    input_tokens: str | int,
    output_tokens: str | int,
    seed: int,
) -> TaskWorkload:
    from pytps.workload.tasks import TaskWorkload

    if dataset is not None or trace is not None:
        raise ConfigError(
            "--tasks is a workload of its own: leave out --dataset and --trace "
            "(a dataset with references is graded as it is: docs/grading.md)"
        )
    return TaskWorkload(tasks, input_tokens, output_tokens, seed)


def _grading(workload: Workload, grader: str | None, builtin: bool, timeout_s: float) -> Grading:
    """The run's graded answers: every dataset record's reference checked now, before any request."""
    from pytps.workload.synthetic import DatasetWorkload

    if isinstance(workload, DatasetWorkload) or builtin:
        refs = workload.references() if isinstance(workload, DatasetWorkload) else []
        return build_grading(refs, grader, builtin=builtin, timeout_s=timeout_s)
    if grader is not None:
        raise ConfigError("grader (--grader) grades the answers of --dataset records or --tasks: give one of them")
    return Grading()


def _special_workload(
    *,
    tasks: TaskWorkload | None,
    dataset: str | os.PathLike[str] | None,
    input_tokens: str | int,
    output_tokens: str | int,
    seed: int,
    salt: str,
    turns: int | None,
    sessions: int | None,
    max_context_tokens: int | None,
    think_time: str | float | None,
    warmup: int,
    trace: str | os.PathLike[str] | None,
    trace_format: str | None,
    trace_block_size: int,
    trace_speedup: float,
    trace_window: str | None,
    max_input_tokens: int | None,
    max_output_tokens: int | None,
    concurrency: int | None,
    rate: float | None,
    requests: int | None,
) -> tuple[Workload, list[int] | None, int | None] | None:
    """Multi-turn sessions or a trace replay, when asked for: (workload, the trace's schedule,
    measured requests); None for single prompts."""
    session_mode = turns is not None or sessions is not None
    if not session_mode and (max_context_tokens is not None or think_time is not None):
        raise ConfigError("--max-context-tokens and --think-time shape multi-turn sessions: give --turns K too")
    if trace is None and (trace_format is not None or trace_window is not None):
        raise ConfigError("--trace-format and --trace-window describe a trace: give --trace FILE too")
    if (max_input_tokens is not None or max_output_tokens is not None) and trace is None:
        raise ConfigError("--max-input-tokens and --max-output-tokens clip a trace's lengths: give --trace FILE too")
    if session_mode:
        from pytps.workload.sessions import SessionPlan, SessionWorkload, ThinkTime, load_conversations

        if trace is not None:
            raise ConfigError("--trace replays single requests; --turns runs sessions: give one of them")
        if rate is not None:
            raise ConfigError("sessions run as a closed loop: --concurrency sets the sessions in flight, not --rate")
        if requests is not None:
            raise ConfigError(
                "with --turns, --sessions sets how many sessions run (sessions x turns requests), not --requests"
            )
        splan = SessionPlan(
            turns=1 if turns is None else turns,
            sessions=10 if sessions is None else sessions,
            warmup=warmup,
            max_context_tokens=max_context_tokens,
            think_time=ThinkTime.parse(think_time),
        ).validate()
        conversations = load_conversations(dataset) if dataset is not None else None
        wl = SessionWorkload(
            splan,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            conversations=conversations,
            source=os.fspath(dataset) if dataset is not None else None,
            seed=seed,
            salt=salt,
            tasks=tasks,
        )
        return wl, None, splan.sessions * splan.turns
    if trace is None:
        return None
    from pytps.workload.traces import TRACE_FORMATS, TraceWorkload, load_trace

    if trace_format is None:
        raise ConfigError(f"--trace needs --trace-format: one of {', '.join(TRACE_FORMATS)}")
    if rate is not None or concurrency is not None:
        raise ConfigError(
            "a trace replay sends at the trace's times: leave out --rate and --concurrency "
            "(--trace-speedup scales the times, --max-concurrency caps the requests in flight)"
        )
    if dataset is not None:
        raise ConfigError("--trace gives the requests' lengths; --dataset gives prompts: give one of them")
    loaded = load_trace(
        trace,
        trace_format,
        block_size=trace_block_size,
        speedup=trace_speedup,
        window=trace_window,
        max_input_tokens=max_input_tokens,
        max_output_tokens=max_output_tokens,
    )
    return TraceWorkload(loaded, seed, salt=salt), loaded.offsets_ns(), requests
