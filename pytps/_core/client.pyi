"""Stubs of what csrc/bindings/register_client.cpp adds to pytps._core."""

from collections.abc import Sequence
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from pytps._core.http import HttpStreamRecorder

TLS_AVAILABLE: bool
"""Whether the native client was built with TLS (OpenSSL found at build time): ClientEngine(tls=True)."""
TLS_BUNDLED: bool
"""Whether that OpenSSL is linked into the module (the binary wheel): its default CA paths are
those of the machine that built it, so pytps passes the system's (ssl.get_default_verify_paths())."""

def tls_library_version() -> str | None:
    """The OpenSSL version the native client's TLS uses (e.g. "OpenSSL 3.0.19 27 Jan 2026");
    None when TLS_AVAILABLE is False."""

class ClientResult:
    """One finished request of a ClientEngine (from ClientEngine.collect())."""

    id: Final[int]
    """The id given to submit()."""
    def readout(self, request_id_headers: tuple[str, ...]) -> tuple[Any, ...]:
        """Every read-out at once, in this order: t_done_ns, t_send_ns, t_write_start_ns, retries,
        connection_id, connect_ns, tls_ns, error, error_detail, http.readout(request_id_headers)."""
    t_send_ns: Final[int | None]
    """Stamp taken right before the write that completed the request; None if never sent."""
    t_write_start_ns: Final[int | None]
    """When the request's first write began (the send phase runs from here to t_send_ns)."""
    t_done_ns: Final[int]
    """When the request finished: the read that ended the response, or the error."""
    connect_ns: Final[int | None]
    """How long a new connection took to connect; None on a reused connection."""
    tls_ns: Final[int | None]
    """How long a new connection's TLS handshake took; None on a reused or plain connection."""
    connection_id: Final[int | None]
    """The engine's id of the connection the request was (last) sent on, stable for the
    engine's life (requests on one kept-alive connection share it); None if none was opened."""
    error: Final[str | None]
    """The transport's own error class: "connect", "timeout", "no_response" (the connection
    ended before any byte of a response) or "client" (stopped, too large), else None. HTTP
    statuses, framing errors, truncation and in-stream errors are read from http."""
    error_detail: Final[str]
    """What went wrong, for a transport error ("" otherwise)."""
    retries: Final[int]
    """Times the request was sent again, on a new connection, because its kept-alive one had
    been closed before any byte of a response (0 or 1); t_send_ns is the last send's."""
    recv_times_ns: Final[npt.NDArray[np.int64]]
    """kernel_timestamps only: the engine's stamp of each read that carried a kernel stamp (the
    recorder's event times are among these); empty otherwise."""
    recv_kernel_times_ns: Final[npt.NDArray[np.int64]]
    """kernel_timestamps only: the kernel's software receive stamp of the same reads, on
    CLOCK_MONOTONIC (for TCP, that of the last segment the read took)."""
    http: Final[HttpStreamRecorder]
    """The response's HttpStreamRecorder, closed at t_done_ns (a view that keeps this result alive)."""

def measure_read_floor(
    connections: int = 32, gap_ns: int = 1_000_000, duration_ns: int = 1_000_000_000, message_bytes: int = 200
) -> dict[str, Any]:
    """The floor under any streaming client here: a thread writes message_bytes to each of
    `connections` loopback TCP connections every gap_ns (spread evenly) for duration_ns, and the
    caller reads them with the barest epoll + recv loop (the GIL released). Keys: messages,
    reads, wakeups, reader_cpu_ns, duration_ns, reader_cpu_ns_per_message. ValueError for
    arguments < 1; RuntimeError naming a failed socket call."""

