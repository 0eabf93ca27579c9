"""A generation request's JSON body, written once per shape and filled with each prompt's text.

The body of a text prompt's request is the same bytes but for the prompt's text wherever the
model, max_tokens, the stream and usage options and the extra body are the same: a synthetic
run's every request. build_request() and the dict's JSON were ~1.5 us of a short request's client
CPU (issue 42); a shape's body is now built once, by build_request() with a marker for the text,
and split at the marker's JSON string, so a request's body is the part before, the text's JSON
string (dumps_body, as in the whole body) and the part after: the same bytes, since a JSON
encoder writes a value the same wherever it sits. tests/runner/test_body_templates.py holds the
two to the same bytes.

A prompt of messages of its own, or with images, is built whole, as before.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

from pytps.measure.fast_json import dumps_body
from pytps.workload import request_formats

# Where the text goes while a shape's body is built: no prompt's text is ever split on it, since
# the split is made once, on the template's bytes, which hold no prompt.
_MARKER = "\x00pytps-prompt-text\x00"
_MARKER_JSON = dumps_body(_MARKER)
# Shapes kept: a run has one or a few (max_tokens varies with --output-tokens' distribution).
_MAX_SHAPES = 256


class _MarkerPrompt:
    """A text prompt whose text is the marker (build_request's PromptLike)."""

    def __init__(self, max_tokens: int) -> None:
        self.messages: list[dict[str, Any]] | None = None
        self.text: str | None = _MARKER
        self.max_tokens = max_tokens


class BodyTemplates:
    """build_request() of a run's prompts as (path, body bytes), a shape's body made once."""

    def __init__(self, api: str, extra_body: Mapping[str, Any] | None) -> None:
        self.api = api
        self.extra_body = extra_body
        # Each shape's template, or None where it has none (built whole), made once.
        self._shape = functools.lru_cache(maxsize=_MAX_SHAPES)(self._template)

    def request(
        self,
        model: str,
        prompt: Any,
        *,
        stream: bool,
        include_usage: bool,
        images: Sequence[Any] = (),
    ) -> tuple[str, bytes]:
        """(path, dumps_body(body)) of request_formats.build_request(self.api, model, prompt, ...)."""
        text = prompt.text
        messages = prompt.messages
        if (
            not images
            and type(text) is str
            and type(messages) is list
            and len(messages) == 1
            and type(messages[0]) is dict
            and len(messages[0]) == 2
            and messages[0].get("content") is text
            and messages[0].get("role") == "user"
        ):
            shape = self._shape(model, prompt.max_tokens, stream, include_usage)
            if shape is not None:
                path, before, after = shape
                return path, before + dumps_body(text) + after
        path, body = request_formats.build_request(
            self.api, model, prompt, stream=stream, include_usage=include_usage, extra_body=self.extra_body,
            images=images,
        )  # fmt: skip
        return path, dumps_body(body)

    def _template(
        self, model: str, max_tokens: int, stream: bool, include_usage: bool
    ) -> tuple[str, bytes, bytes] | None:
        """The shape's (path, bytes before the text, bytes after), or None when the marker is not
        in the body exactly once (an extra body that replaces the prompt, say): built whole then.
        A shape build_request refuses (a bad max_tokens) is not kept: the request raises as before."""
        path, body = request_formats.build_request(
            self.api, model, _MarkerPrompt(max_tokens), stream=stream, include_usage=include_usage,
            extra_body=self.extra_body,
        )  # fmt: skip
        data = dumps_body(body)
        if data.count(_MARKER_JSON) != 1:
            return None
        before, _, after = data.partition(_MARKER_JSON)
        return path, before, after
