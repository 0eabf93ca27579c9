"""Reading prompt datasets from disk: JSONL records or a ShareGPT JSON file.

This module only parses and validates; pytps.workload.synthetic.DatasetWorkload turns the records into
requests. Every problem is a ConfigError that names the file and the line (JSONL) or record
(JSON list), because a benchmark that dies on request 3,000 over a typo in the dataset wastes the
whole run: everything is checked when the file is loaded, before any request is sent.
"""

from __future__ import annotations

import itertools
import json
import os
from dataclasses import dataclass, replace
from typing import Any

from pytps.errors import ConfigError

#: Tokens per whitespace-separated English word for BPE tokenizers (GPT, Llama, Qwen, Mistral
#: families): ~0.75 words per token is the usual rule of thumb. Only an estimate; the synthetic
#: workload calibrates it against what the server reports.
DEFAULT_TOKENS_PER_WORD = 1.3

_HUMAN_ROLES = ("human", "user")
_GPT_ROLES = ("gpt", "assistant", "chatgpt", "bard", "bing", "model")


def estimate_tokens(text: str, tokens_per_word: float = DEFAULT_TOKENS_PER_WORD) -> int:
    """A tokenizer-free estimate of how many tokens `text` is (at least 1).

    Words x tokens_per_word fits English prose; code and punctuation-heavy text run closer to
    4 ASCII characters a token, and CJK text has no spaces but ~1 token per character. Taking the
    larger of the two estimates keeps any of these from being grossly undercounted.
    """
    words = len(text.split())
    # C-speed count (a ShareGPT dump has ~100 MB of replies to measure).
    non_ascii = 0 if text.isascii() else len(text) - len(text.encode("ascii", "ignore"))
    by_chars = (len(text) - non_ascii) / 4 + non_ascii
    return max(1, round(max(words * tokens_per_word, by_chars)))


def content_text(content: Any) -> str:
    """The text of a chat message's content: a string, or the "text" of OpenAI/Anthropic-style
    content parts ([{"type": "text", "text": ...}]); other parts (images) contribute nothing."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def messages_text(messages: list[dict[str, Any]]) -> str:
    """All message contents joined by blank lines: the prompt a completion-style API gets for a chat record."""
    return "\n\n".join(t for t in (content_text(m.get("content")) for m in messages) if t)


@dataclass(frozen=True)
class DatasetRecord:
    """One usable prompt. Exactly one of messages / text is set (what the file gave).

    max_tokens: the record's own max_tokens, if any. reference_output_tokens: the estimated length
    of the recorded reply (ShareGPT), which benchmarks use as max_tokens to replay realistic
    output lengths. where: "path:line" or "path[record]", for messages about this record.
    """

    messages: list[dict[str, Any]] | None
    text: str | None
    max_tokens: int | None
    reference_output_tokens: int | None
    where: str
    # Graded answers: the record as given (its reference keys among the rest; None for ShareGPT),
    # and the item's id (the record's "id", else where), the same in every run over the file.
    reference: dict[str, Any] | None = None
    item: str | None = None
    # Image files the record names ("images": [paths], relative to the dataset file), sent with
    # its last user message (pytps.workload.images.load_image).
    images: tuple[str, ...] = ()


@dataclass(frozen=True)
class LoadedDataset:
    """The usable records and how many ShareGPT conversations were skipped (no human turn, or no
    reply when one was needed); the skip count belongs in the run's metadata."""

    records: list[DatasetRecord]
    skipped: int
    format: str  # "jsonl" | "json"


#: The longest line a dataset may have (characters): reading stops there with an error naming
#: the line, so an endless input (a device, a stream without newlines) cannot take the memory.
MAX_LINE_CHARS = 256 << 20


