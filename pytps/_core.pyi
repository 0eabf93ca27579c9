"""Hand-written stubs of the compiled module pytps._core."""

from collections.abc import Sequence
from typing import Any, SupportsIndex

import numpy as np
import numpy.typing as npt

__version__: str

# ---- clock ------------------------------------------------------------------

def now_ns() -> int:
    """CLOCK_MONOTONIC in integer nanoseconds (the clock of time.monotonic_ns() on Linux)."""

def clock_info(calls: int = 200000) -> dict[str, Any]:
    """{'source', 'resolution_ns', 'call_cost_ns', 'min_step_ns'} of the monotonic clock."""

# ---- event loop -------------------------------------------------------------

EPOLL_WAIT: str
"""How the native event loops sleep: 'epoll_pwait2', or 'ppoll' (glibc or kernel without it)."""

def _event_loop_probe(wait_ns: int, n: int, spin_ns: int = 60000) -> dict[str, Any]:
    """Test hook: {'wait', 'deadlines', 'sleeps', 'polls', 'spins', 'spin_window_ns', 'late_ns'}
    of a fresh event loop that waited n times for a deadline wait_ns ahead."""

# ---- sse --------------------------------------------------------------------

class SSEEvent:
    """One dispatched Server-Sent Event; owned strings."""

    def __init__(self, event: str = "message", data: str = "", id: str = "", retry: int | None = None) -> None: ...
    @property
    def event(self) -> str:
        """The event type: 'message' unless an event: field set it."""
    @property
    def data(self) -> str:
        """The data lines joined with '\\n'."""
    @property
    def id(self) -> str:
        """The last event ID in effect at dispatch ('' if none); it persists across events."""
    @property
    def retry(self) -> int | None:
        """The reconnection time (ms) in effect at dispatch, or None if never set."""

class SSEParser:
    """Incremental Server-Sent Events parser following the WHATWG event-stream rules."""

    def __init__(self, max_line_bytes: int = 16777216) -> None: ...
    def feed(self, data: bytes | bytearray | memoryview) -> list[SSEEvent]:
        """Parse a chunk split anywhere; returns the events it completed. Raises pytps.ProtocolError
        (with .events holding this call's completed events) when a line or one event's data
        exceeds max_line_bytes; that event is discarded and parsing goes on."""
    def close(self) -> bool:
        """End of stream: True when an incomplete event was discarded. Resets the parser."""
    @property
    def last_event_id(self) -> str: ...
    @property
    def retry(self) -> int | None: ...
    @property
    def max_line_bytes(self) -> int: ...

# ---- recorder ---------------------------------------------------------------

KIND_CONTENT: int  # 0: answer text (delta.content, text deltas)
KIND_REASONING: int  # 1: reasoning/thinking text
KIND_TOOL: int  # 2: tool-call name or argument deltas

DIALECTS: tuple[str, ...]  # ("openai-chat", "openai-completions", "openai-responses", "anthropic", "ollama")

