"""The native transport: HTTP/1.1 (http://, or https:// when the build has TLS) through a C++
engine thread (pytps._core.ClientEngine).

The engine owns the sockets (epoll, keep-alive pool, TCP_NODELAY), stamps every read right
after recv() returns and parses it in C++ without the GIL, so no Python runs per read: the
stamps do not wait for the event loop, however busy it is. Python renders each request (as the
asyncio transport does), submits it, and is woken once per batch of finished requests through
an eventfd watched by loop.add_reader.

Timeouts are the engine's: connect, idle (no data since the send or the last read; the same
limit for the first byte) and total (from the send). Rate mode: the runner calls send()
schedule_lead_ns ahead of each request's t_sched_ns, and the engine holds it until then on its
own timers, so sends are paced by the engine, not by event-loop sleeps (about 1 ms coarse).

Addresses: the host is resolved here, once (http1.resolve, as the asyncio transport does), and
the engine tries each address in that order until one connects. A request whose kept-alive
connection the server had closed before any byte of a response is sent again by the engine, on
a new connection (ClientResult.retries).

https://: the engine speaks TLS with OpenSSL over memory BIOs (_core.TLS_AVAILABLE): the raw
socket read is stamped and the plaintext decrypted from it carries that stamp, so decryption
is not counted as network time. The handshake's duration is the record's phases_ns["tls"].
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from typing import Any

import numpy as np

from pytps._native import _core
from pytps.measure.records import MAX_RESPONSE_BYTES, RequestRecord
from pytps.transport.base import REQUEST_ID_HEADERS, RequestSpec, Timeouts
from pytps.transport.http1 import Http1Target, fill_from_response, resolve
from pytps.transport.phases import record_send_phases

NO_TLS = (
    "this build of pytps has no TLS in its native core (OpenSSL was not found when it was compiled): "
    "install libssl-dev (apt-get install libssl-dev) and rebuild (pip install -e .), or use "
    "--transport httpx for https://"
)

_now_ns = _core.now_ns


def system_ca_paths() -> tuple[str | None, str | None]:
    """(cafile, capath) of this machine's CA store, as Python's ssl module finds it (SSL_CERT_FILE
    and SSL_CERT_DIR included), each None when it does not exist. For a build whose OpenSSL is
    linked in (_core.TLS_BUNDLED, the binary wheel): that OpenSSL's own default paths are those of
    the machine that built it (Debian's /usr/lib/ssl), which another distribution may not have."""
    import os
    import ssl

    paths = ssl.get_default_verify_paths()
    cafile = paths.cafile if paths.cafile and os.path.isfile(paths.cafile) else None
    capath = paths.capath if paths.capath and os.path.isdir(paths.capath) else None
    return cafile, capath


def kernel_times_for(event_times_ns: np.ndarray, recv_ns: np.ndarray, recv_kernel_ns: np.ndarray) -> np.ndarray:
    """The kernel stamp of the read behind each event: every event time is the engine's stamp of
    the read that completed it, so it is found in recv_ns. Empty if any read had no kernel stamp
    (then no event is given a stamp that is not its own)."""
    if len(event_times_ns) == 0 or len(recv_ns) == 0:
        return np.zeros(0, dtype=np.int64)
    idx = np.searchsorted(recv_ns, event_times_ns)
    idx_ok = np.minimum(idx, len(recv_ns) - 1)
    if not np.array_equal(recv_ns[idx_ok], event_times_ns):
        return np.zeros(0, dtype=np.int64)
    return np.asarray(recv_kernel_ns[idx_ok], dtype=np.int64)


class NativeTransport:
    """Sends RequestSpecs through a native ClientEngine; returns RequestRecords."""

    name = "native"
    # How far ahead of t_sched the runner hands over a scheduled request: well past the event
    # loop's timer slack and a busy turn of the loop (finishing a batch of requests), so the
    # engine, not the loop, decides the send instant. 3 ms left a few sends late by 0.5-2 ms.
    schedule_lead_ns = 10_000_000

    def __init__(
        self,
        base_url: str,
        *,
        timeouts: Timeouts | None = None,
        max_connections: int = 100,
        kernel_timestamps: bool = False,
        spin_ns: int = 0,
        ca_file: str | None = None,
        verify: bool = True,
        test_read_delay_ns: int = 0,
    ) -> None:
        """https:// needs _core.TLS_AVAILABLE. ca_file: a PEM CA bundle trusted instead of the
        system's; verify=False checks neither the certificate nor the host name.
        test_read_delay_ns: a test hook (pytps calibrate's slowed client), each read stamped that
        much later."""
        self._target = Http1Target(base_url, self.name, tls_ok=True)
        if self._target.tls and not _core.TLS_AVAILABLE:
            raise ValueError(NO_TLS)
        self.base_url = self._target.base_url
        timeouts = timeouts or Timeouts()
        self.timeouts = timeouts
        tls = self._target.tls
        # The TLS library that measured (results metadata); None over plain http://.
        self.tls_library: str | None = _core.tls_library_version() if tls else None
        cafile, capath = system_ca_paths() if tls and verify and not ca_file and _core.TLS_BUNDLED else (None, None)
        try:
            addresses: list[str] | None = resolve(self._target.host, self._target.port)
        except OSError:
            addresses = None  # the engine resolves it again and fails each request, naming why
        self._engine = _core.ClientEngine(
            self._target.host,
            self._target.port,
            max_connections=max_connections,
            connect_timeout_ns=int(timeouts.connect_s * 1e9),
            idle_timeout_ns=int(timeouts.read_s * 1e9),
            total_timeout_ns=int(timeouts.total_s * 1e9) if timeouts.total_s else 0,
            max_response_bytes=MAX_RESPONSE_BYTES,
            spin_ns=spin_ns,
            kernel_timestamps=kernel_timestamps,
            tls=tls,
            server_name=self._target.host if tls else None,
            ca_file=str(ca_file) if tls and ca_file else cafile,
            ca_path=capath,
            verify=verify,
            addresses=addresses,
            test_read_delay_ns=test_read_delay_ns,
        )
        self.kernel_timestamps = kernel_timestamps
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[Any]] = {}
        self._pending: list[tuple[int, bytes, str, int | None]] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        # Batch mode (start_batches): the records of requests sent by submit_batch, by id, and
        # whom their batches go to.
        self._batch_records: dict[int, RequestRecord] = {}
        self._on_batch: Callable[[list[RequestRecord]], None] | None = None

    def _watch(self) -> None:
        loop = asyncio.get_running_loop()
        if self._loop is loop:
            return
        if self._loop is not None:
            raise RuntimeError("a NativeTransport serves one event loop; make a new one for another loop")
        self._loop = loop
        loop.add_reader(self._engine.notify_fd, self._on_notify)

    def _queue(self, rid: int, item: tuple[int, bytes, str, int | None]) -> None:
        """Requests sent in one turn of the event loop (the workers a batch of finished requests
        freed, or a burst of the rate schedule) go to the engine in one submit_many: one lock and
        one wake-up of its thread instead of one per request. The send stamp is the engine's, at
        the write, so this costs the measurement nothing."""
        self._pending.append(item)
        if len(self._pending) == 1:
            assert self._loop is not None
            self._loop.call_soon(self._flush)

    def _flush(self) -> None:
        batch, self._pending = self._pending, []
        try:
            self._engine.submit_many(batch)
        except Exception as exc:
            for rid, *_ in batch:
                fut = self._waiting.pop(rid, None)
                if fut is not None and not fut.done():
                    fut.set_exception(exc)

    def _on_notify(self) -> None:
        batch: list[RequestRecord] = []
        for result in self._engine.collect():
            fut = self._waiting.pop(result.id, None)
            if fut is not None:
                if not fut.done():
                    fut.set_result(result)
                continue
            rec = self._batch_records.pop(result.id, None)
            if rec is not None:
                self._finished(rec, result)
                batch.append(rec)
        if batch and self._on_batch is not None:
            self._on_batch(batch)

    # ---- batch mode: a run's requests without a coroutine or a future each (issue 42) ----------

    def start_batches(self, on_batch: Callable[[list[RequestRecord]], None]) -> None:
        """From now on the records of requests sent by submit_batch() are handed to on_batch, in
        one call per wake-up of the event loop (every request that finished by then, each record
        complete as send() would return it), on the loop's thread. A run's loop then does each
        stage of a request for the whole batch at once: reading the records, finishing them,
        building the next requests. Python runs the same code per request either way, but a stage
        run over a batch keeps its code and data in the CPU's caches (~20% of a short request's
        client CPU, docs/design.md). Call from the running loop."""
        self._watch()
        self._on_batch = on_batch

    def submit_batch(self, specs: list[RequestSpec]) -> None:
        """Sends these requests now (each spec's t_sched_ns as send() takes it); their records come
        to the start_batches() callback. ValueError (the engine's) sends none of them."""
        items: list[tuple[int, bytes, str, int | None]] = []
        records: list[tuple[int, RequestRecord]] = []
        for spec in specs:
            rec, item = self._handed(spec)
            items.append(item)
            records.append((item[0], rec))
        if items:
            self._batch_records.update(records)
            try:
                self._engine.submit_many(items)
            except Exception:
                for rid, _ in records:
                    self._batch_records.pop(rid, None)
                raise

    def _handed(self, spec: RequestSpec) -> tuple[RequestRecord, tuple[int, bytes, str, int | None]]:
        """spec's record, stamped as handed over now, and its item for submit_many (its id first)."""
        rec = spec.new_record(self.name)
        payload = self._target.render(spec)
        rid = next(self._ids)
        rec.t_submit_ns = _now_ns()
        return rec, (rid, payload, spec.dialect, spec.t_sched_ns)

    async def send(self, spec: RequestSpec) -> RequestRecord:
        self._watch()
        assert self._loop is not None
        rec, item = self._handed(spec)
        rid = item[0]
        fut = self._loop.create_future()
        self._waiting[rid] = fut
        try:
            # In rate mode the runner calls send() ahead of t_sched: the engine holds it till then.
            self._queue(rid, item)
            result = await fut
        finally:
            # Cancelled: the engine finishes the request on its own; its result is dropped.
            self._waiting.pop(rid, None)
        self._finished(rec, result)
        return rec

    def _finished(self, rec: RequestRecord, result: Any) -> None:
        """rec completed from the engine's ClientResult: times, connection, phases, the response,
        all read in one native call (ClientResult.readout: ~20 calls before, issue 42)."""
        (
            rec.t_done_ns, t_written_ns, t_write_start_ns, rec.retries, rec.connection_id, connect_ns, tls_ns, error,
            error_detail, http,
        ) = result.readout(REQUEST_ID_HEADERS)  # fmt: skip
        if t_written_ns is None:  # never written: the hand-over's time stands in
            assert rec.t_submit_ns is not None, "set when the request was handed to the engine"
            rec.t_send_ns = rec.t_submit_ns
        else:
            rec.t_send_ns = t_written_ns
        if connect_ns is not None:
            rec.phases_ns["connect"] = connect_ns
        if tls_ns is not None:
            rec.phases_ns["tls"] = tls_ns
        # The response's header() only for what the read-out leaves out (a redirect's Location).
        header = _header_of(result)
        if error == "timeout":
            fill_from_response(rec, http, header, error_detail)
        elif error is not None:
            fill_from_response(rec, http, header)
            rec.error, rec.error_detail = error, error_detail
        else:
            fill_from_response(rec, http, header)
        record_send_phases(rec, t_write_start_ns, t_written_ns)
        if self.kernel_timestamps:
            rec.output_kernel_times_ns = kernel_times_for(
                rec.output_times_ns, result.recv_times_ns, result.recv_kernel_times_ns
            )

    @property
    def thread_cpu_s(self) -> float:
        """CPU time of the engine thread (known after aclose()): the client's work off the loop."""
        return self._engine.thread_cpu_ns / 1e9

    async def aclose(self) -> None:
        if self._loop is not None and not self._loop.is_closed():
            self._loop.remove_reader(self._engine.notify_fd)
        self._engine.stop()  # joins the engine's thread (without the GIL); in-flight requests end
        self._on_batch = None  # a batch run's requests still in flight were abandoned: dropped
        self._batch_records.clear()
        for result in self._engine.collect():
            fut = self._waiting.pop(result.id, None)
            if fut is not None and not fut.done():
                fut.set_result(result)


def _header_of(result: Any) -> Callable[[str], str | None]:
    """The response's header(name) of an engine's result, its recorder reached only when a header
    is asked for (a redirect's Location: the read-out holds the rest)."""
    return lambda name: result.http.header(name)
