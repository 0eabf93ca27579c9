"""Stubs of what csrc/bindings/register_recorder.cpp adds to pytps._core."""

from typing import Any, Final

import numpy as np
import numpy.typing as npt

KIND_CONTENT: int  # 0: answer text (delta.content, text deltas)
KIND_REASONING: int  # 1: reasoning/thinking text
KIND_TOOL: int  # 2: tool-call name or argument deltas

DIALECTS: tuple[str, ...]  # ("openai-chat", "openai-completions", "openai-responses", "anthropic", "ollama")
# Each dialect's generation request paths below the server's root, its default first:
# {"openai-chat": ("/v1/chat/completions",), ..., "ollama": ("/api/chat", "/api/generate")}
DIALECT_PATHS: dict[str, tuple[str, ...]]
#: The APIs answered by one JSON body (read with the "json" dialect): name -> path.
BODY_API_PATHS: dict[str, str]
# The audio APIs (text to speech, speech to text): name -> path.
AUDIO_API_PATHS: dict[str, str]

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
    def readout(self) -> tuple[Any, ...]:
        """Every read-out at once: (response_id, model, finish_reason, usage, server_timings, done,
        events, output_times_ns, output_kinds, output_tokens, output_chars, first_output_ns,
        first_answer_ns, last_output_ns, end_ns, text, reasoning_text, body, tool_calls,
        audio_format, first_body_ns), each what its attribute gives."""
    dialect: Final[str]
    closed: Final[bool]
    output_times_ns: Final[npt.NDArray[np.int64]]
    """Arrival t_ns of each output-bearing event."""
    output_kinds: Final[npt.NDArray[np.uint8]]
    """KIND_* of each output-bearing event (content wins over reasoning over tool when an event has several)."""
    output_chars: Final[npt.NDArray[np.int32]]
    """Unicode code points of generated text in each output-bearing event."""
    output_tokens: Final[npt.NDArray[np.int32]]
    """Tokens in each output-bearing event when the server reports per-chunk usage
    (vLLM continuous_usage_stats: the increase of usage.completion_tokens), else -1."""
    first_output_ns: Final[int | None]
    # speech-wav: the header's format; the raw audio dialects: the first read with any body byte.
    audio_format: Final[dict[str, int] | None]
    first_body_ns: Final[int | None]
    first_answer_ns: Final[int | None]
    """First output-bearing event that is not reasoning (content or tool)."""
    last_output_ns: Final[int | None]
    end_ns: Final[int | None]
    """Arrival of the terminal marker ([DONE], message_stop, response.completed/failed/incomplete,
    Ollama done:true), else the t_ns given to close(), else None."""
    text: Final[str]
    """The answer text (content deltas) concatenated."""
    body: Final[bytes]
    """The whole body as it came, for the json and speech-coded dialects (b'' for the others)."""
    reasoning_text: Final[str]
    tool_calls: Final[list[dict[str, Any]]]
    """[{"index", "id", "name", "arguments"}] assembled from tool-call deltas, in index order
    (id is None when the server sent none, as Ollama does)."""
    usage: Final[dict[str, int]]
    """What the server reported, under normalized names (only those reported):
    prompt_tokens, completion_tokens, total_tokens, reasoning_tokens, cached_tokens.
    Anthropic input_tokens/output_tokens/cache_read_input_tokens, Responses input_tokens/
    output_tokens and Ollama prompt_eval_count/eval_count map onto these. Later reports
    overwrite earlier ones (usage is cumulative in every dialect)."""
    finish_reason: Final[str | None]
    """finish_reason / stop_reason / done_reason / the Responses status as the server sent it."""
    server_timings: Final[tuple[str, str] | None]
    """(source, JSON object text) of the server's own timing report, the last the stream
    carried: llama.cpp's `timings`, Ollama's final durations and counts, Groq's `x_groq`,
    Cerebras's `time_info` (source "llama.cpp", "ollama", "groq", "cerebras"); None when
    none came. Read by pytps.server_timings."""
    response_id: Final[str | None]
    model: Final[str | None]
    done: Final[bool]
    """The terminal marker was seen."""
    events: Final[int]
    """All events framed (SSE events, or NDJSON lines), output-bearing or not."""
    output_events: Final[int]
    error: Final[dict[str, Any] | None]
    """The first error: {"kind": "in_stream" | "protocol", "message": str, "event_index": int,
    "payload": str | None}. in_stream: the server sent an error event (its JSON as payload).
    protocol: malformed JSON, an overlong line, or the stream ended inside an event; timing goes on."""
    protocol_errors: Final[int]
    """How many events were malformed."""