class StreamRecorder:
    """The per-request hot path: frames one response stream and records what each event generated.

    feed(data, t_ns) takes the body bytes of one read (split anywhere) and the CLOCK_MONOTONIC
    ns at which they were read; every event completed by that chunk is stamped with t_ns. No
    Python object is created per event; read-outs are built on demand.

    An event is *output-bearing* when it carries generated text: a non-empty content,
    reasoning or tool-call (name or arguments) delta. A role-only chunk, a usage-only chunk,
    an empty delta, a keep-alive comment or ping is not.
    """

    def __init__(self, dialect: str) -> None:
        """dialect: one of DIALECTS. Unknown names raise ValueError listing the valid ones."""
    def feed(self, data: bytes | bytearray | memoryview, t_ns: int) -> int:
        """Consume one chunk read at t_ns. Returns the number of output-bearing events it completed.
        Raises ValueError after close()."""
    def close(self, t_ns: int) -> None:
        """End of the body at t_ns. Sets end_ns when no terminal marker was seen; records a
        protocol error when the stream ended inside an event. Idempotent."""
    def reset(self) -> None:
        """Forget everything, ready for a new stream of the same dialect."""
    @property
    def dialect(self) -> str: ...
    @property
    def closed(self) -> bool: ...
    @property
    def output_times_ns(self) -> npt.NDArray[np.int64]:
        """Arrival t_ns of each output-bearing event."""
    @property
    def output_kinds(self) -> npt.NDArray[np.uint8]:
        """KIND_* of each output-bearing event (content wins over reasoning over tool when an event has several)."""
    @property
    def output_chars(self) -> npt.NDArray[np.int32]:
        """Unicode code points of generated text in each output-bearing event."""
    @property
    def output_tokens(self) -> npt.NDArray[np.int32]:
        """Tokens in each output-bearing event when the server reports per-chunk usage
        (vLLM continuous_usage_stats: the increase of usage.completion_tokens), else -1."""
    @property
    def first_output_ns(self) -> int | None: ...
    @property
    def first_answer_ns(self) -> int | None:
        """First output-bearing event that is not reasoning (content or tool)."""
    @property
    def last_output_ns(self) -> int | None: ...
    @property
    def end_ns(self) -> int | None:
        """Arrival of the terminal marker ([DONE], message_stop, response.completed/failed/incomplete,
        Ollama done:true), else the t_ns given to close(), else None."""
    @property
    def text(self) -> str:
        """The answer text (content deltas) concatenated."""
    @property
    def reasoning_text(self) -> str: ...
    @property
    def tool_calls(self) -> list[dict[str, Any]]:
        """[{"index", "id", "name", "arguments"}] assembled from tool-call deltas, in index order
        (id is None when the server sent none, as Ollama does)."""
    @property
    def usage(self) -> dict[str, int]:
        """What the server reported, under normalized names (only those reported):
        prompt_tokens, completion_tokens, total_tokens, reasoning_tokens, cached_tokens.
        Anthropic input_tokens/output_tokens/cache_read_input_tokens, Responses input_tokens/
        output_tokens and Ollama prompt_eval_count/eval_count map onto these. Later reports
        overwrite earlier ones (usage is cumulative in every dialect)."""
    @property
    def finish_reason(self) -> str | None:
        """finish_reason / stop_reason / done_reason / the Responses status as the server sent it."""
    @property
    def server_timings(self) -> tuple[str, str] | None:
        """(source, JSON object text) of the server's own timing report, the last the stream
        carried: llama.cpp's `timings`, Ollama's final durations and counts, Groq's `x_groq`,
        Cerebras's `time_info` (source "llama.cpp", "ollama", "groq", "cerebras"); None when
        none came. Read by pytps.server_timings."""
    @property
    def response_id(self) -> str | None: ...
    @property
    def model(self) -> str | None: ...
    @property
    def done(self) -> bool:
        """The terminal marker was seen."""
    @property
    def events(self) -> int:
        """All events framed (SSE events, or NDJSON lines), output-bearing or not."""
    @property
    def output_events(self) -> int: ...
    @property
    def error(self) -> dict[str, Any] | None:
        """The first error: {"kind": "in_stream" | "protocol", "message": str, "event_index": int,
        "payload": str | None}. in_stream: the server sent an error event (its JSON as payload).
        protocol: malformed JSON, an overlong line, or the stream ended inside an event; timing goes on."""
    @property
    def protocol_errors(self) -> int:
        """How many events were malformed."""

# ---- histogram --------------------------------------------------------------