class ClientEngine:
    """A native HTTP/1.1 client on its own thread (epoll, keep-alive pool, TCP_NODELAY, no GIL).

    submit() pre-rendered requests; add_reader(notify_fd) and collect() the finished ones. Every
    recv is stamped with CLOCK_MONOTONIC right after it returns and fed to an HttpStreamRecorder;
    t_send is stamped right before the write that completes the request. Timeouts (ns): connect;
    first byte and idle (no data since the send / the last read); total (from the send, 0: none).
    A response may read at most max_response_bytes (then error "client"). A reused keep-alive
    connection that the server had closed before any byte of the response is retried once on a
    new connection.

    tls=True (needs TLS_AVAILABLE) speaks TLS >= 1.2 with OpenSSL over memory BIOs: the raw socket
    read is stamped and the plaintext decrypted from it carries that stamp. The handshake counts
    against connect_timeout_ns (its duration: ClientResult.tls_ns); a failed certificate or
    handshake is error "connect".
    """

    def __init__(
        self,
        host: str,
        port: int,
        max_connections: int = 100,
        connect_timeout_ns: int = 10_000_000_000,
        idle_timeout_ns: int = 120_000_000_000,
        total_timeout_ns: int = 0,
        first_byte_timeout_ns: int = 0,
        max_response_bytes: int = 268435456,
        spin_ns: int = 0,
        kernel_timestamps: bool = False,
        tls: bool = False,
        server_name: str | None = None,
        ca_file: str | None = None,
        ca_path: str | None = None,
        verify: bool = True,
        addresses: Sequence[str] | None = None,
        test_read_delay_ns: int = 0,
    ) -> None:
        """ValueError for a port outside 1..65535, max_connections < 1, negative timeouts or a zero
        connect/idle timeout, an unreadable ca_file, tls=True without TLS_AVAILABLE, or
        server_name/ca_file/ca_path without tls. first_byte_timeout_ns 0: the idle timeout. spin_ns:
        busy-wait window before scheduled sends (0: sleep only). kernel_timestamps: also keep the
        kernel's software receive stamp of each read (SO_TIMESTAMPING, on CLOCK_MONOTONIC) in
        ClientResult.recv_kernel_times_ns. A host that does not resolve makes every request fail
        with error "connect". TLS: server_name (default: host) is sent as SNI (unless an IP
        address) and checked against the certificate; ca_file is a PEM CA bundle and ca_path a
        directory of hashed CA certificates, trusted instead of the system's; verify=False checks
        neither. Every address the host resolves to is tried
        in getaddrinfo's order until one connects (new connections then start at it); addresses:
        IP literals to use instead of resolving host (ValueError when empty). test_read_delay_ns: a
        test hook (pytps calibrate's slowed client): busy-wait this long after each read before
        stamping it."""
    def submit(
        self, id: int, request_bytes: bytes | bytearray | memoryview, dialect: str, t_sched_ns: int | None = None
    ) -> None:
        """Queue one rendered HTTP/1.1 request whose response is recorded in `dialect` (one of
        DIALECTS). t_sched_ns: send at that CLOCK_MONOTONIC instant from the engine's own timer
        (absolute schedule), else at once. ValueError for an unknown dialect, empty bytes, or
        after stop()."""
    def submit_many(self, batch: Sequence[tuple[int, bytes | bytearray | memoryview, str, int | None]]) -> None:
        """Queue several (id, request_bytes, dialect, t_sched_ns or None) at once: all are checked
        first, then handed over under one lock with one wake-up of the engine thread. ValueError
        naming the bad item, or after stop()."""
    notify_fd: Final[int]
    """An eventfd, readable while collect() has results."""
    def collect(self) -> list[ClientResult]:
        """Every finished request, in finishing order; resets notify_fd."""
    def stop(self) -> None:
        """End the engine's thread (joins it, without the GIL). Unfinished requests finish with
        error "client"; collect() returns them. Idempotent; also done on destruction."""
    connections_opened: Final[int]
    """TCP connections opened so far."""
    spin_window_ns: Final[int]
    """The current busy-wait window before scheduled sends (adapts; <= spin_ns)."""
    thread_cpu_ns: Final[int]
    """CPU time the engine thread used, known once stop() returned (0 before)."""
    wakeups: Final[int]
    """Returns of the engine thread from its epoll wait so far."""
    reads: Final[int]
    """Socket reads that returned data so far (the thread is named "pytps-engine")."""