def read_dataset_text(name: str) -> str:
    """A dataset's text: a regular file, or "-" for stdin, read line by line, no line longer than
    MAX_LINE_CHARS. ConfigError (one line, naming the file and the line) otherwise."""
    import stat
    import sys

    if name != "-":
        try:
            mode = os.stat(name).st_mode
        except FileNotFoundError:
            raise ConfigError(f"dataset file not found: {name}") from None
        except OSError as e:
            raise ConfigError(f"cannot read dataset file {name}: {e.strerror}") from None
        if stat.S_ISDIR(mode):
            raise ConfigError(f"dataset path is a directory, not a file: {name}")
        if not stat.S_ISREG(mode):
            raise ConfigError(
                f"dataset {name} is not a regular file (a device, a FIFO or a socket): give a file, or - to read stdin"
            )
    lines: list[str] = []
    try:
        f = sys.stdin if name == "-" else open(name, encoding="utf-8")  # noqa: SIM115 - closed below
        try:
            for lineno in itertools.count(1):
                line = f.readline(MAX_LINE_CHARS + 1)
                if not line:
                    break
                if len(line) > MAX_LINE_CHARS:
                    raise ConfigError(
                        f"{name}:{lineno}: a line longer than {MAX_LINE_CHARS:,} characters; "
                        "give one record per line (JSONL), or a JSON list over several lines"
                    )
                lines.append(line)
        finally:
            if f is not sys.stdin:
                f.close()
    except UnicodeDecodeError as e:
        raise ConfigError(f"dataset file {name} is not UTF-8 text ({e.reason} at byte {e.start})") from None
    except OSError as e:
        raise ConfigError(f"cannot read dataset file {name}: {e.strerror}") from None
    return "".join(lines)


def load_dataset(path: str | os.PathLike[str], need_output_length: bool = True) -> LoadedDataset:
    """Read and validate a dataset file.

    Formats, told apart by the first non-blank character:
      - JSONL ('{'): one object per line with "prompt" (str) or "messages" (chat list), optional
        "max_tokens"; a line may also be a ShareGPT record ({"conversations": [...]}).
      - JSON list ('['): ShareGPT ({"conversations": [{"from": "human"|"gpt", "value": ...}]}) or
        the same objects as JSONL lines.
    need_output_length: no output length is given from outside, so every record must carry
    max_tokens or a reply to measure; records that cannot are an error (JSONL prompts) or skipped
    (ShareGPT conversations, as vLLM's benchmark does).
    """
    name = os.fspath(path)
    raw = read_dataset_text(name)

    stripped = raw.lstrip()
    if not stripped:
        raise ConfigError(f"dataset file {name} is empty: give JSONL prompt records or a ShareGPT JSON list")
    if stripped[0] == "[":
        try:
            items = json.loads(raw)
        except json.JSONDecodeError as e:
            raise ConfigError(f"{name}:{e.lineno}: not valid JSON ({e.msg}, column {e.colno})") from None
        except RecursionError:
            raise ConfigError(f"{name}: {TOO_DEEP}") from None
        located = [(f"{name}[{k}]", item) for k, item in enumerate(items)]
        fmt = "json"
    else:
        located = []
        for lineno, line in enumerate(raw.splitlines(), 1):
            if not line.strip():
                continue
            try:
                located.append((f"{name}:{lineno}", json.loads(line)))
            except RecursionError:
                raise ConfigError(f"{name}:{lineno}: {TOO_DEEP}") from None
            except json.JSONDecodeError as e:
                hint = ""
                if lineno == 1 and _is_json_object(raw):
                    hint = "; the file is one JSON object: use one record per line (JSONL) or a JSON list"
                raise ConfigError(f"{name}:{lineno}: not valid JSON ({e.msg}, column {e.colno}){hint}") from None
        fmt = "jsonl"

    records: list[DatasetRecord] = []
    skipped = 0
    seen: dict[str, str] = {}
    for where, item in located:
        rec = _parse_record(where, item, need_output_length)
        if rec is None:
            skipped += 1
            continue
        if isinstance(item, dict) and "images" in item:
            rec = replace(rec, images=_image_paths(where, item["images"], os.path.dirname(name)))
        if isinstance(item, dict) and item.get("id") is not None:
            if rec.item in seen:
                raise ConfigError(
                    f"{where}: id {rec.item!r} repeats the id of {seen[rec.item]}: give each record its own id"
                )
            seen[str(rec.item)] = where
        records.append(rec)
    if not records:
        why = f" ({skipped} conversations skipped: no human turn or no reply)" if skipped else ""
        raise ConfigError(f"dataset file {name} has no usable prompts{why}")
    return LoadedDataset(records, skipped, fmt)


