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


def first_json_object(text: str) -> str | None:
    """`first_json_object`: the first complete JSON object in the text (a ```json fence or prose
    around it is skipped), re-serialised; None when there is none."""
    decoder = json.JSONDecoder()
    start = text.find("{")
    while start != -1:
        try:
            value, _ = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            start = text.find("{", start + 1)
            continue
        if isinstance(value, dict):
            return json.dumps(value, sort_keys=True)
        start = text.find("{", start + 1)
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
