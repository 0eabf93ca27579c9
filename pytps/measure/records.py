"""RequestRecord: everything a transport measured about one request, and nothing computed from it.

Transports produce these; metrics, results and reports consume them. Times are CLOCK_MONOTONIC
ns (int64), taken once at the read and never again downstream.
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

from pytps.grading.grade import Grade
from pytps.measure.usage import implausible_counts

# Error classes, shared by every transport (docs/metrics.md, "Errors").
ERROR_TIMEOUT = "timeout"
ERROR_CONNECT = "connect"
ERROR_TRUNCATED = "truncated"
ERROR_IN_STREAM = "in_stream"
ERROR_PROTOCOL = "protocol"
ERROR_CLIENT = "client"
ERROR_NO_RESPONSE = "no_response"


def http_error_class(status: int) -> str:
    return f"http_{status}"


# Bytes one response may take (head and body) before the client gives up on it with error class
# "client": the same cap on every transport, so a server that never stops sending costs bounded
# memory and CPU (the native engine's max_response_bytes).
MAX_RESPONSE_BYTES = 256 << 20


def response_too_large_detail(limit: int) -> str:
    return f"the response is larger than max_response_bytes ({limit})"


def closed_early(exc: BaseException) -> bool:
    """Whether an HTTP library's protocol error is the peer closing early (truncation, or no
    response) rather than bytes it could not parse: h11 (under httpx, httpcore and the SDKs) says
    so only in its messages."""
    text = str(exc).lower()
    return any(s in text for s in ("peer closed", "disconnected", "incomplete", "connection closed", "without sending"))


def no_response_detail(how: str, resent: bool) -> str:
    """Error class no_response's detail, in the same words on every transport (the native
    engine's are in csrc/client/connection.cpp). how: "the server closed the connection",
    "the connection failed: <strerror>", "send failed: <strerror>"."""
    detail = f"no byte of a response came: {how}"
    if resent:
        detail += " (on a new connection: the request was sent again after a kept-alive connection was found closed)"
    return detail


def compressed_body_detail(encoding: str, stream: bool = True) -> str:
    """Error class protocol's detail for a 2xx body the server compressed though every request
    asks for Accept-Encoding: identity: a compressed stream cannot be timed event by event, nor a
    whole body's bytes. stream: the request asked for an event stream (not --no-stream, embeddings
    or rerank, which ask for one response body)."""
    what = "event stream" if stream else "response body"
    return (
        f"the server sent the {what} compressed (Content-Encoding: {encoding}) although the request "
        f"asked for Accept-Encoding: identity; pytps times uncompressed {'streams' if stream else 'bodies'} only: turn "
        "compression off for this route on the server or the proxy in front of it"
    )


_EMPTY: dict[str, np.ndarray] = {}


def _empty(dtype: str) -> np.ndarray:
    """One empty array per dtype, shared by every record until it is given its own: a new one
    for each of a record's five arrays was ~3% of a short request's client CPU (issue 42), and
    most records replace them. Sharing cannot leak a value from one record to another: an array
    of no elements has nothing to write in place, and ndarray.resize refuses an array referenced
    elsewhere (as this one always is, from here)."""
    array = _EMPTY.get(dtype)
    if array is None:
        # numpy is imported on a record's first making, not with this module: the CLI's start-up
        # (`pytps --version`, `--help`) reaches the records through the transport names, and needs no numpy.
        import numpy as np

        array = _EMPTY[dtype] = np.zeros(0, dtype=dtype)
    return array


class _SharedEmpty:
    """A record field's factory: _empty(dtype), the array every record shares until it is given
    its own (new_record_of takes it once, not a call per record)."""

    def __init__(self, dtype: str) -> None:
        self.dtype = dtype

    def __call__(self) -> np.ndarray:
        return _empty(self.dtype)


#: A record's absolute times (CLOCK_MONOTONIC ns; the journal keeps those of them it has): what
#: a worker's clock offset moves when a scaled run is merged (pytps.scale). Everything else is a
#: duration or a count.
ABSOLUTE_TIMES = (
    "t_sched_ns",
    "t_submit_ns",
    "t_send_ns",
    "t_headers_ns",
    "t_done_ns",
    "first_output_ns",
    "first_answer_ns",
    "last_output_ns",
    "end_ns",
)


@dataclass(frozen=True)
class ToolCall:
    """One tool call the model made, as the response carried it: ``index`` (the stream's index:
    chat ``tool_calls[].index``, Responses ``output_index``, Anthropic content block index; the
    position in a whole body), the call ``id`` (None when the server sent none), the tool
    ``name`` and its ``arguments`` as the JSON text sent (Anthropic: the streamed
    ``partial_json`` concatenated, or a whole body's ``input`` re-serialized)."""

    index: int
    id: str | None
    name: str
    arguments: str


#: A StreamRecorder's read-outs that a record takes as they are, under the same names
#: (fill_from_recorder); the others are checked or converted on the way.
_RECORDER_AS_IS = (
    *("server_timings", "done", "events", "output_times_ns", "output_kinds", "output_tokens", "output_chars"),
    *("first_output_ns", "first_answer_ns", "last_output_ns", "end_ns", "text", "reasoning_text", "body"),
)


def _readout(rec: Any) -> tuple[Any, ...]:
    """StreamRecorder.readout() of a recorder without it, read attribute by attribute (audio_format
    and first_body_ns None where it has neither)."""
    return (
        rec.response_id, rec.model, rec.finish_reason, dict(rec.usage),
        *(getattr(rec, name) for name in _RECORDER_AS_IS), rec.tool_calls, getattr(rec, "audio_format", None),
        getattr(rec, "first_body_ns", None),
    )  # fmt: skip


@dataclass(repr=False)
class RequestRecord:
    index: int
    warmup: bool = False
    t_sched_ns: int | None = None  # intended send time (rate mode)
    t_submit_ns: int | None = None  # the runner handed the request to the transport
    t_send_ns: int = 0  # the transport finished writing the request to the socket
    t_headers_ns: int | None = None  # response headers received
    t_done_ns: int | None = None  # the request finished, one way or another
    status: int | None = None
    error: str | None = None  # an error class above, or http_<status>
    error_detail: str | None = None  # human text, already redacted
    prompt_tokens_planned: int | None = None
    max_tokens: int | None = None
    usage_requested: bool = True
    request_bytes: int | None = None  # the request body's size: bounds a plausible prompt_tokens
    # Read-outs of the StreamRecorder.
    response_id: str | None = None
    # The server's id of the request: its x-request-id (or request-id) response header, else the
    # body's `id` (pytps.runner.provenance); and the id pytps sent in --request-id-header's header.
    request_id: str | None = None
    sent_request_id: str | None = None
    model: str | None = None
    finish_reason: str | None = None
    usage: dict[str, int] = field(default_factory=dict)
    # Usage counts the server reported that fail pytps.measure.usage's bounds, as reported; they
    # are not in `usage`, so no figure uses them.
    usage_implausible: dict[str, Any] | None = None
    # The server's own timing report: (source, its JSON object text), read by pytps.measure.server_timings.
    server_timings: tuple[str, str] | None = None
    done: bool = False
    events: int = 0
    output_times_ns: np.ndarray = field(default_factory=_SharedEmpty("int64"))
    output_kinds: np.ndarray = field(default_factory=_SharedEmpty("uint8"))
    output_tokens: np.ndarray = field(default_factory=_SharedEmpty("int32"))
    output_chars: np.ndarray = field(default_factory=_SharedEmpty("int32"))
    # With kernel timestamps (native transport): the kernel's receive stamp of the read behind
    # each output_times_ns entry, on CLOCK_MONOTONIC; empty when not measured.
    output_kernel_times_ns: np.ndarray = field(default_factory=_SharedEmpty("int64"))
    first_output_ns: int | None = None
    first_answer_ns: int | None = None
    last_output_ns: int | None = None
    end_ns: int | None = None
    text_chars: int = 0
    # Connection phases from the transport's trace (ns durations), when known.
    phases_ns: dict[str, int] = field(default_factory=dict)
    # Times the request was sent again, on a new connection, because the kept-alive connection
    # it went on had been closed before any byte of a response (0 or 1). t_send_ns is the last send's.
    retries: int = 0
    # A stable id of the connection the request was (last) sent on, unique within the run's
    # transport: requests that went over one kept-alive connection share it. None when no
    # connection carried it (it failed to connect) or the transport does not know.
    connection_id: int | None = None
    transport: str = "httpx"
    tokenizer_tokens: int | None = None  # output tokens counted by a local tokenizer
    # The generated text, answer and reasoning, kept only until the request is judged (validation)
    # and counted (a local tokenizer).
    text: str = ""
    reasoning_text: str = ""
    # The model's tool calls (streams: parsed by the C++ dialects; whole bodies: pytps.measure.bodies),
    # in index order; kept after the text is dropped (an agent loop answers them).
    tool_calls: list[ToolCall] = field(default_factory=list)
    # Multi-turn sessions (pytps.workload.sessions): the session and turn this request was, and, when it
    # ended its session early (a failed turn), why.
    session: int | None = None
    turn: int | None = None
    session_end: str | None = None
    # Graded answers (pytps.grading.graders): the grader's verdict, set before the record is judged.
    grade: Grade | None = None
    # Whole JSON bodies (pytps.measure.bodies): stream False for a response read as one body (the
    # "json" dialect), whose bytes are kept in `body` until read_body() reads them.
    stream: bool = True
    body: bytes = b""
    # Embeddings and rerank: the inputs sent (texts, or documents), rerank's top_n, and what the
    # answer held: its vectors' length, and the vectors or ranked documents it carried.
    inputs: int | None = None
    top_n: int | None = None
    dimensions: int | None = None  # embeddings: the vector length asked for (--dimensions)
    embedding_dim: int | None = None
    results: int | None = None
    # The audio dialects (pytps.measure.voice): the format a WAV body's header stated, and the
    # first read that carried any byte of a raw audio body.
    audio_format: dict[str, int] | None = None
    first_body_ns: int | None = None
    # Image prompts: the images sent with the request, their encoded bytes and pixels.
    images: int = 0
    image_bytes: int = 0
    image_pixels: int = 0

    def __repr__(self) -> str:
        return (
            f"<RequestRecord {self.index} status={self.status} error={self.error} events={len(self.output_times_ns)}>"
        )

    @property
    def ok(self) -> bool:
        return self.error is None

    def fill_from_recorder(self, rec: Any) -> None:
        """Copies a pytps.StreamRecorder's read-outs (after close) into this record: all at once by
        its readout() (one call instead of one per attribute, issue 42), else attribute by attribute
        (a stand-in with the same attributes)."""
        readout = getattr(rec, "readout", None)
        self.fill_from_readout(readout() if readout is not None else _readout(rec))

    def fill_from_readout(self, readout: tuple[Any, ...]) -> None:
        """fill_from_recorder() of the recorder whose readout() this is."""
        (
            response_id, self.model, self.finish_reason, usage, self.server_timings, self.done, self.events,
            self.output_times_ns, self.output_kinds, self.output_tokens, self.output_chars, self.first_output_ns,
            self.first_answer_ns, self.last_output_ns, self.end_ns, self.text, self.reasoning_text, self.body,
            tool_calls, self.audio_format, self.first_body_ns,
        ) = readout  # fmt: skip
        self.response_id = response_id
        self.request_id = self.request_id or response_id
        self.usage = usage  # a dict of its own: readout() makes one, _readout() copies
        # The server's counts are untrusted: an implausible one is set aside, never used. (An
        # empty usage has nothing to check: a whole body's is read, and checked, with the body.)
        bad = implausible_counts(usage, self.events, self.max_tokens, self.request_bytes) if usage else None
        if bad:
            self.usage = {k: v for k, v in self.usage.items() if k not in bad}
            self.usage_implausible = bad
        self.tool_calls = [ToolCall(c["index"], c["id"], c["name"], c["arguments"]) for c in tool_calls]
        self.text_chars = len(self.text) + len(self.reasoning_text)


def _record_template() -> tuple[dict[str, Any], tuple[tuple[str, Any], ...], tuple[tuple[str, Any], ...]]:
    """Every field of a RequestRecord in order with its default (None for index); the fields made
    by a factory of a new value with their factories; and those whose factory gives the one
    shared empty array (_SharedEmpty) with theirs."""
    template: dict[str, Any] = {}
    factories: list[tuple[str, Any]] = []
    shared: list[tuple[str, Any]] = []
    for f in fields(RequestRecord):
        template[f.name] = None if f.default is MISSING else f.default
        if f.default_factory is not MISSING:
            (shared if isinstance(f.default_factory, _SharedEmpty) else factories).append((f.name, f.default_factory))
    return template, tuple(factories), tuple(shared)


_TEMPLATE, _FACTORIES, _SHARED_FACTORIES = _record_template()
# _TEMPLATE with the shared empty arrays in place, made at the first record (numpy is loaded then).
_FILLED_TEMPLATE: list[dict[str, Any]] = []
assert not hasattr(RequestRecord, "__post_init__"), "new_record_of would skip it"


def _filled_template() -> dict[str, Any]:
    filled = _TEMPLATE.copy()
    for name, factory in _SHARED_FACTORIES:
        filled[name] = factory()
    _FILLED_TEMPLATE.append(filled)
    return filled


def new_record_of(values: dict[str, Any]) -> RequestRecord:
    """RequestRecord(**values) (values: index and other fields by name), the same object made
    without the dataclass's __init__: one copy of the defaults instead of an assignment per field,
    which was ~4 us of every request (issue 42). The same attributes in the same order, each
    factory's value new for this record but the shared empty arrays, the same objects the
    factories give, taken once (five calls less per request)."""
    state = (_FILLED_TEMPLATE[0] if _FILLED_TEMPLATE else _filled_template()).copy()
    for name, factory in _FACTORIES:
        state[name] = factory()
    state.update(values)
    rec = object.__new__(RequestRecord)
    rec.__dict__ = state
    return rec
