"""What an embeddings or rerank request carries, taken from the run's workload.

Request i of a run with `--batch-size N` embeds the texts of the workload's prompts i*N .. i*N+N-1
(synthetic prompts of --input-tokens each, or --dataset records in their order); a rerank request
with `--documents N` ranks prompts i*(N+1)+1 .. i*(N+1)+N against prompt i*(N+1) as its query, so
the query and every document are --input-tokens long. A prompt's text is its messages' text
joined as request_formats sends it to a completions endpoint.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pytps.errors import ConfigError
from pytps.workload import request_formats

#: Inputs one request may carry: past it a run measures the client building bodies.
MAX_INPUTS = 4096


@dataclass(frozen=True)
class InputShape:
    """The settings of the body APIs: texts per embeddings request, documents per rerank query,
    and the options passed through (None: not sent, the server's default)."""

    batch_size: int = 1
    documents: int = 8
    top_n: int | None = None
    encoding_format: str | None = None
    dimensions: int | None = None

    def validate(self, api: str) -> InputShape:
        for name, value, flag in (
            ("batch_size", self.batch_size, "--batch-size"),
            ("documents", self.documents, "--documents"),
        ):
            if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_INPUTS:
                raise ConfigError(f"{name} ({flag}) must be an integer from 1 to {MAX_INPUTS}, got {value!r}")
        if self.top_n is not None and not 1 <= self.top_n <= self.documents:
            raise ConfigError(f"top_n (--top-n) must be from 1 to --documents ({self.documents}), got {self.top_n}")
        if self.dimensions is not None and self.dimensions < 1:
            raise ConfigError(f"dimensions (--dimensions) must be >= 1, got {self.dimensions}")
        if self.encoding_format is not None and self.encoding_format not in request_formats.ENCODING_FORMATS:
            raise ConfigError(
                f"encoding_format (--encoding-format) must be one of {', '.join(request_formats.ENCODING_FORMATS)}"
            )
        if api not in request_formats.BODY_APIS:
            changed = [
                flag
                for flag, value, default in (
                    ("--batch-size", self.batch_size, 1),
                    ("--documents", self.documents, 8),
                    ("--top-n", self.top_n, None),
                    ("--encoding-format", self.encoding_format, None),
                    ("--dimensions", self.dimensions, None),
                )
                if value != default
            ]
            if changed:
                raise ConfigError(
                    f"{', '.join(changed)} shape embeddings and rerank requests: use --api "
                    f"{' or '.join(request_formats.BODY_APIS)}"
                )
        elif api == "rerank" and (self.encoding_format is not None or self.dimensions is not None):
            raise ConfigError("--encoding-format and --dimensions are embeddings options, not rerank's")
        return self

    def inputs(self, api: str) -> int:
        """Inputs one request carries: its texts, or its documents."""
        return self.documents if api == "rerank" else self.batch_size


def body_request(
    shape: InputShape, api: str, model: str, prompt: Any, i: int, extra_body: dict[str, Any] | None
) -> tuple[str, dict[str, Any], int]:
    """(path, body, planned input tokens) of request i; prompt(k) gives the workload's prompt k."""
    n = shape.inputs(api)
    first = i * (n + 1) if api == "rerank" else i * n
    prompts = [prompt(first + k) for k in range(n + (api == "rerank"))]
    texts = [request_formats.prompt_text(p) for p in prompts]
    planned = sum(p.planned_tokens or 0 for p in prompts)
    if api == "rerank":
        path, body = request_formats.build_body_request(
            api, model, texts[1:], query=texts[0], top_n=shape.top_n, extra_body=extra_body
        )
    else:
        path, body = request_formats.build_body_request(
            api, model, texts, encoding_format=shape.encoding_format, dimensions=shape.dimensions, extra_body=extra_body
        )
    return path, body, planned
