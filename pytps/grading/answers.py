"""Answer extraction: the part of a response's text a grader compares with the reference.

Each rule is named, so a dataset record can choose one (`"extract": "last_number"`) and results
say which was used (docs/grading.md, "Extraction rules"). Every rule reads the answer text only:
reasoning (thinking) is never part of it. A rule returns None when the text holds nothing of its
kind; the grader then calls the response wrong, with that as the reason.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

#: The marker an answer may follow ("Answer: 42", "answer:B"); the last one in the text counts.
_MARKER = re.compile(r"answer\s*[:：]", re.IGNORECASE)
_NUMBER = re.compile(r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?|[-+]?\.\d+(?:[eE][-+]?\d+)?")
_LETTER = re.compile(r"^\s*[\(\[]?\s*([A-Za-z])\s*[\)\]\.:]?(?:\s|$)")


def whole(text: str) -> str | None:
    """`all`: the whole answer text, stripped."""
    return text.strip()


def after_marker(text: str) -> str | None:
    """`after_marker`: the text after the last "Answer:" (any case) up to the end of its line,
    stripped; the whole text, stripped, when there is no marker."""
    marks = list(_MARKER.finditer(text))
    if not marks:
        return text.strip()
    rest = text[marks[-1].end() :].strip()
    return rest.splitlines()[0].strip() if rest else ""


def last_number(text: str) -> str | None:
    """`last_number`: the last number in the text (thousands separators dropped), as written."""
    found = _NUMBER.findall(text)
    return found[-1].replace(",", "") if found else None


def choice_letter(text: str) -> str | None:
    """`choice_letter`: the letter after the last "Answer:" ("Answer: B", "Answer: (b)"), upper
    case; without a marker, a text that is one letter on its own."""
    marks = list(_MARKER.finditer(text))
    tail = text[marks[-1].end() :] if marks else text
    m = _LETTER.match(tail)
    if m is None or (not marks and tail.strip().strip("()[].:").strip() != m.group(1)):
        return None
    return m.group(1).upper()


_STRUCTURE = re.compile(r'\{+|[}"\\]')


def _object_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of every balanced {...} in one left-to-right pass, in order of start: braces
    inside JSON strings (tracked only inside an object, so prose quotes around it do not count)
    are not braces. An unclosed brace gives no span; nothing after the last "}" can close one."""
    spans: list[tuple[int, int]] = []
    stack: list[list[int]] = []  # runs of open braces: [first position, how many still open]
    in_string = False
    escaped_at = -1  # the position a backslash in a string escapes
    first, last = text.find("{"), text.rfind("}")
    if first < 0 or last < first:
        return spans
    for m in _STRUCTURE.finditer(text, first, last + 1):
        i = m.start()
        ch = text[i]
        if in_string:
            if i == escaped_at:
                continue
            if ch == "\\":
                escaped_at = i + 1
            elif ch == '"':
                in_string = False
        elif ch == "{":
            stack.append([i, m.end() - i])
        elif ch == "}":
            if stack:
                run = stack[-1]
                run[1] -= 1
                spans.append((run[0] + run[1], i + 1))
                if not run[1]:
                    stack.pop()
        elif ch == '"' and stack:
            in_string = True
    spans.sort()
    return spans


def first_json_object(text: str) -> str | None:
    """`first_json_object`: the first complete JSON object in the text (a ```json fence or prose
    around it is skipped), re-serialised; None when there is none.

    Linear in the text: one pass finds each balanced {...} span, and a span that fails to parse
    at position p rules out every later span that starts before p and ends after it (it would
    fail at p too), so no character is parsed more than twice (trying json.raw_decode at every
    "{" was quadratic). An object nested deeper than the interpreter's recursion limit is not an
    answer, nor is anything inside it."""
    failed_at = -1
    skip_until = -1
    for start, end in _object_spans(text):
        if start < skip_until or start < failed_at < end:
            continue
        try:
            value = json.loads(text[start:end])
        except json.JSONDecodeError as exc:
            failed_at = start + exc.pos
            continue
        except RecursionError:
            skip_until = end
            continue
        if isinstance(value, dict):
            return json.dumps(value, sort_keys=True)
    return None


def last_line(text: str) -> str | None:
    """`last_line`: the last non-blank line, stripped."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else None


#: Every rule by name (docs/grading.md lists them with examples).
EXTRACTORS: dict[str, Callable[[str], str | None]] = {
    "all": whole,
    "after_marker": after_marker,
    "last_number": last_number,
    "choice_letter": choice_letter,
    "first_json_object": first_json_object,
    "last_line": last_line,
}
