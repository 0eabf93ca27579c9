"""The runner: drives a transport under a load plan, journals every record as it finishes,
and writes the results at the end, also when interrupted.

Send times are taken by the transport; the runner only decides *when* to send. In rate mode
the schedule is absolute (start + offset_i), so a late send never delays the ones after it,
and each record keeps its intended send time for coordinated-omission-corrected latency.
"""

from __future__ import annotations

import asyncio
import json
import platform
import os
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from . import apis
from ._native import _core
from .errors import ConfigError, EndpointError
from .metrics import request_metrics, summarize
from .records import RequestRecord
from .results import Journal, write_events, write_json_atomic
from .schedule import LoadPlan
from .transport import HttpxTransport, RequestSpec

_now_ns = _core.now_ns


@dataclass
class RunConfig:
    base_url: str
    api: str
    workload: Any  # SyntheticWorkload or DatasetWorkload: .prompt(i) -> Prompt
    plan: LoadPlan
    model: str | None = None
    api_key: str | None = field(default=None, repr=False)
    headers: dict[str, str] = field(default_factory=dict)
    extra_body: dict[str, Any] | None = None
    http2: bool = False
    transport: str = "auto"  # "native" (HTTP/1.1 on a C++ thread, http:// or https://), "httpx" (HTTP/2,
    # proxies), "asyncio" (http:// HTTP/1.1 on the event loop), or auto
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
    workload_description: dict[str, Any] = field(default_factory=dict)
    tokenizer: Any = None  # object with .count(text) -> int, optional


@dataclass(repr=False)
class RunResult:
    out_dir: Path
    metadata: dict[str, Any]
    summary: dict[str, Any]
    records: list[RequestRecord]
    interrupted: bool = False
    stopped_reason: str | None = None

    def __repr__(self) -> str:
        # Short on purpose: asyncio formats a finished task's result with repr (on Python 3.11
        # even on every signal.getsignal), and the records' arrays are large.
        return f"<RunResult {len(self.records)} requests in {self.out_dir}>"


class Progress:
    """What the console shows while a run goes; the runner calls these, a UI may override them."""

    def start(self, total: int | None, duration_s: float | None) -> None: ...
    def update(self, done: int, in_flight: int, tokens: int, errors: int, elapsed_s: float) -> None: ...
    def stop(self) -> None: ...


def default_out_dir(model: str) -> Path:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    safe = "".join(c if c.isalnum() or c in "-._" else "_" for c in model)[:60]
    return Path("results") / f"{stamp}-{safe}"