class Histogram:
    """HdrHistogram-style latency histogram over int64 values (typically ns).

    Values in [lowest, highest] fall into log-linear buckets: each power-of-two range is cut into
    >= 10**significant_digits equal steps, so percentiles are reported within a relative error of
    10**-significant_digits (below lowest * 10**significant_digits: within an absolute error
    < lowest). count, min, max, mean and stddev are exact, computed from the recorded values, not
    the buckets. Bucket memory is allocated per octave touched (8 KiB each at 3 digits).
    An empty histogram reports 0 for min, max, value_at_percentile and 0.0 for mean and stddev.
    Thread-safe (each call holds the histogram's lock); picklable; == compares bit for bit.

    Raises ValueError when lowest < 1, highest < 2*lowest, significant_digits is not in 1..5, or
    lowest * 2 * 10**significant_digits reaches 2**62.
    """

    def __init__(self, lowest: int = 1, highest: int = 3_600_000_000_000, significant_digits: int = 3) -> None: ...
    def record(self, value: SupportsIndex, count: int = 1) -> None:
        """Records `count` occurrences of `value`. O(1).

        Raises ValueError if value is outside [lowest, highest] (the message names both) or
        count < 0; TypeError if value is not an integer; OverflowError if the total count would
        pass 2**63-1.
        """
    def record_corrected(self, value: SupportsIndex, expected_interval: int) -> None:
        """Records `value` corrected for coordinated omission (HdrHistogram semantics).

        Also records the samples a stalled sampler missed: value - k*expected_interval for
        k = 1, 2, ... while that is >= expected_interval (record_corrected(100, 30) records 100,
        70 and 40). expected_interval == 0 disables the correction. O(buckets), not O(values).
        Raises ValueError if value is out of range, expected_interval < 0, or
        0 < expected_interval < lowest.
        """
    def record_many(self, values: npt.ArrayLike) -> None:
        """Records every value of an int64 array (any shape) or sequence of ints, GIL released.

        All or nothing: raises ValueError naming the first out-of-range value and its index, and
        records nothing; TypeError for values not safely castable to int64 (floats, uint64).
        """
    def value_at_percentile(self, p: float) -> int:
        """The value at percentile p in [0, 100], HdrHistogram's definition.

        With n values recorded: the k-th smallest value, k = max(1, ceil(p/100 * n)) (the smallest
        v with at least p% of the values <= v, numpy's method="inverted_cdf"), reported as the
        highest value of its bucket clamped to the exact max: never below the true value, at most
        10**-significant_digits above it (relative). p=0 gives the exact min, p=100 the exact max.
        A rank within 16 ulps above an integer counts as that integer (99.9% of 1000 values is the
        999th). 0 when empty. Raises ValueError if p is outside [0, 100] or NaN.
        """
    def percentiles(self, ps: Sequence[float]) -> list[int]:
        """value_at_percentile for each p, in order, in one pass. ValueError as there."""
    def merge(self, other: Histogram) -> None:
        """Adds other's values: the result equals recording both streams into one histogram.

        Raises ValueError naming both configurations when lowest, highest or significant_digits
        differ; OverflowError if the total count would pass 2**63-1. h.merge(h) doubles h.
        """
    def reset(self) -> None:
        """Forgets every value and frees the bucket memory; the parameters stay."""
    def to_bytes(self) -> bytes:
        """Compact versioned binary form (magic b"PTPSHIST", version 1; docs/histogram.md)."""
    @staticmethod
    def from_bytes(data: bytes | bytearray | memoryview) -> Histogram:
        """Rebuilds a histogram from to_bytes() output.

        Raises ValueError saying what is wrong: bad magic, truncated, trailing bytes, unsupported
        version, checksum mismatch, invalid parameters, or counts and statistics that disagree;
        TypeError if data is not bytes-like.
        """
    @property
    def count(self) -> int:
        """Number of values recorded (exact)."""
    @property
    def min(self) -> int:
        """Smallest value recorded (exact); 0 when empty."""
    @property
    def max(self) -> int:
        """Largest value recorded (exact); 0 when empty."""
    @property
    def mean(self) -> float:
        """Mean of the values, from their exact 128-bit sum; 0.0 when empty."""
    @property
    def stddev(self) -> float:
        """Population standard deviation (ddof=0) via Welford/Chan in long double; 0.0 when empty."""
    @property
    def lowest(self) -> int: ...
    @property
    def highest(self) -> int: ...
    @property
    def significant_digits(self) -> int: ...
    @property
    def allocated_bytes(self) -> int:
        """Bytes currently held by the bucket counts."""
    def __eq__(self, other: object) -> bool: ...
    def __getstate__(self) -> bytes: ...
    def __setstate__(self, state: bytes) -> None: ...

# ---- emulator ---------------------------------------------------------------

class Emulator:
    """The native streaming emulator; use pytps.Emulator, which validates the settings and builds
    the config dict (ns units: ttft_ns, itl_ns, itl_sd_ns, itl_replay_ns, prefill_ns_per_token,
    keepalive_ns, spin_ns; plus host, port, ttft_dist, itl_dist, max_batch, batch_slowdown,
    tokens_per_event, coalesce,
    reasoning_tokens, tool_calls, max_output_tokens, default_output_tokens, model, faults,
    seed, realtime, truth_log, keep_truth). Serves OpenAI, Anthropic and Ollama endpoints on its
    own thread."""

    def __init__(self, config: dict[str, Any]) -> None: ...
    def start(self) -> int:
        """Binds, listens, starts the timing thread; returns the port. ValueError when the
        address cannot be bound or the emulator was already started."""
    def stop(self) -> None:
        """Stops the thread and closes every connection (open streams recorded as incomplete)."""
    @property
    def port(self) -> int:
        """The bound port (0 before start())."""
    @property
    def running(self) -> bool:
        """True between start() and stop()."""
    def truth(self, clear: bool = False) -> list[dict[str, Any]]:
        """One record per finished generation request (see pytps.Emulator.truth: admitted_ns,
        released_ns, queued_ns and the per-event batch array come from the load model);
        clear=True hands the records over and forgets them."""
    def wait_truth(self, n: int, timeout_s: float = 5.0) -> int:
        """Waits until at least n records are kept or the timeout passes; returns the count."""
    def stats(self) -> dict[str, int]:
        """Counters: connections_accepted, connections_open, requests, generation_requests,
        streams_active (queued ones included), decoding, queued, events_sent, writes, bytes_sent, write_blocked, faults,
        spins, sleeps, parse_bytes."""

