"""Local token counting with a Hugging Face tokenizer.json, for servers that report no usage.

Optional: needs the `tokenizers` package (pip install tokenizers). Used only when a
response carried no usage (docs/metrics.md, "output tokens"): the generated text (answer and
reasoning) is encoded without special tokens and its tokens counted.
"""

from __future__ import annotations

import os
from typing import Any

from pytps.errors import ConfigError


class LocalTokenizer:
    def __init__(self, path: str | os.PathLike[str]) -> None:
        try:
            from tokenizers import Tokenizer
        except ImportError:
            raise ConfigError("--tokenizer needs the tokenizers package: pip install tokenizers") from None
        if not os.path.isfile(path):
            raise ConfigError(f"--tokenizer {path}: no such file; give the path of a tokenizer.json")
        try:
            self._tok: Any = Tokenizer.from_file(os.fspath(path))
        except Exception as exc:
            raise ConfigError(
                f"--tokenizer {path} is not a tokenizer.json the tokenizers library can read ({exc})"
            ) from None
        self.path = os.fspath(path)

    def count(self, text: str) -> int:
        if not text:
            return 0
        return len(self._tok.encode(text, add_special_tokens=False).ids)
