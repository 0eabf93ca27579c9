"""The run loop: drives a transport under a load plan, journals every record as it finishes,
and hands what was measured to pytps.runner.finalize at the end, also when interrupted.

Send times are taken by the transport; the runner only decides *when* to send. In rate mode
the schedule is absolute (start + offset_i), so a late send never delays the ones after it,
and each record keeps its intended send time for coordinated-omission-corrected latency.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Callable
from typing import Any

from pytps._native import _core
from pytps.errors import EndpointError
from pytps.measure.records import RequestRecord
from pytps.measure.redact import Redactor
from pytps.runner.config import RunConfig
from pytps.runner.endpoint import Endpoint
from pytps.runner.finalize import RunOutput, RunResult, default_out_dir, run_metadata, write_results
from pytps.transport.base import RequestSpec, Transport
from pytps.workload import request_formats

_now_ns = _core.now_ns


class Progress:
    """What the console shows while a run goes; the runner calls these, a UI may override them."""

    def start(self, total: int | None, duration_s: float | None) -> None: ...
    def update(self, done: int, in_flight: int, tokens: int, errors: int, elapsed_s: float) -> None: ...
    def stop(self) -> None: ...


async def sleep_until_ns(t_ns: int) -> None:
    """Returns at CLOCK_MONOTONIC t_ns or just after, never before: the event loop's timers are
    ms-grained (uvloop's end up to a millisecond early), so the last stretch yields to the loop
    until the time has come. Rate mode hands every request over through this."""
    delay = (t_ns - _now_ns()) / 1e9
    if delay > 0:
        await asyncio.sleep(delay)
    while _now_ns() < t_ns:
        await asyncio.sleep(0)


class Runner:
    """One run of cfg. transport: a Transport of the caller's (left open at the end), or None for
    the one pytps.transport.registry picks (closed at the end)."""

    # Hooks for a runner that is one worker of a scaled run (pytps.scale.worker): the index of
    # the request sent alone first, and the results folder's writer.
    probe_index = 0
    output_type: type[RunOutput] = RunOutput

    def __init__(
        self,
        cfg: RunConfig,
        progress: Progress | None = None,
        transport: Transport | None = None,
        *,
        keep_records: bool = False,
        envelope: dict[str, Any] | None = None,
    ) -> None:
        self.cfg = cfg
        # This host's trust envelope for the run's transport (pytps.calibrate.envelope_for), given
        # as a value: the run judges itself against it (measure.envelope) and never imports calibrate.
        self.envelope = envelope
        self.progress = progress or Progress()
        self._given_transport = transport
        self._transport = transport
        self._keep_records = keep_records  # hand the records back in RunResult (memory grows with the run)
        self._output: RunOutput | None = None
        self.finished = 0  # requests finished, warm-up included
        self._measured = 0
        # The one redaction rule (pytps.measure.redact) over every secret of the settings.
        self._secrets = cfg.secrets
        self._redactor = Redactor(self._secrets)
        self._include_usage = True
        self._usage_note: str | None = None
        self._planned: dict[int, int] = {}  # the workload's own size estimate, for calibration
        self._in_flight = 0
        self._tokens = 0
        self._errors = 0
        self._stop = False
        self.stopped_reason: str | None = None
        # Called with each finished record before it is journaled (pytps.workload.sessions tags it).
        self.on_record: Callable[[RequestRecord], None] | None = None

    @property
    def stopping(self) -> bool:
        """An early stop (--max-error-rate) was decided: send nothing more."""
        return self._stop

    @property
    def transport(self) -> Transport:
        if self._transport is None:
            raise RuntimeError("the runner's own transport is made by run()")
        return self._transport

    # ---- setup ------------------------------------------------------------------------------

    def _headers(self) -> dict[str, str]:
        return {**request_formats.auth_headers(self.cfg.api, self.cfg.api_key), **self.cfg.headers}

    def _redact(self, text: str | None) -> str | None:
        return self._redactor.optional(text)

    async def _resolve_model(self) -> str:
        if self.cfg.model:
            return self.cfg.model
        endpoint = Endpoint(
            self.cfg.base_url,
            headers=self._headers(),
            secrets=self._secrets,
            ca_file=self.cfg.ca_bundle,
            verify=not self.cfg.insecure,
            timeout_s=self.cfg.connect_timeout_s + self.cfg.read_timeout_s,
        )
        return await endpoint.first_model(self.cfg.api)

    def _spec(self, i: int, model: str, warmup: bool, t_sched_ns: int | None = None) -> RequestSpec:
        prompt = self.cfg.workload.prompt(i)
        if prompt.planned_tokens:
            self._planned[i] = prompt.planned_tokens
        path, body = request_formats.build_request(
            self.cfg.api, model, prompt, include_usage=self._include_usage, extra_body=self.cfg.extra_body
        )
        return RequestSpec(
            index=i,
            path=path,
            body=json.dumps(body).encode(),
            headers=self._headers(),
            dialect=self.cfg.api,
            warmup=warmup,
            t_sched_ns=t_sched_ns,
            prompt_tokens_planned=prompt.input_tokens_target,
            max_tokens=prompt.max_tokens,
            usage_requested=self._include_usage,
        )

    # ---- one request ------------------------------------------------------------------------

    def _finish(self, rec: RequestRecord, output: RunOutput) -> None:
        """One finished request: O(1) whatever the run's length (the work per token aside)."""
        rec.error_detail = self._redact(rec.error_detail)
        if self.on_record is not None:
            self.on_record(rec)
        if self.cfg.tokenizer is not None and "completion_tokens" not in rec.usage:
            rec.tokenizer_tokens = self.cfg.tokenizer.count(rec.text + rec.reasoning_text)
        m = output.add(rec)
        rec.text = rec.reasoning_text = ""  # judged and counted: do not hold every answer in memory
        self.finished += 1
        reported = rec.usage.get("prompt_tokens")
        planned = self._planned.pop(rec.index, None)
        if reported and planned:
            # Anthropic's input_tokens leave out cache reads; the prompt is both.
            if self.cfg.api == "anthropic":
                reported += rec.usage.get("cached_tokens", 0)
            self.cfg.workload.calibrate(planned, reported)
        if not rec.warmup:
            if rec.ok:
                self._tokens += m.output_tokens
            else:
                self._errors += 1
            self._measured += 1
            measured = self._measured
            limit = self.cfg.max_error_rate
            if limit is not None and measured >= 10 and self._errors / measured > limit:
                self._stop = True
                self.stopped_reason = (
                    f"error rate {self._errors / measured:.1%} exceeded --max-error-rate "
                    f"{limit:.1%} after {measured} requests"
                )

    async def _first_request(self, model: str, output: RunOutput, warmup: bool) -> None:
        """Sends request 0 alone, to fail fast on a wrong key, path or model, and to learn
        whether the server accepts the usage request (retried once without it)."""
        rec = await self.transport.send(self._spec(self.probe_index, model, warmup))
        if (
            self._include_usage
            and rec.status is not None
            and request_formats.rejects_usage_request(rec.status, rec.error_detail or "")
        ):
            self._include_usage = False
            self._usage_note = "the server rejected stream_options.include_usage; retried without it"
            rec = await self.transport.send(self._spec(self.probe_index, model, warmup))
        if rec.status in (401, 403):
            raise EndpointError(
                f"the endpoint refused the API key (HTTP {rec.status}); set --api-key-env "
                "to the variable that holds a valid key"
            )
        if rec.status == 404:
            raise EndpointError(
                self._redactor(
                    f"{request_formats.describe_error(404, rec.error_detail or '', self._redactor)} for "
                    f"{self.cfg.base_url}{self._spec(self.probe_index, model, warmup).path}: wrong --base-url or "
                    f"--api, or unknown model '{model}'"
                )
            )
        if rec.error in ("connect",):
            raise EndpointError(
                self._redact(
                    f"cannot connect to {self.cfg.base_url}: {rec.error_detail}; "
                    "is the server running? Check --base-url"
                )
                or ""
            )
        self._finish(rec, output)

    # ---- load -------------------------------------------------------------------------------

    async def send_one(self, i: int, model: str, output: RunOutput, warmup: bool) -> None:
        """Sends request i now and finishes it (the session driver's step)."""
        self._in_flight += 1
        try:
            rec = await self.transport.send(self._spec(i, model, warmup))
        finally:
            self._in_flight -= 1
        self._finish(rec, output)

    async def _concurrency_loop(self, model: str, output: RunOutput) -> None:
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
                self._finish(rec, output)

        await asyncio.gather(*(worker() for _ in range(plan.concurrency or 1)))

    async def _rate_loop(self, model: str, output: RunOutput) -> None:
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
            self._finish(rec, output)

        # A transport that paces sends itself (the native engine's timers) gets each request a
        # little ahead of its time and holds it until t_sched; asyncio timers are only ms-exact.
        lead_ns = self.transport.schedule_lead_ns
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
            await sleep_until_ns(t_sched - lead_ns)
            task = asyncio.create_task(one(i, t_sched))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
        if tasks:
            await asyncio.gather(*tasks)

    async def _report_progress(self, t_start: int) -> None:
        while True:
            self.progress.update(
                self.finished, self._in_flight, self._tokens, self._errors, (_now_ns() - t_start) / 1e9
            )
            await asyncio.sleep(0.1)

    # ---- the run ----------------------------------------------------------------------------

    async def run(self) -> RunResult:
        from pytps.transport.registry import make_transport

        cfg = self.cfg
        cfg.plan.validate()
        own_transport = self._given_transport is None
        self._transport = self._given_transport or make_transport(cfg)
        interrupted = False
        try:
            model = await self._resolve_model()
            out_dir = cfg.out_dir or default_out_dir(model)
            output = self._output = self.output_type(
                out_dir, cfg.plan, judge=cfg.judge, keep_records=self._keep_records
            )
            metadata = run_metadata(cfg, model, self.transport)
            write_results(out_dir, metadata, None)
            total = (cfg.plan.requests + cfg.plan.warmup) if cfg.plan.requests is not None else None
            self.progress.start(total, cfg.plan.duration_s)
            loop_cpu0 = time.thread_time()
            t_start = _now_ns()
            ticker = asyncio.create_task(self._report_progress(t_start))
            try:
                from pytps.runner.sessions import run_sessions
                from pytps.workload.sessions import SessionWorkload

                first = self._first_request(model, output, warmup=cfg.plan.warmup > 0)
                if isinstance(cfg.workload, SessionWorkload):
                    await run_sessions(self, model, output, lambda: first)
                else:
                    await first
                    if cfg.plan.mode == "rate":
                        await self._rate_loop(model, output)
                    else:
                        await self._concurrency_loop(model, output)
            except asyncio.CancelledError:
                interrupted = True
            finally:
                ticker.cancel()
                self.progress.stop()
                loop_cpu_s = time.thread_time() - loop_cpu0
                wall_s = (_now_ns() - t_start) / 1e9
        finally:
            if own_transport:
                # Closing must not lose what was measured: a failure here is not the run's.
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await asyncio.shield(self.transport.aclose())
        # The client's own CPU while it sent and read (not the report's): the event loop's thread,
        # plus the transport's own thread (the native engine's). Threads of anything else in this
        # process (an in-process emulator) are not counted. thread_cpu_s is known after aclose().
        engine_cpu_s = self.transport.thread_cpu_s if own_transport else None
        metadata["client_cpu"] = {"wall_s": wall_s, "loop_thread_s": loop_cpu_s, "engine_thread_s": engine_cpu_s}
        metadata["prompt_calibration"] = cfg.workload.prompt_calibration()
        metadata["usage_note"] = self._usage_note
        metadata["include_usage"] = self._include_usage
        metadata["interrupted"] = interrupted
        metadata["stopped_reason"] = self.stopped_reason
        result = output.finish(metadata, self.envelope)
        result.interrupted = interrupted
        result.stopped_reason = self.stopped_reason
        return result
