"""The run loop: drives a transport under a load plan, journals every record as it finishes,
and hands what was measured to pytps.results.output at the end, also when interrupted.

Send times are taken by the transport; the runner only decides *when* to send. In rate mode
the schedule is absolute (start + offset_i), so a late send never delays the ones after it,
and each record keeps its intended send time for coordinated-omission-corrected latency.

One send loop per load model serves a single process and each worker of a scaled run
(pytps.scale.worker) alike, through three hooks of Runner: the share of the schedule it sends
(pytps.runner.share.Share; the whole of it by default), the start barrier awaited before the
schedule's first send (it gives the schedule's t0), and the stop signal (request_stop).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import sys
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any, cast

from pytps._native import _core
from pytps.errors import EndpointError
from pytps.grading.grade import Grade
from pytps.grading.graders import STOPPED_REASON
from pytps.measure.bodies import read_body
from pytps.measure.fast_json import dumps_body
from pytps.measure.metrics import RequestMetrics
from pytps.measure.records import RequestRecord
from pytps.measure.redact import Redactor
from pytps.results.folder import GRADING_DONE, GRADING_STOPPED
from pytps.results.output import RunOutput, RunResult, default_out_dir, write_results
from pytps.runner.body_templates import BodyTemplates
from pytps.runner.config import RunConfig
from pytps.runner.endpoint import Endpoint
from pytps.runner.metadata import run_metadata
from pytps.runner.provenance import host_facts, server_facts
from pytps.runner.share import Share
from pytps.transport.base import BatchTransport, RequestSpec, Transport
from pytps.workload import request_formats
from pytps.workload.inputs import body_request

if TYPE_CHECKING:
    from pytps.measure.saturation import SaturationWatch  # given by a capacity search; a run loads none

_now_ns = _core.now_ns

#: A request's steps that the batch loop does not call: a subclass that overrides one keeps the
#: slots' loop (Runner._batches_fit).
_STEPS = ("send_one", "_completed", "_finish")

#: A start barrier: awaited once, after the probe and before the schedule's first send, with the
#: transport's schedule lead (ns). Returns the schedule's t0 on this process's CLOCK_MONOTONIC
#: (rate mode sends index i at t0 + offset_i; concurrency mode ignores it), or None: send nothing more.
StartBarrier = Callable[[int], Awaitable[int | None]]


async def start_now(schedule_lead_ns: int) -> int:
    """The barrier of a run in one process: the schedule starts one lead from now, so its first
    requests can be handed over in time too (the origin is a choice; lateness against it is
    still all counted)."""
    return _now_ns() + schedule_lead_ns


#: The live counts of a run (Runner.counters' keys, beside t_measure_start_ns): a scale driver
#: sums each over its workers' snapshots for the one progress display.
LIVE_COUNTS = ("finished", "measured", "in_flight", "tokens", "errors")


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


def _is_sessions(workload: object) -> bool:
    """Whether the workload is multi-turn sessions (pytps.workload.sessions), without importing
    that module for a run that has none: a SessionWorkload exists only once its module is loaded."""
    module = sys.modules.get("pytps.workload.sessions")
    return module is not None and isinstance(workload, module.SessionWorkload)


class Runner:
    """One run of cfg. transport: a Transport of the caller's (left open at the end), or None for
    the one pytps.transport.registry picks (closed at the end).

    A runner that sends part of a run (one worker of pytps.scale) is given
    - share: the indexes (concurrency mode) or arrivals (rate mode) it sends, its slots, and its
      probe, the request sent alone first (None: the whole of cfg.plan, Share.whole);
    - start: the start barrier (StartBarrier; None: start_now);
    and may be stopped from another thread with request_stop(): the requests in flight finish.
    """

    # The results folder's writer (a scale worker's keeps its event log for the driver's merge).
    output_type: type[RunOutput] = RunOutput

    def __init__(
        self,
        cfg: RunConfig,
        progress: Progress | None = None,
        transport: Transport | None = None,
        *,
        keep_records: bool = False,
        envelope: dict[str, Any] | None = None,
        share: Share | None = None,
        start: StartBarrier | None = None,
        saturation: SaturationWatch | None = None,
    ) -> None:
        self.cfg = cfg
        self._share = share
        self._start = start or start_now
        # This host's trust envelope for the run's transport (pytps.calibrate.envelope_for), given
        # as a value: the run judges itself against it (measure.envelope) and never imports calibrate.
        self.envelope = envelope
        # A capacity search's probe: stop sending once the load is past saturation (measure.saturation).
        self.saturation = saturation
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
        # --request-id-header: the header's name, and this run's prefix of the ids sent in it.
        self._id_header: str | None = cfg.settings.get("request_id_header")
        self._shared_headers: dict[str, str] | None = None  # see _request_headers
        self._bodies = BodyTemplates(cfg.api, cfg.extra_body)  # generation requests' bodies, by shape
        self._id_prefix = f"pytps-{os.urandom(6).hex()}-"  # 48 random bits (uuid4 is not imported for them)
        self._include_usage = True
        self._usage_note: str | None = None
        self._planned: dict[int, int] = {}  # the workload's own size estimate, for calibration
        # Graded answers: each request's item and reference fields, until its answer is graded.
        self._items: dict[int, tuple[str, dict[str, Any] | None]] = {}
        # Requests journaled whose answers are with their graders (a stopped run finishes them).
        self._grading: dict[int, RequestRecord] = {}
        self._background: set[asyncio.Task[None]] = set()  # gradings the load does not wait for
        self._in_flight = 0
        self._tokens = 0
        self._errors = 0
        self._stop = False
        self.stopped_reason: str | None = None
        # When measurement began on this process's clock: the first measured take (concurrency
        # mode), the schedule's t0 (rate mode); None before.
        self.t_measure_start_ns: int | None = None
        # Called with each finished record before it is journaled (pytps.workload.sessions tags it).
        self.on_record: Callable[[RequestRecord], None] | None = None

    @property
    def stopping(self) -> bool:
        """An early stop (--max-error-rate) was decided: send nothing more."""
        return self._stop

    @property
    def share(self) -> Share:
        """The part of the schedule this runner sends."""
        if self._share is None:
            self._share = Share.whole(self.cfg.plan)
        return self._share

    def request_stop(self, reason: str | None = None) -> None:
        """Send nothing more (safe from another thread); the requests in flight finish. The first
        reason given is the run's stopped_reason."""
        self._stop = True
        if reason and self.stopped_reason is None:
            self.stopped_reason = reason

    def counters(self) -> dict[str, Any]:
        """The live counts a progress display or a scale driver's snapshot shows (LIVE_COUNTS), and
        when measurement began."""
        counts = (self.finished, self._measured, self._in_flight, self._tokens, self._errors)
        return {**dict(zip(LIVE_COUNTS, counts, strict=True)), "t_measure_start_ns": self.t_measure_start_ns}

    @property
    def transport(self) -> Transport:
        if self._transport is None:
            raise RuntimeError("the runner's own transport is made by run()")
        return self._transport

    # ---- setup ------------------------------------------------------------------------------

    def _headers(self) -> dict[str, str]:
        return self.cfg.request_headers

    def _request_headers(self, i: int) -> tuple[dict[str, str], str | None]:
        """A request's headers, with the id pytps sends in --request-id-header's header (and that id).
        Without an id of its own, every request's spec holds the one dict made at the first
        (transports read a spec's headers, never change them): made per request, they were ~1% of
        a short request's client CPU (issue 42)."""
        if self._id_header is None:
            if self._shared_headers is None:
                self._shared_headers = self._headers()
            return self._shared_headers, None
        headers = self._headers()
        sent = f"{self._id_prefix}{i}"
        headers[self._id_header] = sent
        return headers, sent

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
        cfg = self.cfg
        if cfg.api in request_formats.BODY_APIS:
            path, body, planned = body_request(cfg.inputs, cfg.api, model, cfg.workload.prompt, i, cfg.extra_body)
            if planned and cfg.api != "rerank":  # a rerank server counts the query once per document
                self._planned[i] = planned
            return self._new_spec(
                i,
                path,
                dumps_body(body),
                warmup,
                t_sched_ns,
                dialect=request_formats.JSON_DIALECT,
                prompt_tokens_planned=planned or None,
                usage_requested=False,
                stream=False,
                inputs=cfg.inputs.inputs(cfg.api),
                top_n=cfg.inputs.top_n if cfg.api == "rerank" else None,
                dimensions=cfg.inputs.dimensions if cfg.api != "rerank" else None,
            )
        prompt = self.cfg.workload.prompt(i)
        if prompt.planned_tokens:
            self._planned[i] = prompt.planned_tokens
        if prompt.item is not None and self.cfg.judge.grading.active:
            self._items[i] = (prompt.item, prompt.reference)
        images = cfg.images.images(i) if cfg.images.count else prompt.images
        path, data = self._bodies.request(
            model, prompt, stream=cfg.stream, include_usage=self._include_usage, images=images
        )
        return self._new_spec(
            i,
            path,
            data,
            warmup,
            t_sched_ns,
            dialect=request_formats.response_dialect(cfg.api, cfg.stream),
            stream=cfg.stream,
            images=len(images),
            image_bytes=sum(len(im.data) for im in images) if images else 0,
            image_pixels=sum(im.pixels for im in images) if images else 0,
            prompt_tokens_planned=prompt.input_tokens_target,
            max_tokens=prompt.max_tokens,
            usage_requested=self._include_usage,
        )

    def _new_spec(
        self, i: int, path: str, body: bytes, warmup: bool, t_sched_ns: int | None, **kind: Any
    ) -> RequestSpec:
        """What every request's spec carries (its JSON body's bytes, headers and sent id, when it
        is scheduled), with the fields its kind sets (a whole-body API's, or a generation's)."""
        headers, sent_id = self._request_headers(i)
        return RequestSpec(
            index=i,
            path=path,
            body=body,
            headers=headers,
            sent_request_id=sent_id,
            warmup=warmup,
            t_sched_ns=t_sched_ns,
            **kind,
        )

    # ---- one request ------------------------------------------------------------------------

    def _completed(
        self, rec: RequestRecord, output: RunOutput, background: bool = False
    ) -> Coroutine[Any, Any, None] | None:
        """A finished request: its body read and record prepared; finished at once when it has
        nothing to grade (None: no coroutine per request, issue 42), else the grading to await:
        journaled at once when its answer must wait for a grader (a user's function, a JSON
        Schema: up to --grader-timeout-s), then graded, then _finish. A run stopped meanwhile
        finishes it without a verdict (_finish_ungraded).
        background: grade it in a task of its own (the probe: the load must not wait for it)."""
        if not rec.stream:
            read_body(rec, self.cfg.api)
        item = self._items.pop(rec.index, None)
        self._prepare(rec)
        if item is None:
            self._finish(rec, output)
            return None
        return self._grade(rec, item, output, background)

    async def _grade(
        self, rec: RequestRecord, item: tuple[str, dict[str, Any] | None], output: RunOutput, background: bool
    ) -> None:
        grading = self.cfg.judge.grading
        placeholder = grading.pending(rec, *item)
        if placeholder is not None:
            rec.grade = placeholder
            output.journal_pending(rec)
            self._grading[rec.index] = rec
            if background:
                task = asyncio.create_task(self._graded(rec, item, output, pending=True))
                self._background.add(task)
                task.add_done_callback(self._background.discard)
                return
        await self._graded(rec, item, output, pending=placeholder is not None)

    async def _graded(
        self, rec: RequestRecord, item: tuple[str, dict[str, Any] | None], output: RunOutput, pending: bool
    ) -> None:
        rec.grade = await self.cfg.judge.grading.grade(rec, *item)
        if pending and self._grading.pop(rec.index, None) is None:
            return  # the run was stopped meanwhile: _finish_ungraded counted it
        self._finish(rec, output)

    def _finish_ungraded(self, output: RunOutput) -> None:
        """The run stopped while answers were with their graders: each such request (journaled
        already) is counted, its verdict "stopped" (docs/grading.md)."""
        waiting, self._grading = self._grading, {}
        for rec in waiting.values():
            assert rec.grade is not None
            g = rec.grade
            rec.grade = Grade(g.item, g.grader, None, None, STOPPED_REASON, None, "grader_stopped")
            self._finish(rec, output, GRADING_STOPPED)

    def _prepare(self, rec: RequestRecord) -> None:
        """What a record gets before it is journaled: redaction, the session's tags, token counts."""
        rec.error_detail = self._redact(rec.error_detail)
        if self.on_record is not None:
            self.on_record(rec)
        if self.cfg.tokenizer is not None and "completion_tokens" not in rec.usage:
            rec.tokenizer_tokens = self.cfg.tokenizer.count(rec.text + rec.reasoning_text)
        if self._redactor and self.cfg.judge.keep_text:
            # What the server said is written as server text: an echoed key is redacted in the
            # journal's answer_text and reasoning_text (--keep-text), the pending line's included.
            rec.text, rec.reasoning_text = self._redactor(rec.text), self._redactor(rec.reasoning_text)

    def _finish(self, rec: RequestRecord, output: RunOutput, grading: str = GRADING_DONE) -> None:
        """One finished request: O(1) whatever the run's length (the work per token aside)."""
        if self._redactor and rec.grade is not None:
            # A grade's words quote the server's text: an echoed key is redacted there too.
            g = rec.grade
            red = self._redactor.optional
            rec.grade = dataclasses.replace(g, reason=red(g.reason), extracted=red(g.extracted), error=red(g.error))
        self._counted(rec, output.add(rec, grading))

    def _finish_batch(self, records: list[RequestRecord], output: RunOutput) -> None:
        """_finish() of each record (none graded), a stage at a time over the batch: prepared,
        added to the results (RunOutput.add_batch), counted."""
        for rec in records:
            if not rec.stream:
                read_body(rec, self.cfg.api)
        for rec in records:
            self._prepare(rec)
        for rec, m in zip(records, output.add_batch(records), strict=True):
            self._counted(rec, m)

    def _counted(self, rec: RequestRecord, m: RequestMetrics) -> None:
        """A request added to the results: its answer let go, the prompt's calibration, the live
        counts and the run's stops (the error rate, saturation)."""
        rec.text = rec.reasoning_text = ""  # judged and counted: do not hold every answer in memory
        self.finished += 1
        reported = rec.usage.get("prompt_tokens")
        planned = self._planned.pop(rec.index, None)
        if reported and planned and not rec.images:  # image tokens are not the text's: no calibration
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
            if self.saturation is not None and not self._stop and rec.t_done_ns is not None:
                why = self.saturation.observe(
                    rec.t_sched_ns if rec.t_sched_ns is not None else rec.t_send_ns,
                    rec.t_done_ns,
                    m.ttft_s,
                    m.schedule_lag_s,
                )
                if why is not None:
                    self.request_stop(f"past saturation: {why}")
            limit = self.cfg.max_error_rate
            if limit is not None and measured >= 10 and self._errors / measured > limit:
                self.request_stop(
                    f"error rate {self._errors / measured:.1%} exceeded --max-error-rate "
                    f"{limit:.1%} after {measured} requests"
                )

    async def _first_request(self, model: str, output: RunOutput) -> None:
        """Sends the share's probe (request 0 of a single process) alone, to fail fast on a wrong
        key, path or model, and to learn whether the server accepts the usage request (retried
        once without it)."""
        probe = self.share.probe_index
        warmup = self.share.is_warmup(probe)
        rec = await self.transport.send(self._spec(probe, model, warmup))
        if (
            self._include_usage
            and rec.status is not None
            and request_formats.rejects_usage_request(rec.status, rec.error_detail or "")
        ):
            self._include_usage = False
            self._usage_note = "the server rejected stream_options.include_usage; retried without it"
            rec = await self.transport.send(self._spec(probe, model, warmup))
        if rec.status in (401, 403):
            raise EndpointError(
                f"the endpoint refused the API key (HTTP {rec.status}); set --api-key-env "
                "to the variable that holds a valid key"
            )
        if rec.status == 404:
            raise EndpointError(
                self._redactor(
                    f"{request_formats.describe_error(404, rec.error_detail or '', self._redactor)} for "
                    f"{self.cfg.base_url}{self._spec(probe, model, warmup).path}: wrong --base-url or "
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
        if (grading := self._completed(rec, output, background=True)) is not None:
            await grading

    # ---- load -------------------------------------------------------------------------------

    async def send_one(
        self, i: int, model: str, output: RunOutput, warmup: bool, t_sched_ns: int | None = None
    ) -> None:
        """Sends request i now (t_sched_ns: its scheduled time, rate mode) and finishes it: the
        step of every send loop, and of the session driver."""
        self._in_flight += 1
        try:
            rec = await self.transport.send(self._spec(i, model, warmup, t_sched_ns))
        finally:
            self._in_flight -= 1
        if (grading := self._completed(rec, output)) is not None:
            await grading

    def _taker(self) -> Callable[[], int | None]:
        """The concurrency mode's next index of the share, or None: nothing more to send (the share
        is sent, the run's duration is over, or it was stopped; once None, always None)."""
        share, plan = self.share, self.cfg.plan
        indices = share.indices()
        # Duration is measurement time: it starts with the first measured request. (A scale
        # driver stops every worker at the run's end; a worker's own deadline is a backstop.)
        deadline: int | None = None

        def take() -> int | None:
            nonlocal deadline
            if self._stop:
                return None
            i = next(indices, None)
            now = _now_ns()
            if i is None or (deadline is not None and now >= deadline):
                return None
            if self.t_measure_start_ns is None and not share.is_warmup(i):
                self.t_measure_start_ns = now
                if plan.duration_s:
                    deadline = now + int(plan.duration_s * 1e9)
            return i

        return take

    async def _concurrency_loop(self, model: str, output: RunOutput) -> None:
        """The share's slots each send the next index of the share as soon as their last finished."""
        if await self._start(self.transport.schedule_lead_ns) is None:
            return
        if self._batches_fit():
            await self._batch_concurrency_loop(model, output)
            return
        share, take = self.share, self._taker()

        async def slot() -> None:
            while (i := take()) is not None:
                await self.send_one(i, model, output, share.is_warmup(i))

        await asyncio.gather(*(slot() for _ in range(share.slots or 1)))

    def _batches_fit(self) -> bool:
        """Whether the concurrency mode may run in batches (_batch_concurrency_loop): a transport
        that hands finished requests back in batches (the native engine's), nothing to wait for
        between a request's end and the next send (no answer to grade), and a request's step as
        this class has it: the batches do not pass through send_one() or _finish(), so a runner
        that changes them (pytps rank's turns, GatedRunner) keeps the slots' loop."""
        cls = type(self)
        own_steps = all(getattr(cls, name) is getattr(Runner, name) for name in _STEPS)
        return own_steps and hasattr(self.transport, "start_batches") and not self.cfg.judge.grading.active

    async def _batch_concurrency_loop(self, model: str, output: RunOutput) -> None:
        """The concurrency mode without a coroutine per slot: each batch of finished requests (one
        wake-up of the loop) is finished request by request, then as many next requests are built
        and sent in one hand-over. The same requests, sent when the same slots free up, and each
        finished by the same code as in the slots' loop; each stage runs over the whole batch,
        which keeps its code in the CPU's caches (issue 42: ~20% of a 1-token request's client
        CPU). A stage's exception ends the load as it would a slot's."""
        transport = cast(BatchTransport, self.transport)  # _batches_fit
        share, take = self.share, self._taker()
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def send(free: int) -> None:
            specs = []
            for _ in range(free):
                if (i := take()) is None:
                    break
                specs.append(self._spec(i, model, share.is_warmup(i)))
            self._in_flight += len(specs)
            try:
                transport.submit_batch(specs)
            except BaseException:
                self._in_flight -= len(specs)
                raise
            if self._in_flight == 0 and not done.done():
                done.set_result(None)

        def on_batch(records: list[RequestRecord]) -> None:
            if done.done():
                return  # cancelled or failed: what still comes in is dropped, as the slots' loop drops it
            try:
                self._in_flight -= len(records)
                self._finish_batch(records, output)
                send(len(records))
            except Exception as exc:  # ends the load, as a slot's exception does
                done.set_exception(exc)

        transport.start_batches(on_batch)
        send(share.slots or 1)
        await done

    async def _rate_loop(self, model: str, output: RunOutput) -> None:
        """Sends the share's arrivals on the absolute schedule t0 + offset_i, t0 from the start
        barrier (after the probe)."""
        # A transport that paces sends itself (the native engine's timers) gets each request a
        # little ahead of its time and holds it until t_sched; asyncio timers are only ms-exact.
        lead_ns = self.transport.schedule_lead_ns
        t0 = await self._start(lead_ns)
        if t0 is None:
            return
        share, plan = self.share, self.cfg.plan
        limit = asyncio.Semaphore(share.slots) if share.slots else None
        tasks: set[asyncio.Task[None]] = set()

        async def one(i: int, t_sched: int) -> None:
            if limit is not None:
                await limit.acquire()
            try:
                await self.send_one(i, model, output, share.is_warmup(i), t_sched)
            finally:
                if limit is not None:
                    limit.release()

        deadline = t0 + int(plan.duration_s * 1e9) if plan.duration_s else None
        if self.t_measure_start_ns is None:
            self.t_measure_start_ns = t0
        for i, offset in share.scheduled(plan.arrivals_ns(self.cfg.seed)):
            t_sched = t0 + int(offset)
            if self._stop or (deadline is not None and t_sched >= deadline):
                break
            await sleep_until_ns(t_sched - lead_ns)
            if self.stopping:  # decided while this slept (the error rate, another thread's request_stop)
                break
            if self.saturation is not None and not share.is_warmup(i):
                self.saturation.arrived(t_sched)  # the watch counts the arrivals the schedule really made
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
        own_transport = self._given_transport is None
        self._transport = self._given_transport or make_transport(cfg)
        interrupted = False
        try:
            model = await self._resolve_model()
            out_dir = cfg.out_dir or default_out_dir(model)
            # Read before the folder is made: a Ctrl-C while it is read leaves no folder, never one
            # without its results.json (no await stands between the two below).
            host = await asyncio.to_thread(host_facts, cfg.base_url)
            output = self._output = self.output_type(
                out_dir,
                slots=cfg.plan.max_in_flight,
                rate_mode=cfg.plan.mode == "rate",
                judge=cfg.judge,
                keep_records=self._keep_records,
            )
            # Its lines reach the OS once per turn of this loop, not once per request (see there).
            output.flush_each_turn(asyncio.get_running_loop().call_soon)
            metadata = run_metadata(cfg, model, self.transport)
            metadata["host"] = host
            metadata["request_id_header"] = (
                {"name": self._id_header, "prefix": self._id_prefix} if self._id_header is not None else None
            )
            if cfg.server_metrics is not None:
                metadata["server_metrics"] = cfg.server_metrics.describe(self._redactor)
            write_results(out_dir, metadata, None)
            total = (cfg.plan.requests + cfg.plan.warmup) if cfg.plan.requests is not None else None
            scraper = None
            if cfg.server_metrics is not None:
                # A process of its own, with its own HTTP client; its first scrapes just before the
                # first request, its last just after the last (docs/server-metrics.md).
                from pytps.runner.scrape_process import ScraperProcess

                scraper = ScraperProcess.for_run(
                    cfg.server_metrics, out_dir, insecure=cfg.insecure, redactor=self._redactor
                )
                await asyncio.to_thread(scraper.start)
            self.progress.start(total, cfg.plan.duration_s)
            loop_cpu0 = time.thread_time()
            t_start = _now_ns()
            ticker = asyncio.create_task(self._report_progress(t_start))
            try:
                first = self._first_request(model, output)
                if _is_sessions(cfg.workload):
                    from pytps.runner.sessions import run_sessions

                    await run_sessions(self, model, output, lambda: first)
                else:
                    await first
                    if cfg.plan.mode == "rate":
                        await self._rate_loop(model, output)
                    else:
                        await self._concurrency_loop(model, output)
                if self._background:
                    await asyncio.gather(*self._background)
            except asyncio.CancelledError:
                interrupted = True
            finally:
                output.flush()  # whatever the way out: what was measured is in the files now
                for task in list(self._background):  # stopped: their requests finish as "stopped"
                    task.cancel()
                ticker.cancel()
                self.progress.stop()
                loop_cpu_s = time.thread_time() - loop_cpu0
                wall_s = (_now_ns() - t_start) / 1e9
                if scraper is not None:
                    scraper.stop()  # the last scrapes, just after the last request finished
        finally:
            cfg.judge.grading.close()  # its worker processes: every grading is over
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
        # Asked after the timing ended, so it never shares the endpoint with a measured request; and
        # only of a server that answered a request well (one that answered none is not waited on again).
        # Not after a Ctrl-C: the user asked to stop. And a Ctrl-C while asking ends the asking, not
        # the run: what was measured is still written below (it once left results.json unfinished).
        metadata["server"] = {"server_header": None, "version": None, "props": None}
        if self._measured > self._errors and not interrupted:
            try:
                metadata["server"] = await server_facts(
                    cfg.base_url, verify=cfg.ca_bundle or not cfg.insecure, timeout_s=min(cfg.connect_timeout_s, 2.0)
                )
            except asyncio.CancelledError:
                interrupted = True
                metadata["interrupted"] = True
        metadata["stopped_reason"] = self.stopped_reason
        metadata["saturation"] = None
        if self.saturation is not None:
            why = self.saturation.finish()
            if self.stopped_reason and self.stopped_reason.startswith("past saturation: "):
                why = self.stopped_reason.removeprefix("past saturation: ")
            metadata["saturation"] = {
                "saturated": why is not None,
                "reason": why,
                "stopped_early": why is not None and self._stop,
            }
        self._finish_ungraded(output)
        result = output.finish(metadata, self.envelope)
        result.interrupted = interrupted
        result.stopped_reason = self.stopped_reason
        if cfg.store_as is not None:
            from pytps.store.run_entry import record_in_store

            # After the folder is whole: a store that fails costs one warning, never the run.
            record_in_store(cfg.store, {"metadata": metadata, "summary": result.summary}, out_dir, cfg.store_as)
        return result