class Runner:
    def __init__(self, cfg: RunConfig, progress: Progress | None = None, transport: Any = None) -> None:
        self.cfg = cfg
        self.progress = progress or Progress()
        self.transport = transport
        self.records: list[RequestRecord] = []
        self._secrets = [s for s in (cfg.api_key,) if s]
        self._include_usage = True
        self._usage_note: str | None = None
        self._planned: dict[int, int] = {}  # the workload's own size estimate, for calibration
        self._in_flight = 0
        self._tokens = 0
        self._errors = 0
        self._stop = False
        self.stopped_reason: str | None = None

    # ---- setup ------------------------------------------------------------------------------

    def _headers(self) -> dict[str, str]:
        return {**apis.auth_headers(self.cfg.api, self.cfg.api_key), **self.cfg.headers}

    def _redact(self, text: str | None) -> str | None:
        return apis.redact(text, self._secrets) if text else text

    async def _resolve_model(self) -> str:
        if self.cfg.model:
            return self.cfg.model
        path = apis.models_path(self.cfg.api)
        try:
            status, body = await self.transport.get_json(path, self._headers())
        except Exception as exc:  # noqa: BLE001
            from .transport.httpx_transport import tls_hint

            hint = tls_hint(exc)
            advice = f"the server's TLS certificate was not accepted: {hint}" if hint else \
                "is the server running? Check --base-url"
            raise EndpointError(self._redact(
                f"cannot reach {self.cfg.base_url} ({type(exc).__name__}: {exc}); {advice}") or "") from None
        if status in (401, 403):
            raise EndpointError(f"{self.cfg.base_url}{path} answered {status}: the API key was refused; "
                                "set --api-key-env to the variable that holds a valid key")
        models = apis.parse_models(self.cfg.api, body) if status == 200 and body is not None else []
        if not models and path != "/v1/models":
            # Ollama also serves the OpenAI-compatible list.
            status, body = await self.transport.get_json("/v1/models", self._headers())
            models = apis.parse_models("openai-chat", body) if status == 200 and body is not None else []
        if not models:
            raise EndpointError(f"could not list models at {self.cfg.base_url}{path} (HTTP {status}); "
                                "name one with --model")
        return models[0]

    def _spec(self, i: int, model: str, warmup: bool, t_sched_ns: int | None = None) -> RequestSpec:
        prompt = self.cfg.workload.prompt(i)
        if getattr(prompt, "planned_tokens", None):
            self._planned[i] = prompt.planned_tokens
        path, body = apis.build_request(self.cfg.api, model, prompt, include_usage=self._include_usage,
                                        extra_body=self.cfg.extra_body)
        return RequestSpec(
            index=i, path=path, body=json.dumps(body).encode(), headers=self._headers(), dialect=self.cfg.api,
            warmup=warmup, t_sched_ns=t_sched_ns, prompt_tokens_planned=prompt.input_tokens_target,
            max_tokens=prompt.max_tokens, usage_requested=self._include_usage,
        )

    # ---- one request ------------------------------------------------------------------------

    def _finish(self, rec: RequestRecord, journal: Journal) -> None:
        rec.error_detail = self._redact(rec.error_detail)
        if self.cfg.tokenizer is not None and "completion_tokens" not in rec.usage:
            rec.tokenizer_tokens = self.cfg.tokenizer.count(rec.text)
        rec.text = ""  # counted or not needed: do not hold every answer in memory
        self.records.append(rec)
        m = request_metrics(rec)
        journal.append(rec, m.as_dict())
        reported = rec.usage.get("prompt_tokens")
        planned = self._planned.pop(rec.index, None)
        if reported and planned and hasattr(self.cfg.workload, "calibrate"):
            # Anthropic's input_tokens leave out cache reads; the prompt is both.
            if self.cfg.api == "anthropic":
                reported += rec.usage.get("cached_tokens", 0)
            self.cfg.workload.calibrate(planned, reported)
        if not rec.warmup:
            if rec.ok:
                self._tokens += m.output_tokens
            else:
                self._errors += 1
            measured = sum(1 for r in self.records if not r.warmup)
            limit = self.cfg.max_error_rate
            if limit is not None and measured >= 10 and self._errors / measured > limit:
                self._stop = True
                self.stopped_reason = (f"error rate {self._errors / measured:.1%} exceeded --max-error-rate "
                                       f"{limit:.1%} after {measured} requests")

    async def _first_request(self, model: str, journal: Journal, warmup: bool) -> None:
        """Sends request 0 alone, to fail fast on a wrong key, path or model, and to learn
        whether the server accepts the usage request (retried once without it)."""
        rec = await self.transport.send(self._spec(0, model, warmup))
        if self._include_usage and rec.status is not None and apis.rejects_usage_request(
                rec.status, rec.error_detail or ""):
            self._include_usage = False
            self._usage_note = "the server rejected stream_options.include_usage; retried without it"
            rec = await self.transport.send(self._spec(0, model, warmup))
        if rec.status in (401, 403):
            raise EndpointError(f"the endpoint refused the API key (HTTP {rec.status}); set --api-key-env "
                                "to the variable that holds a valid key")
        if rec.status == 404:
            raise EndpointError(
                f"{apis.describe_error(404, rec.error_detail or '', self._secrets)} for "
                f"{self.cfg.base_url}{self._spec(0, model, warmup).path}: wrong --base-url or --api, "
                f"or unknown model '{model}'")
        if rec.error in ("connect",):
            raise EndpointError(self._redact(f"cannot connect to {self.cfg.base_url}: {rec.error_detail}; "
                                             "is the server running? Check --base-url") or "")
        self._finish(rec, journal)

    # ---- load -------------------------------------------------------------------------------

    async def _concurrency_loop(self, model: str, journal: Journal) -> None:
        plan = self.cfg.plan
        next_index = 1
        end_index = plan.warmup + plan.requests if plan.requests is not None else None
        # Duration is measurement time: it starts with the first measured request.
        deadline: int | None = None

        def take() -> int | None:
            nonlocal next_index, deadline
            if self._stop or (end_index is not None and next_index >= end_index):
                return None
            now = _now_ns()
            if deadline is not None and now >= deadline:
                return None
            if deadline is None and plan.duration_s and next_index >= plan.warmup:
                deadline = now + int(plan.duration_s * 1e9)
            i = next_index
            next_index += 1
            return i

        async def worker() -> None:
            while (i := take()) is not None:
                self._in_flight += 1
                try:
                    rec = await self.transport.send(self._spec(i, model, i < plan.warmup))
                finally:
                    self._in_flight -= 1
                self._finish(rec, journal)

        await asyncio.gather(*(worker() for _ in range(plan.concurrency or 1)))

    async def _rate_loop(self, model: str, journal: Journal) -> None:
        """Sends on an absolute schedule that starts after the first (probe) request."""
        plan = self.cfg.plan
        end_index = plan.warmup + plan.requests if plan.requests is not None else None
        limit = asyncio.Semaphore(plan.max_concurrency) if plan.max_concurrency else None
        tasks: set[asyncio.Task[None]] = set()

        async def one(i: int, t_sched: int) -> None:
            if limit is not None:
                await limit.acquire()
            self._in_flight += 1
            try:
                rec = await self.transport.send(self._spec(i, model, i < plan.warmup, t_sched))
            finally:
                self._in_flight -= 1
                if limit is not None:
                    limit.release()
            self._finish(rec, journal)

        # A transport that paces sends itself (the native engine's timers) gets each request a
        # little ahead of its time and holds it until t_sched; asyncio timers are only ms-exact.
        lead_ns = getattr(self.transport, "schedule_lead_ns", 0)
        # The schedule starts one lead from now, so its first requests can be handed over in
        # time too (the origin is a choice; lateness against it is still all counted).
        t0 = _now_ns() + lead_ns
        deadline = t0 + int(plan.duration_s * 1e9) if plan.duration_s else None
        for i, offset in enumerate(plan.arrivals_ns(self.cfg.seed), start=1):
            if self._stop or (end_index is not None and i >= end_index):
                break
            t_sched = t0 + int(offset)
            if deadline is not None and t_sched >= deadline:
                break
            delay = (t_sched - lead_ns - _now_ns()) / 1e9
            if delay > 0:
                await asyncio.sleep(delay)
            task = asyncio.create_task(one(i, t_sched))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
        if tasks:
            await asyncio.gather(*tasks)

    async def _report_progress(self, t_start: int) -> None:
        while True:
            done = len(self.records)
            self.progress.update(done, self._in_flight, self._tokens, self._errors, (_now_ns() - t_start) / 1e9)
            await asyncio.sleep(0.1)

    # ---- the run ----------------------------------------------------------------------------

    async def run(self) -> RunResult:
        cfg = self.cfg
        cfg.plan.validate()
        own_transport = self.transport is None
        if own_transport:
            self.transport = make_transport(cfg)
        interrupted = False
        journal: Journal | None = None
        try:
            model = await self._resolve_model()
            out_dir = cfg.out_dir or default_out_dir(model)
            out_dir.mkdir(parents=True, exist_ok=True)
            journal = Journal(out_dir / "requests.jsonl")
            metadata = self._metadata(model)
            write_json_atomic(out_dir / "results.json", {"metadata": metadata, "summary": None, "requests": []})
            total = (cfg.plan.requests + cfg.plan.warmup) if cfg.plan.requests is not None else None
            self.progress.start(total, cfg.plan.duration_s)
            loop_cpu0 = time.thread_time()
            t_start = _now_ns()
            ticker = asyncio.create_task(self._report_progress(t_start))
            try:
                await self._first_request(model, journal, warmup=cfg.plan.warmup > 0)
                if cfg.plan.mode == "rate":
                    await self._rate_loop(model, journal)
                else:
                    await self._concurrency_loop(model, journal)
            except asyncio.CancelledError:
                interrupted = True
            finally:
                ticker.cancel()
                self.progress.stop()
                loop_cpu_s = time.thread_time() - loop_cpu0
                wall_s = (_now_ns() - t_start) / 1e9
        finally:
            if own_transport:
                try:
                    await asyncio.shield(self.transport.aclose())
                except (asyncio.CancelledError, Exception):  # noqa: BLE001
                    pass
        # The client's own CPU while it sent and read (not the report's): the event loop's thread,
        # plus the native engine's thread. Threads of anything else in this process (an
        # in-process emulator) are not counted.
        engine_cpu_s = getattr(self.transport, "thread_cpu_s", None) if own_transport else None
        metadata["client_cpu"] = {"wall_s": wall_s, "loop_thread_s": loop_cpu_s, "engine_thread_s": engine_cpu_s}
        metadata["usage_note"] = self._usage_note
        metadata["include_usage"] = self._include_usage
        metadata["interrupted"] = interrupted
        metadata["stopped_reason"] = self.stopped_reason
        result = finalize(out_dir, metadata, self.records, cfg.plan)
        result.interrupted = interrupted
        result.stopped_reason = self.stopped_reason
        if journal is not None:
            journal.close()
        return result

    def _tls_metadata(self) -> dict[str, Any] | None:
        """How https:// was spoken: the TLS library of the transport that measured, and the trust settings."""
        if urlsplit(self.cfg.base_url).scheme != "https":
            return None
        return {"library": getattr(self.transport, "tls_library", None), "verify": not self.cfg.insecure,
                "ca_bundle": self.cfg.ca_bundle}

    def _metadata(self, model: str) -> dict[str, Any]:
        from . import __version__

        cfg = self.cfg
        url = urlsplit(cfg.base_url)
        plan = cfg.plan
        return {
            "pytps_version": __version__,
            "date_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "endpoint": {"scheme": url.scheme, "host": url.hostname, "port": url.port, "path": url.path or "/"},
            "api": cfg.api,
            "model": model,
            "transport": getattr(self.transport, "name", "httpx"),
            "tls": self._tls_metadata(),
            "event_loop": event_loop_name(),
            "kernel_timestamps": cfg.kernel_timestamps,
            "http2": cfg.http2,
            "workload": cfg.workload_description,
            "load": {
                "mode": plan.mode, "concurrency": plan.concurrency, "rate_rps": plan.rate_rps,
                "arrival": plan.arrival, "burstiness": plan.burstiness, "max_concurrency": plan.max_concurrency,
                "requests": plan.requests, "duration_s": plan.duration_s, "warmup": plan.warmup,
            },
            "seed": cfg.seed,
            "tokenizer": getattr(cfg.tokenizer, "path", None),
            "extra_body": cfg.extra_body,
            "header_names": sorted(cfg.headers),  # values may hold secrets
            "client": {
                "host": platform.node(), "cpu_count": os.cpu_count(), "os": platform.platform(),
                "python": platform.python_version(),
            },
            "clock": {"source": "CLOCK_MONOTONIC", "unit": "ns",
                      "wall_minus_monotonic_ns": time.time_ns() - _now_ns()},
        }