# ---- http -------------------------------------------------------------------

class HttpStreamRecorder:
    """One HTTP/1.x response read straight off the socket: an incremental response parser
    feeding a StreamRecorder, so a transport makes ONE native call per socket read.

    Parsing (RFC 9112): status line "HTTP/1.x NNN reason" (empty reason allowed); lines end
    at CRLF or bare LF; header names lowercased, values OWS-trimmed; obsolete line folding
    is replaced by one SP; 1xx responses (100 Continue, 103) are skipped (101 is an error).
    Body framing: none for 204/304; Transfer-Encoding: chunked (extensions and trailers
    skipped; any other transfer coding is an error); else Content-Length (digits only,
    repeated values must agree); else the body runs until the connection closes
    (finish_eof). HEAD responses are not supported. Memory is bounded: the status line and
    headers may take max_header_bytes (so may the trailers), at most 100 header fields, a
    chunk-size line at most 4160 bytes.

    A 2xx body goes to `recorder`, each piece stamped with its read's t_ns; any other
    status keeps the first 4096 body bytes as error_body.
    """

    def __init__(self, dialect: str, max_header_bytes: int = 65536) -> None:
        """dialect: one of DIALECTS (ValueError otherwise); max_header_bytes >= 1."""
    def feed(self, data: bytes | bytearray | memoryview, t_ns: int) -> int:
        """Consume one socket read made at t_ns. Returns the bytes consumed: len(data), unless the
        response ended inside data (the rest belongs to no response: pipelining or garbage) or a
        framing error was found (the offset of the offending byte; see error). A short count
        therefore means "check message_done / error"; once done or failed nothing more is
        consumed. Raises ValueError after close() or finish_eof()."""
    def finish_eof(self, t_ns: int) -> None:
        """The server closed the connection at t_ns: completes a close-delimited body; an unfinished
        response gets error "connection closed before the end of the response (...)". Closes the
        recorder at t_ns."""
    def close(self, t_ns: int) -> None:
        """End of the body at t_ns: closes the recorder (after message_done, or to give up).
        Only the first close()/finish_eof() counts for the recorder."""
    def reset(self) -> None:
        """Forget everything, ready for the next response on the same keep-alive connection."""
    def header(self, name: str) -> str | None:
        """The first value of a header (name compared case-insensitively), or None."""
    @property
    def status(self) -> int | None:
        """The final response's status once its status line is parsed, else None."""
    @property
    def headers(self) -> list[tuple[str, str]]:
        """(name, value) in arrival order; names lowercased, values decoded as latin-1."""
    @property
    def headers_done(self) -> bool: ...
    @property
    def message_done(self) -> bool:
        """The whole response, body included, has been read."""
    @property
    def keep_alive(self) -> bool:
        """The connection may carry another response: HTTP/1.1 unless "Connection: close", HTTP/1.0
        only with "keep-alive"; never after a close-delimited body, Transfer-Encoding together
        with Content-Length, or an error. False until headers_done."""
    @property
    def chunked(self) -> bool: ...
    @property
    def content_length(self) -> int | None:
        """The Content-Length framing the body, or None."""
    @property
    def body_bytes(self) -> int:
        """Decoded (de-chunked) body bytes so far."""
    @property
    def t_headers_ns(self) -> int | None:
        """t_ns of the read that completed the final response's headers."""
    @property
    def error(self) -> str | None:
        """The HTTP framing error naming what was wrong, or None. Errors inside the stream's events
        are recorder.error."""
    @property
    def closed_early(self) -> bool:
        """True when error is the connection ending before the response did (truncation); False
        when bytes broke the framing, or there is no error."""
    @property
    def error_body(self) -> bytes:
        """The first 4096 body bytes of a non-2xx response; b"" for 2xx."""
    @property
    def body_start(self) -> bytes:
        """The first 256 body bytes of a 2xx response: what a body that is not a stream began with."""
    @property
    def recorder(self) -> StreamRecorder:
        """The owned StreamRecorder (a view that keeps this object alive) with the timing read-outs."""

