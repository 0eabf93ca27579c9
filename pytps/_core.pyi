"""Hand-written stubs of the compiled module pytps._core."""

from typing import Any

import numpy as np
import numpy.typing as npt

__version__: str

# ---- clock ------------------------------------------------------------------

def now_ns() -> int:
    """CLOCK_MONOTONIC in integer nanoseconds (the clock of time.monotonic_ns() on Linux)."""

def clock_info(calls: int = 200000) -> dict[str, Any]:
    """{'source', 'resolution_ns', 'call_cost_ns', 'min_step_ns'} of the monotonic clock."""

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
        """[{"index", "id", "name", "arguments"}] assembled from tool-call deltas, in index order."""
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

# ---- emulator ---------------------------------------------------------------

class Emulator:
    """The native streaming emulator; use pytps.Emulator, which validates the settings and builds
    the config dict (ns units: ttft_ns, itl_ns, itl_sd_ns, itl_replay_ns, prefill_ns_per_token,
    keepalive_ns, spin_ns; plus host, port, ttft_dist, itl_dist, tokens_per_event, coalesce,
    reasoning_tokens, tool_calls, max_output_tokens, default_output_tokens, model, faults,
    seed, truth_log, keep_truth). Serves OpenAI, Anthropic and Ollama endpoints on its own thread."""

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
        """One record per finished generation request (see pytps.Emulator.truth); clear=True
        hands the records over and forgets them."""
    def wait_truth(self, n: int, timeout_s: float = 5.0) -> int:
        """Waits until at least n records are kept or the timeout passes; returns the count."""
    def stats(self) -> dict[str, int]:
        """Counters: connections_accepted, connections_open, requests, generation_requests,
        streams_active, events_sent, writes, bytes_sent, write_blocked, faults, spins."""