#: A record nested deeper than Python's JSON parser goes (its recursion limit, about 1,000 levels).
TOO_DEEP = "the record is nested too deep for the JSON parser (about 1,000 levels at most): flatten it"


def _image_paths(where: str, value: Any, base: str) -> tuple[str, ...]:
    """A record's "images": a list of image files, each relative to the dataset's folder."""
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ConfigError(f'{where}: "images" must be a list of image file paths')
    paths = tuple(os.path.join(base, v) for v in value)
    for path in paths:
        if not os.path.isfile(path):
            raise ConfigError(f"{where}: image {path}: no such file")
    return paths


def _is_json_object(raw: str) -> bool:
    try:
        return isinstance(json.loads(raw), dict)
    except (json.JSONDecodeError, RecursionError):
        return False


def _parse_record(where: str, item: Any, need_output_length: bool) -> DatasetRecord | None:
    if not isinstance(item, dict):
        raise ConfigError(f"{where}: expected a JSON object, got {type(item).__name__}")
    max_tokens = item.get("max_tokens")
    if max_tokens is not None and (not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1):
        raise ConfigError(f"{where}: max_tokens must be an integer >= 1, got {max_tokens!r}")

    if "prompt" in item:
        text = item["prompt"]
        if not isinstance(text, str) or not text:
            raise ConfigError(f"{where}: prompt must be a non-empty string")
        rec = DatasetRecord(None, text, max_tokens, None, where)
    elif "messages" in item:
        rec = DatasetRecord(_check_messages(where, item["messages"]), None, max_tokens, None, where)
    elif "conversations" in item:
        return _parse_sharegpt(where, item["conversations"], max_tokens, need_output_length)
    else:
        keys = ", ".join(sorted(map(str, item))) or "none"
        raise ConfigError(
            f'{where}: record has no "prompt" (string), "messages" (chat list) or "conversations" (ShareGPT); '
            f"keys: {keys}"
        )
    # A prompt without max_tokens (and no output length given) is sent with the documented default,
    # DEFAULT_OUTPUT_TOKENS of pytps.workload.synthetic, and counted in results.json.
    ident = item.get("id")
    if ident is not None and not isinstance(ident, (str, int)):
        raise ConfigError(f"{where}: id must be a string or an integer, got {ident!r}")
    # The whole record: a user's grader gets it as given (docs/grading.md).
    return replace(rec, reference=dict(item), item=str(ident) if ident is not None else where)


def _check_messages(where: str, messages: Any) -> list[dict[str, Any]]:
    if not isinstance(messages, list) or not messages:
        raise ConfigError(f"{where}: messages must be a non-empty list of {{'role', 'content'}} objects")
    for k, m in enumerate(messages):
        if not isinstance(m, dict) or not isinstance(m.get("role"), str) or "content" not in m:
            raise ConfigError(f"{where}: messages[{k}] must be an object with a string 'role' and a 'content'")
        if not isinstance(m["content"], (str, list)):
            raise ConfigError(f"{where}: messages[{k}].content must be a string or a list of content parts")
    return messages


def _parse_sharegpt(where: str, turns: Any, max_tokens: int | None, need_output_length: bool) -> DatasetRecord | None:
    """First human turn as the prompt; the first reply after it gives the reference output length.
    Unusable conversations are skipped, not errors: public ShareGPT dumps contain many."""
    if not isinstance(turns, list):
        raise ConfigError(f"{where}: conversations must be a list of {{'from', 'value'}} objects")
    prompt = None
    for k, turn in enumerate(turns):
        if not isinstance(turn, dict):
            raise ConfigError(f"{where}: conversations[{k}] must be an object with 'from' and 'value'")
        role, value = turn.get("from"), turn.get("value")
        if not isinstance(value, str) or not value.strip():
            continue
        if prompt is None and role in _HUMAN_ROLES:
            prompt = value
        elif prompt is not None and role in _GPT_ROLES:
            return DatasetRecord(None, prompt, max_tokens, estimate_tokens(value), where)
    if prompt is None or (need_output_length and max_tokens is None):
        return None
    return DatasetRecord(None, prompt, max_tokens, None, where)