# Rate mode on the native engine: the engine's thread busy-waits at most this long before a
# scheduled send instead of trusting a timed sleep to wake on time (timed sleeps wake 50-100 us
# late on a VM). The window adapts down to what the sleeps need; it costs at most this much CPU
# per request.
NATIVE_RATE_SPIN_NS = 150_000


def proxy_for(base_url: str) -> str | None:
    """The proxy the environment (HTTP_PROXY, ALL_PROXY, NO_PROXY...) sets for this URL, as httpx
    would use it; None when requests go direct."""
    from urllib.request import getproxies_environment, proxy_bypass_environment

    url = urlsplit(base_url)
    proxies = getproxies_environment()
    proxy = proxies.get(url.scheme) or proxies.get("all")
    if not proxy or proxy_bypass_environment(url.hostname or "", proxies):
        return None
    return proxy


def choose_transport(cfg: RunConfig) -> str:
    """auto: the native engine for HTTP/1.1 without a proxy (the most exact), over http:// and, when
    the native core was built with TLS, https://; else httpx (--http2, proxies, https:// without
    TLS in the build)."""
    if cfg.transport not in ("auto", "asyncio", "httpx", "native"):
        raise ConfigError(f"unknown transport {cfg.transport!r}; use auto, asyncio, httpx or native")
    scheme = urlsplit(cfg.base_url).scheme
    plain = scheme == "http" and not cfg.http2
    if cfg.transport == "asyncio" and not plain:
        raise ConfigError("the asyncio transport speaks plain http:// over HTTP/1.1; for https:// or "
                          "--http2 use --transport httpx (or auto), or --transport native for https://")
    if cfg.transport == "native":
        if cfg.http2 or scheme not in ("http", "https"):
            raise ConfigError("the native transport speaks HTTP/1.1 over http:// or https://; for --http2 "
                              "use --transport httpx (or auto)")
        if scheme == "https" and not _core.TLS_AVAILABLE:
            from .transport.native_transport import NO_TLS

            raise ConfigError(f"--transport native with an https:// URL: {NO_TLS}")
    native_ok = not cfg.http2 and (scheme == "http" or (scheme == "https" and _core.TLS_AVAILABLE))
    chosen = cfg.transport
    if cfg.transport == "auto":
        # A proxy in the environment is honoured by httpx only: the native engine goes direct.
        chosen = "native" if native_ok and proxy_for(cfg.base_url) is None else "httpx"
    if cfg.kernel_timestamps and chosen != "native":
        raise ConfigError(f"--kernel-timestamps needs the native transport (this run would use {chosen}): "
                          "add --transport native, or leave --kernel-timestamps out")
    return chosen