# ---- client -----------------------------------------------------------------

TLS_AVAILABLE: bool
"""Whether the native client was built with TLS (OpenSSL found at build time): ClientEngine(tls=True)."""

def tls_library_version() -> str | None:
    """The OpenSSL version the native client's TLS uses (e.g. "OpenSSL 3.0.19 27 Jan 2026");
    None when TLS_AVAILABLE is False."""

class ClientResult:
    """One finished request of a ClientEngine (from ClientEngine.collect())."""

    @property
    def id(self) -> int:
        """The id given to submit()."""
    @property
    def t_send_ns(self) -> int | None:
        """Stamp taken right before the write that completed the request; None if never sent."""
    @property
    def t_done_ns(self) -> int:
        """When the request finished: the read that ended the response, or the error."""
    @property
    def connect_ns(self) -> int | None:
        """How long a new connection took to connect; None on a reused connection."""
    @property
    def tls_ns(self) -> int | None:
        """How long a new connection's TLS handshake took; None on a reused or plain connection."""
    @property
    def connection_id(self) -> int | None:
        """The engine's id of the connection the request was (last) sent on, stable for the
        engine's life (requests on one kept-alive connection share it); None if none was opened."""
    @property
    def error(self) -> str | None:
        """The transport's own error class: "connect", "timeout", "no_response" (the connection
        ended before any byte of a response) or "client" (stopped, too large), else None. HTTP
        statuses, framing errors, truncation and in-stream errors are read from http."""
    @property
    def error_detail(self) -> str:
        """What went wrong, for a transport error ("" otherwise)."""
    @property
    def retries(self) -> int:
        """Times the request was sent again, on a new connection, because its kept-alive one had
        been closed before any byte of a response (0 or 1); t_send_ns is the last send's."""
    @property
    def recv_times_ns(self) -> npt.NDArray[np.int64]:
        """kernel_timestamps only: the engine's stamp of each read that carried a kernel stamp (the
        recorder's event times are among these); empty otherwise."""
    @property
    def recv_kernel_times_ns(self) -> npt.NDArray[np.int64]:
        """kernel_timestamps only: the kernel's software receive stamp of the same reads, on
        CLOCK_MONOTONIC (for TCP, that of the last segment the read took)."""
    @property
    def http(self) -> HttpStreamRecorder:
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
        verify: bool = True,
        addresses: Sequence[str] | None = None,
        test_read_delay_ns: int = 0,
    ) -> None:
        """ValueError for a port outside 1..65535, max_connections < 1, negative timeouts or a zero
        connect/idle timeout, an unreadable ca_file, tls=True without TLS_AVAILABLE, or
        server_name/ca_file without tls. first_byte_timeout_ns 0: the idle timeout. spin_ns:
        busy-wait window before scheduled sends (0: sleep only). kernel_timestamps: also keep the
        kernel's software receive stamp of each read (SO_TIMESTAMPING, on CLOCK_MONOTONIC) in
        ClientResult.recv_kernel_times_ns. A host that does not resolve makes every request fail
        with error "connect". TLS: server_name (default: host) is sent as SNI (unless an IP
        address) and checked against the certificate; ca_file is a PEM CA bundle trusted instead
        of the system's; verify=False checks neither. Every address the host resolves to is tried
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
    @property
    def notify_fd(self) -> int:
        """An eventfd, readable while collect() has results."""
    def collect(self) -> list[ClientResult]:
        """Every finished request, in finishing order; resets notify_fd."""
    def stop(self) -> None:
        """End the engine's thread (joins it, without the GIL). Unfinished requests finish with
        error "client"; collect() returns them. Idempotent; also done on destruction."""
    @property
    def connections_opened(self) -> int:
        """TCP connections opened so far."""
    @property
    def spin_window_ns(self) -> int:
        """The current busy-wait window before scheduled sends (adapts; <= spin_ns)."""
    @property
    def thread_cpu_ns(self) -> int:
        """CPU time the engine thread used, known once stop() returned (0 before)."""
    @property
    def wakeups(self) -> int:
        """Returns of the engine thread from its epoll wait so far."""
    @property
    def reads(self) -> int:
        """Socket reads that returned data so far (the thread is named "pytps-engine")."""
