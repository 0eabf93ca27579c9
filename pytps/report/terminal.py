"""What reaches a terminal: text a server sent (a model name, an error, a metric's label, an
answer) is shown with its control characters escaped, so it can never set the window title,
clear the screen, move the cursor or reorder a line (issue 40, defect 12).

`shown(text)` is the one function: C0 controls (but a newline and a tab where a block of lines
is printed), DEL, C1 controls and Unicode's bidirectional controls become visible escapes
(`\\x1b`, `\\u202e`). `SafeConsole` is a rich Console that applies it to every string and table
cell it prints; every console path of pytps (run, report, history, compare, progress) prints
through one."""

from __future__ import annotations

import re
from typing import Any

from rich.console import Console
from rich.table import Table

#: C0 (0x00-0x1f), DEL, C1 (0x80-0x9f), and the bidirectional controls: ALM, LRM, RLM, the
#: embeddings and overrides (U+202A-U+202E) and the isolates (U+2066-U+2069).
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_CONTROL_KEEP_LINES = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _escape(m: re.Match[str]) -> str:
    code = ord(m.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def shown(text: Any, keep_lines: bool = False) -> str:
    """text (str() of it) with every control character escaped; keep_lines: newlines and tabs
    stay (a block of lines), escaped otherwise (one field)."""
    return (_CONTROL_KEEP_LINES if keep_lines else _CONTROL).sub(_escape, str(text))


def _safe(obj: Any) -> Any:
    if isinstance(obj, str):
        return shown(obj, keep_lines=True)
    if isinstance(obj, Table):
        for column in obj.columns:
            column._cells = [_safe(c) for c in column._cells]
            if isinstance(column.header, str):
                column.header = shown(column.header, keep_lines=True)
        if isinstance(obj.title, str):
            obj.title = shown(obj.title, keep_lines=True)
        if isinstance(obj.caption, str):
            obj.caption = shown(obj.caption, keep_lines=True)
    return obj


class SafeConsole(Console):
    """A rich Console whose print() and log() escape control characters in every string and
    table cell (rich itself passes ESC through to a terminal), and replace no emoji codes.

    No emoji: pytps never writes a ":name:" code, so rich's replacement could only turn text a
    server sent (a model name with ":fire:" in it) into something else; and its table of codes
    (rich._emoji_codes, about 3 ms of import) was loaded by every run's report (issue 42)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("emoji", False)
        super().__init__(*args, **kwargs)

    def print(self, *objects: Any, **kwargs: Any) -> None:
        super().print(*(_safe(o) for o in objects), **kwargs)

    def log(self, *objects: Any, **kwargs: Any) -> None:
        super().log(*(_safe(o) for o in objects), **kwargs)