def make_transport(cfg: RunConfig) -> Any:
    import httpx

    from .transport.asyncio_transport import AsyncioTransport

    chosen = choose_transport(cfg)
    max_connections = max(cfg.plan.concurrency or 0, cfg.plan.max_concurrency or 0, 100)
    if chosen == "native":
        from .transport.native_transport import NativeTransport

        return NativeTransport(cfg.base_url, connect_timeout_s=cfg.connect_timeout_s,
                               read_timeout_s=cfg.read_timeout_s, total_timeout_s=cfg.request_timeout_s,
                               max_connections=max_connections, kernel_timestamps=cfg.kernel_timestamps,
                               spin_ns=NATIVE_RATE_SPIN_NS if cfg.plan.mode == "rate" else 0,
                               ca_file=cfg.ca_bundle, verify=not cfg.insecure)
    if chosen == "asyncio":
        return AsyncioTransport(cfg.base_url, connect_timeout_s=cfg.connect_timeout_s,
                                read_timeout_s=cfg.read_timeout_s, total_timeout_s=cfg.request_timeout_s)
    return HttpxTransport(
        cfg.base_url, http2=cfg.http2,
        max_connections=max_connections,
        timeout=httpx.Timeout(connect=cfg.connect_timeout_s, read=cfg.read_timeout_s, write=30.0, pool=None),
        total_timeout_s=cfg.request_timeout_s,
        verify=not cfg.insecure, ca_file=cfg.ca_bundle,
    )


