"""What differs between the streaming APIs pytps speaks, on the request side.

The runner builds every request through build_request() and auth_headers(), lists models with
models_path()/parse_models(), and turns failures into messages with describe_error(); nothing
else in it knows an API's field names. The response side is the StreamRecorder's dialect (same
names as API_NAMES).

Secrets: every message built here from server text goes through the caller's redactor
(pytps.measure.redact.Redactor: the one rule), and API keys are never put into an error message,
so nothing logged or saved from these helpers can leak a key.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from pytps._native import _core
from pytps.errors import ConfigError, ProtocolError
from pytps.workload.datasets import content_text

if TYPE_CHECKING:
    from pytps.workload.images import Image

__all__ = [
    "ALL_APIS",
    "ANTHROPIC_VERSION",
    "API_NAMES",
    "AUDIO_APIS",
    "BODY_APIS",
    "EMBEDDING_APIS",
    "REALTIME_API",
    "auth_headers",
    "build_body_request",
    "build_request",
    "default_api_key_env",
    "describe_error",
    "models_path",
    "parse_models",
    "rejects_usage_request",
]

#: The generation APIs pytps speaks: the native core's dialects (the response side), the one list.
API_NAMES: tuple[str, ...] = tuple(_core.DIALECTS)
#: The APIs that answer with one JSON body (the core's kBodyApiPaths): embeddings and rerank.
BODY_APIS: tuple[str, ...] = tuple(_core.BODY_API_PATHS)
EMBEDDING_APIS: tuple[str, ...] = ("openai-embeddings", "ollama-embed")
#: The audio APIs (the core's kAudioApiPaths): text to speech and speech to text (pytps.runner.voice).
AUDIO_APIS: tuple[str, ...] = tuple(_core.AUDIO_API_PATHS)
#: Realtime transcription over WebSocket (pytps.runner.voice_realtime).
REALTIME_API = "openai-realtime"
#: Every --api choice.
ALL_APIS: tuple[str, ...] = API_NAMES + BODY_APIS + AUDIO_APIS + (REALTIME_API,)
#: The dialect a whole JSON body is read with (embeddings, rerank, "stream": false).
JSON_DIALECT = "json"
ENCODING_FORMATS = ("float", "base64")
#: The Messages API version pytps speaks; Anthropic requires the header on every request.
ANTHROPIC_VERSION = "2023-06-01"

#: Where each API's requests go: its default path (the core's table, first of its paths).
_PATHS = {api: paths[0] for api, paths in _core.DIALECT_PATHS.items()} | dict(_core.BODY_API_PATHS)
_MIN_SECRET = 4  # shorter strings would redact ordinary words and prove nothing


class PromptLike(Protocol):
    messages: list[dict[str, Any]] | None
    text: str | None
    max_tokens: int


def check_api(api: str) -> str:
    """Return api if it is one of ALL_APIS, else raise ConfigError listing them."""
    if api not in ALL_APIS:
        raise ConfigError(f"unknown API {api!r}: use one of {', '.join(ALL_APIS)}")
    return api


def response_dialect(api: str, stream: bool) -> str:
    """How a response is read: the API's stream dialect, or "json" for a whole body (the body APIs,
    and a generation request sent with stream false)."""
    return api if stream and api in API_NAMES else JSON_DIALECT


def build_body_request(
    api: str,
    model: str,
    texts: list[str],
    *,
    query: str | None = None,
    top_n: int | None = None,
    encoding_format: str | None = None,
    dimensions: int | None = None,
    extra_body: Mapping[str, Any] | None = None,
) -> tuple[str, dict[str, Any]]:
    """(path, JSON body) of an embeddings or rerank request.

    openai-embeddings: {model, input: [texts], encoding_format?, dimensions?} (OpenAI, vLLM, TEI's
    OpenAI route, llama.cpp); ollama-embed: {model, input: [texts], dimensions?} (Ollama's
    /api/embed); rerank: {model, query, documents: [texts], top_n?} (Cohere v2, Jina, vLLM, TEI's
    Cohere-style route, llama.cpp). Options are sent only when given, so a server's default holds.
    """
    if api not in BODY_APIS:
        raise ConfigError(f"{api!r} is not an embeddings or rerank API: use one of {', '.join(BODY_APIS)}")
    if not isinstance(model, str) or not model.strip():
        raise ConfigError("a model name is required (--model); the server's /models list shows the choices")
    if not texts:
        raise ConfigError("an embeddings or rerank request needs at least one input text")
    body: dict[str, Any] = {"model": model}
    if api == "rerank":
        if query is None:
            raise ConfigError("a rerank request needs a query")
        body.update(query=query, documents=list(texts))
        if top_n is not None:
            body["top_n"] = top_n
    else:
        body["input"] = list(texts)
        if encoding_format is not None:
            if api != "openai-embeddings":
                raise ConfigError("--encoding-format is an OpenAI embeddings option: use --api openai-embeddings")
            if encoding_format not in ENCODING_FORMATS:
                raise ConfigError(f"--encoding-format must be one of {', '.join(ENCODING_FORMATS)}")
            body["encoding_format"] = encoding_format
        if dimensions is not None:
            body["dimensions"] = dimensions
    if extra_body is not None:
        if not isinstance(extra_body, Mapping):
            raise ConfigError(f"extra body must be a JSON object, got {type(extra_body).__name__}")
        _merge(body, extra_body)
    return _PATHS[api], body


def build_request(
    api: str,
    model: str,
    prompt: PromptLike,
    *,
    stream: bool = True,
    include_usage: bool = True,
    extra_body: Mapping[str, Any] | None = None,
    images: Sequence[Image] = (),
) -> tuple[str, dict[str, Any]]:
    """(path, JSON body) of one generation request.

    images go with the last user message, in each API's own form: OpenAI Chat `image_url` parts
    (data URIs), Responses `input_image` parts, Anthropic base64 `image` blocks (before the text,
    as Anthropic advises), Ollama's `images` list; openai-completions takes none.

    openai-chat sends max_tokens, not max_completion_tokens: every OpenAI-compatible server
    (vLLM, SGLang, TGI, llama.cpp, Ollama) accepts it, while OpenAI's own reasoning models want
    the newer name; for those pass extra_body={"max_tokens": None, "max_completion_tokens": N}.
    include_usage asks OpenAI-style streams for a final usage chunk (stream_options), the only
    way to learn token counts from a stream; Anthropic, Responses and Ollama always report usage.
    extra_body is merged last, recursively for nested objects, so it can set anything (ignore_eos,
    temperature, vLLM's stream_options.continuous_usage_stats); a None value deletes the key.
    """
    if check_api(api) not in API_NAMES:
        raise ConfigError(f"{api!r} does not generate: build its requests with build_body_request")
    if not isinstance(model, str) or not model.strip():
        raise ConfigError("a model name is required (--model); the server's /models list shows the choices")
    messages, text = _prompt_parts(prompt)
    max_tokens = prompt.max_tokens
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
        raise ConfigError(f"max_tokens must be an integer >= 1, got {max_tokens!r}")
    usage = {"stream_options": {"include_usage": True}} if stream and include_usage else {}
    if images and api == "openai-completions":
        raise ConfigError("openai-completions takes a prompt string, not images: use --api openai-chat")

    body: dict[str, Any]
    if api == "openai-chat":
        body = {"model": model, "messages": messages, "max_tokens": max_tokens, "stream": stream, **usage}
    elif api == "openai-completions":
        body = {"model": model, "prompt": text, "max_tokens": max_tokens, "stream": stream, **usage}
    elif api == "openai-responses":
        # Usage arrives in response.completed; Responses has no stream_options. Plain-string
        # content is the form every implementation accepts.
        inputs = [{"role": m["role"], "content": content_text(m.get("content"))} for m in messages]
        body = {"model": model, "input": inputs, "max_output_tokens": max_tokens, "stream": stream}
    elif api == "anthropic":
        # The Messages API takes the system prompt as a top-level field, not as a message.
        system = "\n\n".join(content_text(m.get("content")) for m in messages if m.get("role") == "system")
        body = {
            "model": model,
            "messages": [m for m in messages if m.get("role") != "system"],
            "max_tokens": max_tokens,
        }
        if system:
            body["system"] = system
        body["stream"] = stream
    else:  # ollama: content must be a string; it streams unless told not to
        inputs = [{**m, "content": content_text(m.get("content"))} for m in messages]
        body = {"model": model, "messages": inputs, "stream": stream, "options": {"num_predict": max_tokens}}

    if images:
        _attach_images(api, body, images)
    if extra_body is not None:
        if not isinstance(extra_body, Mapping):
            raise ConfigError(f"extra body must be a JSON object, got {type(extra_body).__name__}")
        _merge(body, extra_body)
    return _PATHS[api], body


def _attach_images(api: str, body: dict[str, Any], images: Sequence[Image]) -> None:
    messages = body["input"] if api == "openai-responses" else body["messages"]
    last = next((m for m in reversed(messages) if m.get("role") == "user"), None)
    if last is None:
        raise ConfigError("images go with a user message, and the prompt has none")
    text = content_text(last.get("content"))
    if api == "openai-chat":
        parts: list[dict[str, Any]] = [{"type": "text", "text": text}]
        last["content"] = parts + [{"type": "image_url", "image_url": {"url": im.data_uri}} for im in images]
    elif api == "openai-responses":
        parts = [{"type": "input_text", "text": text}]
        last["content"] = parts + [{"type": "input_image", "image_url": im.data_uri} for im in images]
    elif api == "anthropic":
        blocks = [
            {"type": "image", "source": {"type": "base64", "media_type": im.mime, "data": im.base64}} for im in images
        ]
        last["content"] = [*blocks, {"type": "text", "text": text}]
    else:  # ollama
        last["images"] = [im.base64 for im in images]


def prompt_text(prompt: PromptLike) -> str:
    """A prompt as one text: its text, or its messages' text joined (what a completions endpoint
    is sent, and what an embeddings or rerank request carries)."""
    text = prompt.text
    return text if text is not None else _prompt_parts(prompt)[1]


def _prompt_parts(prompt: PromptLike) -> tuple[list[dict[str, Any]], str]:
    messages, text = prompt.messages, prompt.text
    if messages is None and text is None:
        raise ConfigError("the prompt has neither messages nor text")
    if messages is None:
        # Made here, shared with no one: nothing to copy (a deep copy per request was ~2% of a
        # short request's client CPU, issue 42).
        assert text is not None
        return [{"role": "user", "content": text}], text
    if text is None:
        text = "\n\n".join(t for t in (content_text(m.get("content")) for m in messages) if t)
    return _copy_messages(messages), text


def _copy_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """copy.deepcopy(messages): a copy of each message when its keys and values are strings (a text
    prompt's, the usual case: immutable values make the copy as deep as deepcopy's, without its
    memo and dispatch, ~2% of a short request's client CPU, issue 42); else deepcopy."""
    if type(messages) is list and all(
        type(m) is dict and _STR.issuperset(map(type, m.values())) and _STR.issuperset(map(type, m)) for m in messages
    ):
        return [dict(m) for m in messages]
    return copy.deepcopy(messages)


_STR = frozenset((str,))


def _merge(base: dict[str, Any], extra: Mapping[str, Any]) -> None:
    for key, value in extra.items():
        if value is None:
            base.pop(key, None)
        elif isinstance(value, Mapping) and isinstance(base.get(key), dict):
            _merge(base[key], value)
        else:
            base[key] = copy.deepcopy(value)


def rejects_usage_request(status: int, error_text: str) -> bool:
    """Whether an error response looks like a server refusing stream_options, the case for the
    retry without the usage request. Anything else is a real error and is reported as such."""
    text = error_text.lower()
    return status in (400, 422) and ("stream_options" in text or "include_usage" in text)


def auth_headers(api: str, api_key: str | None) -> dict[str, str]:
    """Headers that authenticate a request: Bearer for OpenAI-style servers, x-api-key plus the
    mandatory anthropic-version for Anthropic, nothing for Ollama unless a key is given (a proxy
    in front of it may want one). Surrounding whitespace (a key file's newline) is dropped."""
    check_api(api)
    if api_key is not None and not isinstance(api_key, str):
        raise ConfigError(f"API key must be a string, got {type(api_key).__name__}")
    key = api_key.strip() if api_key else None
    if key and any(ord(ch) < 0x20 or ord(ch) > 0x7E for ch in key):
        # Never echo the key: this message may be printed or logged.
        raise ConfigError(
            "API key contains a control or non-ASCII character (a line break pasted in?): "
            f"check where it came from (e.g. ${default_api_key_env(api)})"
        )
    if api == "anthropic":
        headers = {"anthropic-version": ANTHROPIC_VERSION}
        if key:
            headers["x-api-key"] = key
        return headers
    return {"Authorization": f"Bearer {key}"} if key else {}


def default_api_key_env(api: str) -> str:
    """The environment variable the provider's own SDK reads the key from."""
    return "ANTHROPIC_API_KEY" if check_api(api) == "anthropic" else "OPENAI_API_KEY"


def models_path(api: str) -> str:
    """Where the server lists its models (GET)."""
    return "/api/tags" if check_api(api) in ("ollama", "ollama-embed") else "/v1/models"


def parse_models(api: str, body: Mapping[str, Any] | str | bytes, redactor: Callable[[str], str] = str) -> list[str]:
    """Model names from a models_path() response: {"data": [{"id"}]} (OpenAI, Anthropic) or
    {"models": [{"name"}]} (Ollama). A body of another shape raises ProtocolError quoting it
    (redacted, shortened), since that usually means the URL points at something else."""
    check_api(api)
    where = models_path(api)
    if isinstance(body, (str, bytes, bytearray)):
        try:
            body = json.loads(body)
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise ProtocolError(f"{where} did not answer JSON: {_quote(body, redactor)}") from None
    listed, key = ("models", "name") if api in ("ollama", "ollama-embed") else ("data", "id")
    items = body.get(listed) if isinstance(body, Mapping) else None
    if not isinstance(items, list):
        raise ProtocolError(f'{where} answered without a "{listed}" list: {_quote(body, redactor)}')
    names = [item.get(key) for item in items if isinstance(item, Mapping)]
    return [name for name in names if isinstance(name, str)]


def describe_error(status: int, body: str | bytes, redactor: Callable[[str], str] = str) -> str:
    """One line for a failed request: "HTTP 401: <the server's message>", with the message dug
    out of the usual error shapes ({"error": {"message"}} for OpenAI and Anthropic, {"error": "..."}
    for Ollama, {"detail"} for FastAPI servers), redacted and shortened."""
    text = body.decode("utf-8", "replace") if isinstance(body, (bytes, bytearray)) else str(body)
    message: Any = text
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError:
        parsed = None
    if isinstance(parsed, Mapping):
        err = parsed.get("error", parsed.get("detail", parsed.get("message")))
        if isinstance(err, Mapping):
            err = err.get("message", err)
        if err is not None:
            message = err
    return f"HTTP {status}: {_quote(message, redactor)}"


def _quote(value: Any, redactor: Callable[[str], str], limit: int = 300) -> str:
    if isinstance(value, (bytes, bytearray)):
        value = value.decode("utf-8", "replace")
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    # Redact before shortening, so a key cut in half by the limit cannot slip through.
    text = redactor(" ".join(text.split()))
    return text if len(text) <= limit else text[: limit - 3] + "..."
