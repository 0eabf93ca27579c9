"""pytps.Emulator: a precise streaming emulator of OpenAI, Anthropic and Ollama endpoints.

The server and its timing engine are native (pytps._core.Emulator, its own thread with epoll
and a spin before each deadline); this module validates the settings, parses fault specs and
gives the context-manager face.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pytps._native import _core

# The emulator's timing when none is given: one default for pytps.Emulator, `pytps serve` and the
# built-in emulator of `pytps run` / `pytps sweep` (each --help shows it).
DEFAULT_TTFT_MS = 50.0
DEFAULT_ITL_US = 500.0

__all__ = ["FAULT_KINDS", "Emulator", "answer_book", "parse_fault"]

#: Fault kinds and what they do (see docs/emulator.md).
FAULT_KINDS = {
    "http_429": "HTTP 429 with Retry-After (retry_after_s) instead of a response",
    "http_500": "HTTP 500 with the provider's JSON error",
    "http_503": "HTTP 503 with the provider's JSON error",
    "disconnect": "connection closed after after_events events, without ending the body",
    "malformed_json": "one event with cut-short JSON before event after_events; the stream goes on",
    "error_event": "the provider's in-stream error event at event after_events; the stream ends there",
    "stall": "a pause of `seconds` before event after_events; later events shift by it",
    "slow_headers": "response headers (and everything after) late by `seconds`",
}
_FAULT_ALIASES = {
    "429": "http_429",
    "500": "http_500",
    "503": "http_503",
    "malformed": "malformed_json",
    "error": "error_event",
    "close": "disconnect",
}
_FAULT_FIELDS = {
    "probability": float,
    "p": float,
    "every": int,
    "seconds": float,
    "after_events": int,
    "after": int,
    "retry_after_s": int,
    "retry_after": int,
}
_DISTS = ("fixed", "normal", "lognormal")


def parse_fault(spec: str | Mapping[str, Any]) -> dict[str, Any]:
    """A fault as the native emulator takes it, from a dict or a CLI string.

    Strings read ``KIND[:key=value,...]``, e.g. ``429:p=0.1`` or ``stall:every=5,seconds=2``.
    Keys: ``probability``/``p``, ``every``, ``seconds``, ``after_events``/``after``,
    ``retry_after_s``/``retry_after``. Each fault needs ``probability`` or ``every``.
    """
    if isinstance(spec, str):
        kind, _, rest = spec.partition(":")
        fields: dict[str, Any] = {"kind": kind.strip()}
        for part in filter(None, (p.strip() for p in rest.split(","))):
            key, eq, value = part.partition("=")
            if not eq:
                raise ValueError(f"fault {spec!r}: expected key=value, got {part!r}")
            fields[key.strip()] = value.strip()
    elif isinstance(spec, Mapping):
        fields = dict(spec)
    else:
        raise ValueError(f"a fault is a dict or a 'kind:key=value,...' string, not {type(spec).__name__}")
    kind = str(fields.pop("kind", "")).strip()
    kind = _FAULT_ALIASES.get(kind, kind)
    if kind not in FAULT_KINDS:
        raise ValueError(f"unknown fault kind {kind!r}; choose one of {', '.join(FAULT_KINDS)}")
    out: dict[str, Any] = {"kind": kind}
    for key, value in fields.items():
        if key not in _FAULT_FIELDS:
            raise ValueError(f"fault {kind}: unknown field {key!r}; known: {', '.join(_FAULT_FIELDS)}")
        try:
            value = _FAULT_FIELDS[key](value)
        except (TypeError, ValueError):
            raise ValueError(f"fault {kind}: {key}={value!r} is not a number") from None
        key = {"p": "probability", "after": "after_events", "retry_after": "retry_after_s"}.get(key, key)
        out[key] = value
    p = out.get("probability", 0.0)
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"fault {kind}: probability must be within [0, 1], got {p}")
    if out.get("every", 0) < 0:
        raise ValueError(f"fault {kind}: every must be a positive integer")
    if not out.get("every") and not p:
        raise ValueError(f"fault {kind}: give probability=P or every=N, or it never happens")
    if out.get("seconds", 1.0) < 0 or not math.isfinite(out.get("seconds", 1.0)):
        raise ValueError(f"fault {kind}: seconds must be a non-negative number")
    if out.get("retry_after_s", 1) < 0:
        raise ValueError(f"fault {kind}: retry_after_s must be >= 0")
    return out


# ---- graded answers (docs/emulator.md, "Answers") ----------------------------------------------

#: The emulator's content words (csrc/emulator/formats.cpp, kWords): the text an answer follows.
_CONTENT_WORDS = " the token stream moves at a steady pace while each word lands right on its time"
_WRONG_TEXTS = ("no answer", "unknown", "n/a", "-")


def _answer_records(
    answers: str | os.PathLike[str] | Iterable[Mapping[str, Any]],
) -> list[tuple[str, Mapping[str, Any]]]:
    """(where, record) of every reference record: a dataset file, `tasks:NAMES:COUNT[:SEED]`, or records."""
    if isinstance(answers, (str, os.PathLike)):
        text = os.fspath(answers)
        if text.startswith("tasks:"):
            from pytps.workload.tasks import TaskWorkload

            _, names, *rest = text.split(":")
            try:
                count = int(rest[0]) if rest else 1000
                seed = int(rest[1]) if len(rest) > 1 else 0
            except ValueError:
                raise ValueError(f"answers {text!r}: write tasks:NAME[,NAME]:COUNT[:SEED]") from None
            return [(r["id"], r) for r in TaskWorkload(names, seed=seed).records(count)]
        import json

        from pytps.errors import ConfigError

        out = []
        try:
            with open(text, encoding="utf-8") as f:
                for lineno, line in enumerate(f, 1):
                    if line.strip():
                        try:
                            out.append((f"{text}:{lineno}", json.loads(line)))
                        except json.JSONDecodeError as e:
                            raise ConfigError(f"{text}:{lineno}: not valid JSON ({e.msg}, column {e.colno})") from None
        except OSError as e:
            raise ConfigError(f"answers file {text}: {e.strerror}") from None
        return out
    return [(f"answers[{k}]", r) for k, r in enumerate(answers)]


def _prompt_keys(where: str, record: Mapping[str, Any]) -> list[str]:
    """The texts a request for this record ends with: its prompt, or its last message's content
    and (for completion-style APIs) all the contents joined."""
    from pytps.workload.datasets import content_text, messages_text

    if isinstance(record.get("prompt"), str):
        return [record["prompt"]]
    messages = record.get("messages")
    if isinstance(messages, list) and messages and isinstance(messages[-1], Mapping):
        return [content_text(messages[-1].get("content")), messages_text(list(messages))]
    raise ValueError(f'{where}: an answer record needs "prompt" or "messages"')


def _right_and_wrong(where: str, record: Mapping[str, Any]) -> tuple[str, str] | None:
    """The right text and a wrong one, each checked against the record's grader the way pytps will
    see it (the emulator's content words, then "\nAnswer: <text>"). None: the record has no reference."""
    from pytps.grading.graders import grade_text, parse_reference

    ref = parse_reference(record, where=where, item=where)
    if ref is None:
        return None
    expected, g = ref.expected, ref.grader
    if "answer" in record:
        right = str(record["answer"])
    elif g == "number":
        value = float(str(expected).replace(",", ""))
        right = str(int(value)) if value.is_integer() else repr(value)
    elif g == "json":
        import json

        right = json.dumps(expected)
    elif g in ("exact", "contains", "choice") or ref.custom is not None:
        right = str(expected)
    else:
        raise ValueError(f'{where}: the emulator cannot make an answer for grader {g}: add "answer", a right one')
    candidates: list[str] = []
    if g == "number":
        value = float(right)
        step = max(1.0, 2 * ref.tolerance + 1)
        wrong_value = value + step
        candidates.append(str(int(wrong_value)) if wrong_value.is_integer() else repr(wrong_value))
    elif g == "choice":
        candidates.append("B" if right.strip().upper() != "B" else "C")
    candidates.extend(_WRONG_TEXTS)
    if ref.custom is not None:  # a user's grader: the emulator cannot check; its truth says what it sent
        return right, candidates[0]
    words = _CONTENT_WORDS
    if not grade_text(ref, words + "\nAnswer: " + right).correct:
        raise ValueError(f'{where}: the emulator\'s right answer {right!r} does not pass grader {g}; give "answer"')
    for wrong in candidates:
        if grade_text(ref, words + "\nAnswer: " + wrong).correct is False:
            return right, wrong
    raise ValueError(f"{where}: the emulator finds no wrong answer that grader {g} refuses")


def answer_book(answers: str | os.PathLike[str] | Iterable[Mapping[str, Any]]) -> dict[str, tuple[str, str]]:
    """{prompt key: (right answer, wrong answer)} for the native emulator: keyed by each record's
    last text and by that text's last line (when no other record shares it), so a prompt padded
    before its question (pytps.workload.tasks) is still found."""
    book: dict[str, tuple[str, str]] = {}
    lines: dict[str, tuple[str, str] | None] = {}
    for where, record in _answer_records(answers):
        if not isinstance(record, Mapping):
            raise ValueError(f"{where}: expected a JSON object")
        pair = _right_and_wrong(where, record)
        if pair is None:
            continue
        for key in _prompt_keys(where, record):
            book[key] = pair
            last = next((ln.strip() for ln in reversed(key.splitlines()) if ln.strip()), "")
            if last:
                lines[last] = pair if last not in lines else None  # shared: ambiguous, left out
    for last, pair in lines.items():
        if pair is not None:
            book.setdefault(last, pair)
    return book


def _ns(value: float, name: str, scale: float, minimum: float = 0.0) -> int:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(v) or v < minimum:
        raise ValueError(f"{name} must be a finite number >= {minimum}, got {value!r}")
    return round(v * scale)


def _positive(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a number > 0, got {value!r}")
    return float(value)


def _ratio(value: Any, name: str, maximum: float = 100.0) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {value!r}") from None
    if not 0.0 <= v <= maximum:  # also refuses nan
        raise ValueError(f"{name} must be a number within [0, {maximum:g}], got {value!r}")
    return v


def _int(value: Any, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return value


class Emulator:
    """A streaming LLM endpoint emulator on 127.0.0.1 with ground-truth send times.

    ``with pytps.Emulator(ttft_ms=50, itl_us=500) as emu:`` starts it in the background;
    ``emu.base_url`` is ``http://127.0.0.1:<port>``. Endpoints: POST /v1/chat/completions,
    /v1/completions, /v1/responses, /v1/messages, /api/chat, /api/generate (each streamed or,
    with ``"stream": false``, one JSON body), /v1/embeddings, /api/embed, /v1/rerank; GET
    /v1/models, /health, /metrics.

    Seeds: a request's timing draws and whether it answers right are seeded by ``seed`` and its
    arrival count, or with ``draws_by_prompt`` by its prompt (and how many times that prompt came
    before): then the same item gets the same draws whatever order concurrent requests arrive in,
    and two emulators with one seed give each item the same draws (docs/emulator.md).

    Drift: ``ttft_ramp_ms_per_s`` adds that many ms to each request's TTFT per second since the
    emulator started (at the request's receipt): a planted slowdown (docs/emulator.md).

    Embeddings and rerank: one JSON body due ``embed_ms`` + ``embed_us_per_token`` x the input
    tokens after admission; vectors of ``embedding_dim`` components (or the request's
    ``dimensions``), a function of the seed and each text only (docs/emulator.md).

    Timing: the first token event is due ``ttft_ms`` (+ ``prefill_us_per_token`` x the prompt
    tokens the prefix cache did not serve) after the request was admitted (at once when it was fully received, unless
    ``max_batch`` requests are decoding: then it waits in a FIFO queue for a slot); each next
    event one inter-event gap later (``itl_us``, or drawn from ``itl_dist`` with ``itl_sd_us``,
    or cycled from ``itl_replay_us``), and with ``batch_slowdown`` s the gap grows to
    gap x (1 + s x (n - 1)) where n is the number of requests decoding when the event before
    it was due. Each event carries ``tokens_per_event`` tokens; ``coalesce`` events go
    in one write (0: whatever is due when a write is made). ``spin_us`` caps how long before a
    deadline the timing thread stops sleeping and busy-waits (precision for CPU; the window
    adapts below the cap to the wake-up lateness seen); ``realtime=True`` gives the timing
    thread SCHED_FIFO (root or CAP_SYS_NICE) so other load on its core cannot preempt it. See
    docs/emulator.md for every setting and rule.

    Answers: ``answers`` (a JSONL file of reference records, ``"tasks:NAMES:COUNT[:SEED]"``, or the
    records themselves) makes the content of each known prompt end with ``\nAnswer: <text>``, right
    with chance ``answer_accuracy`` minus ``answer_accuracy_drop`` per other request decoding at
    admission, wrong otherwise, in a way its grader tells apart (docs/emulator.md, "Answers").

    Prefix cache: ``prefix_cache_tokens`` > 0 keeps an LRU of that many tokens of prompt blocks
    (``prefix_cache_block_tokens`` each, 4 prompt bytes a token); a prompt's leading blocks found
    there are its cached tokens: they skip their prefill time, the truth records them
    (``cached_tokens``) and usage reports them (``prompt_tokens_details.cached_tokens``;
    Anthropic: ``cache_read_input_tokens``, with ``input_tokens`` the rest).

    Metrics: GET /metrics serves its truth under vLLM's names (requests running and waiting,
    prompt and generation token counters, prefix-cache hits and queries, a TTFT histogram); with
    ``power_idle_w`` / ``power_per_stream_w`` (W, and W per request holding a batch slot) also
    DCGM's power gauge and energy counter (mJ), so a run's energy is known in closed form.

    Agents: ``agent_turns`` K > 0 makes a request that offers ``tools`` an agent's turn: while the
    conversation holds fewer than K assistant turns with tool calls, the answer is
    ``agent_calls`` parallel tool calls (tools drawn from the request's, arguments fit to their
    JSON Schema, each invalid with chance ``agent_invalid``), else the final answer (graded when
    the answer book knows the task's first user message). The truth records the ``turn``, the
    ``tool_results`` received (call ids) and the ``tool_calls`` sent (docs/emulator.md, "Agents").

    Compressed speech: ``speech_clips={"mp3": (clip_bytes, audio_seconds), ...}`` answers a speech
    request for that response_format with the clip, whole, in chunks of ``speech_chunk_ms`` at
    the clip's average byte rate, paced by ``speech_rtf``
    (``pytps.workload.coded_speech.encoded_speech`` makes one; docs/voice.md).
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        ttft_ms: float = DEFAULT_TTFT_MS,
        ttft_dist: str = "fixed",
        ttft_sd_ms: float = 0.0,
        ttft_ramp_ms_per_s: float = 0.0,
        usage_overbill: float = 0.0,
        itl_us: float = DEFAULT_ITL_US,
        itl_dist: str = "fixed",
        itl_sd_us: float = 0.0,
        itl_replay_us: Sequence[float] | None = None,
        prefill_us_per_token: float = 0.0,
        embed_ms: float = 2.0,
        embed_us_per_token: float = 10.0,
        embedding_dim: int = 384,
        prefix_cache_tokens: int = 0,
        prefix_cache_block_tokens: int = 16,
        max_batch: int = 0,
        batch_slowdown: float = 0.0,
        tokens_per_event: int = 1,
        coalesce: int = 1,
        reasoning_tokens: int = 0,
        tool_calls: bool = False,
        agent_turns: int = 0,
        agent_calls: int = 1,
        agent_invalid: float = 0.0,
        keepalive_ms: float | None = None,
        max_output_tokens: int = 4096,
        default_output_tokens: int = 64,
        model: str = "pytps-emulator",
        faults: Iterable[str | Mapping[str, Any]] | None = None,
        seed: int = 0,
        draws_by_prompt: bool = False,
        spin_us: float = 60.0,
        realtime: bool = False,
        truth_log: str | None = None,
        keep_truth: bool = True,
        answers: str | os.PathLike[str] | Iterable[Mapping[str, Any]] | None = None,
        answer_accuracy: float = 1.0,
        answer_accuracy_drop: float = 0.0,
        power_idle_w: float = 0.0,
        power_per_stream_w: float = 0.0,
        speech_rtf: float = 0.5,
        speech_chunk_ms: float = 40.0,
        speech_words_per_s: float = 2.5,
        speech_sample_rate: int = 24000,
        stt_rtfx: float = 20.0,
        stt_word_error_rate: float = 0.0,
        stt_words_per_event: int = 1,
        stt_vllm_shape: bool = False,
        transcripts: Iterable[tuple[bytes, str]] | None = None,
        speech_clips: Mapping[str, tuple[bytes, float]] | None = None,
    ) -> None:
        if host != "127.0.0.1":
            raise ValueError(f"the emulator serves on 127.0.0.1 only, not {host!r}")
        _int(port, "port", 0)
        if port > 65535:
            raise ValueError(f"port must be within 0..65535 (0 picks a free one), got {port}")
        if ttft_dist not in _DISTS:
            raise ValueError(f"ttft_dist must be one of {', '.join(_DISTS)}, got {ttft_dist!r}")
        if itl_dist not in (*_DISTS, "replay"):
            raise ValueError(f"itl_dist must be one of {', '.join(_DISTS)} or 'replay', got {itl_dist!r}")
        replay: list[int] = []
        if itl_replay_us is not None:
            replay = [_ns(v, "itl_replay_us[]", 1e3) for v in itl_replay_us]
            if not replay:
                raise ValueError("itl_replay_us must hold at least one gap")
            if itl_dist == "fixed":
                itl_dist = "replay"
        if itl_dist == "replay" and not replay:
            raise ValueError("itl_dist='replay' needs itl_replay_us=[...]")
        if itl_dist in ("normal", "lognormal") and itl_sd_us <= 0:
            raise ValueError(f"itl_dist={itl_dist!r} needs itl_sd_us > 0")
        if ttft_dist in ("normal", "lognormal") and ttft_sd_ms <= 0:
            raise ValueError(f"ttft_dist={ttft_dist!r} needs ttft_sd_ms > 0")
        if itl_dist == "lognormal" and itl_us <= 0:
            raise ValueError("itl_dist='lognormal' needs itl_us > 0")
        _int(prefix_cache_tokens, "prefix_cache_tokens", 0)
        _int(embedding_dim, "embedding_dim", 1)
        if embedding_dim > 65536:
            raise ValueError(f"embedding_dim must be at most 65536, got {embedding_dim}")
        _int(prefix_cache_block_tokens, "prefix_cache_block_tokens", 1)
        _int(max_batch, "max_batch", 0)
        slowdown = _ratio(batch_slowdown, "batch_slowdown")
        _int(tokens_per_event, "tokens_per_event", 1)
        _int(coalesce, "coalesce", 0)
        _int(reasoning_tokens, "reasoning_tokens", 0)
        _int(max_output_tokens, "max_output_tokens", 1)
        _int(agent_turns, "agent_turns", 0)
        _int(agent_calls, "agent_calls", 1)
        if agent_calls > 64:
            raise ValueError(f"agent_calls must be within 1..64, got {agent_calls}")
        _int(default_output_tokens, "default_output_tokens", 1)
        _int(seed, "seed", 0)
        if not isinstance(model, str) or not model:
            raise ValueError("model must be a non-empty string")
        fault_list = [parse_fault(f) for f in (faults or [])]
        accuracy = _ratio(answer_accuracy, "answer_accuracy", 1.0)
        accuracy_drop = _ratio(answer_accuracy_drop, "answer_accuracy_drop", 1.0)
        book = answer_book(answers) if answers is not None else {}
        self._config: dict[str, Any] = {
            "host": host,
            "port": port,
            "ttft_ns": _ns(ttft_ms, "ttft_ms", 1e6),
            "ttft_dist": ttft_dist,
            "ttft_sd_ns": _ns(ttft_sd_ms, "ttft_sd_ms", 1e6),
            "ttft_ramp_ns_per_s": _ns(ttft_ramp_ms_per_s, "ttft_ramp_ms_per_s", 1e6),
            "usage_overbill": _ratio(usage_overbill, "usage_overbill", 10.0),
            "itl_ns": _ns(itl_us, "itl_us", 1e3),
            "itl_dist": itl_dist,
            "itl_sd_ns": _ns(itl_sd_us, "itl_sd_us", 1e3),
            "itl_replay_ns": replay,
            "prefill_ns_per_token": _ns(prefill_us_per_token, "prefill_us_per_token", 1e3),
            "embed_ns": _ns(embed_ms, "embed_ms", 1e6),
            "embed_ns_per_token": _ns(embed_us_per_token, "embed_us_per_token", 1e3),
            "embedding_dim": embedding_dim,
            "prefix_cache_tokens": prefix_cache_tokens,
            "prefix_cache_block_tokens": prefix_cache_block_tokens,
            "max_batch": max_batch,
            "batch_slowdown": slowdown,
            "power_idle_w": _ratio(power_idle_w, "power_idle_w", 1e6),
            "power_per_stream_w": _ratio(power_per_stream_w, "power_per_stream_w", 1e6),
            "tokens_per_event": tokens_per_event,
            "coalesce": coalesce,
            "reasoning_tokens": reasoning_tokens,
            "tool_calls": bool(tool_calls),
            "agent_turns": agent_turns,
            "agent_calls": agent_calls,
            "agent_invalid": _ratio(agent_invalid, "agent_invalid", 1.0),
            "keepalive_ns": 0 if keepalive_ms is None else _ns(keepalive_ms, "keepalive_ms", 1e6, 0.001),
            "max_output_tokens": max_output_tokens,
            "default_output_tokens": default_output_tokens,
            "model": model,
            "faults": fault_list,
            "seed": seed,
            "draws_by_prompt": bool(draws_by_prompt),
            "spin_ns": _ns(spin_us, "spin_us", 1e3),
            "realtime": bool(realtime),
            "truth_log": "" if truth_log is None else str(truth_log),
            "keep_truth": bool(keep_truth),
            "answer_accuracy": accuracy,
            "answer_accuracy_drop": accuracy_drop,
            # The audio routes (docs/voice.md): speech's real-time factor, chunk and pace, and
            # speech to text's processing speed, planted word errors and stream shape.
            "speech_rtf": _positive(speech_rtf, "speech_rtf"),
            "speech_chunk_ms": _positive(speech_chunk_ms, "speech_chunk_ms"),
            "speech_words_per_s": _positive(speech_words_per_s, "speech_words_per_s"),
            "speech_sample_rate": _int(speech_sample_rate, "speech_sample_rate", 1000),
            "stt_rtfx": _positive(stt_rtfx, "stt_rtfx"),
            "stt_word_error_rate": _ratio(stt_word_error_rate, "stt_word_error_rate", 1.0),
            "stt_words_per_event": _int(stt_words_per_event, "stt_words_per_event", 1),
            "stt_vllm_shape": bool(stt_vllm_shape),
        }
        # Transcripts of known audio files (the route knows a file by a hash of its bytes).
        book_of_transcripts = {bytes(audio): str(text) for audio, text in (transcripts or ())}
        clips: dict[str, tuple[bytes, float]] = {}
        for fmt, (clip, seconds) in (speech_clips or {}).items():
            if fmt in ("pcm", "wav") or not clip:
                raise ValueError(
                    f"speech_clips[{fmt!r}]: a compressed format's non-empty clip (pcm and wav are made here)"
                )
            clips[str(fmt)] = (bytes(clip), _positive(seconds, f"speech_clips[{fmt!r}] seconds"))
        self.answers = len(book)  # prompts whose reference the emulator knows
        self._native = _core.Emulator(
            {**self._config, "answers": book, "transcripts": book_of_transcripts, "speech_clips": clips}
        )

    # ---- lifecycle ----
    def start(self) -> Emulator:
        """Binds and starts serving in the background; returns self. Raises ValueError if the port is
        taken, or realtime=True is refused."""
        self._native.start()
        return self

    def stop(self) -> None:
        """Stops serving and closes every connection. Safe to call twice. Raises RuntimeError (once
        stopped) if the truth log could not be written."""
        self._native.stop()

    def __enter__(self) -> Emulator:
        if not self._native.running:
            self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- facts ----
    @property
    def port(self) -> int:
        """The bound port (0 before start())."""
        return self._native.port

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>``; the OpenAI base URL is this plus ``/v1``."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def running(self) -> bool:
        return self._native.running

    @property
    def config(self) -> dict[str, Any]:
        """The settings in the native units (ns) the timing engine uses."""
        return dict(self._config)

    def truth(self, clear: bool = False) -> list[dict[str, Any]]:
        """Ground truth: one dict per finished generation request, in finishing order.

        Keys: ``seq``, ``id`` (the response id the stream carries, also the ``x-request-id``
        header), ``api``, ``path``, ``status``, ``fault``, ``stream``, ``completed``,
        ``client_closed``, ``received_ns``, ``received_kernel_ns``, ``headers_sent_ns``, ``done_ns``,
        the load model's ``admitted_ns`` and ``released_ns`` (when the request got and freed a batch
        slot; 0 if it never held one) and ``queued_ns`` (how long it waited for one),
        ``prompt_tokens``, ``output_tokens``, ``reasoning_tokens``, ``planned_events``, ``keepalives``,
        ``answer`` (graded answers: ``"right"``, ``"wrong"``, or None for a prompt not in ``answers``)
        and ``answer_sent`` (the content token carrying it was written), the agent model's ``turn``
        (None: not an agent request), ``tool_results`` (``{"id", "chars"}`` per tool result the
        request carried for the last tool-call turn) and ``tool_calls`` (``{"id", "name",
        "arguments", "valid"}`` per call sent)
        and numpy arrays, one entry per event written: ``scheduled_ns`` and ``sent_ns`` (int64,
        CLOCK_MONOTONIC ns; sent is when the write returned), ``tokens`` (int32), ``kinds`` (uint8,
        the codes of ``pytps.KIND_*``: 0 content, 1 reasoning, 2 tool-call arguments) and ``batch``
        (int32, the requests decoding when the event's gap was decided). ``clear=True`` hands
        the records over and forgets them.
        """
        return self._native.truth(clear)

    def wait_truth(self, n: int, timeout_s: float = 5.0) -> list[dict[str, Any]]:
        """Waits until at least ``n`` records are kept (or ``timeout_s`` passes), then returns truth().

        A client holds a response's last bytes a moment before the emulator publishes its record
        (the record needs the time the last write returned), so read the truth through this.
        """
        self._native.wait_truth(n, timeout_s)
        return self.truth()

    def stats(self) -> dict[str, int]:
        """Counters of the native server (connections, requests, events, writes, bytes, faults, spins,
        sleeps: kernel waits with a timeout, parse_bytes: bytes the request parser examined) and the
        load model's state now: ``decoding`` (requests holding a batch slot), ``queued`` (waiting)."""
        return self._native.stats()

    def __repr__(self) -> str:
        state = f"serving on {self.base_url}" if self.running else "stopped"
        return f"<pytps.Emulator {state}>"