def finalize(out_dir: Path, metadata: dict[str, Any], records: list[RequestRecord], plan: LoadPlan) -> RunResult:
    """Summary, results.json and events.npz from whatever was measured: also after Ctrl-C."""
    target = plan.concurrency if plan.mode == "concurrency" else plan.max_concurrency
    summary, per_request = summarize(records, target_concurrency=target, rate_mode=plan.mode == "rate")
    cpu = metadata.get("client_cpu")
    if cpu and summary.get("output_tokens_total"):
        cpu_s = cpu["loop_thread_s"] + (cpu["engine_thread_s"] or 0.0)
        summary["client_cpu_us_per_token"] = cpu_s / summary["output_tokens_total"] * 1e6
    write_json_atomic(out_dir / "results.json", {
        "metadata": metadata,
        "summary": summary,
        "requests": [m.as_dict() for m in per_request],
    })
    write_events(out_dir / "events.npz", records)
    return RunResult(out_dir=out_dir, metadata=metadata, summary=summary, records=records)


def event_loop_name() -> str:
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return "asyncio"
    return "uvloop"


def run_coroutine(coro: Any) -> Any:
    """Runs the client's event loop: uvloop when installed (its per-read cost is a fraction of
    the pure-Python selector loop's, which keeps stamps close to the wire under load)."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coro)
    return uvloop.run(coro)


def run(cfg: RunConfig, progress: Progress | None = None) -> RunResult:
    """Runs a benchmark to the end (library entry point): pytps.run(...) builds cfg for you."""
    return run_coroutine(Runner(cfg, progress).run())

