"""A grader worker process (`python -m pytps.grading.grader_worker`): grades one answer at a time
for grading/grader_pool, which kills it when an answer takes longer than --grader-timeout-s.

What runs here is what may not return: a user's grader (sync or async: a coroutine is run to its
end with asyncio.run), a JSON Schema (its `pattern`s are Python regular expressions) and a
regex grader's pattern that RE2 cannot take (backreferences, lookaround). Frames on stdin and
stdout are a 4-byte big-endian length and a pickle; the protocol keeps a copy of fd 1, and fd 1
itself becomes stderr, so a grader's print() never corrupts a frame (or pytps's --json output).
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import inspect
import os
import pickle
import signal
import sys
from collections.abc import Mapping
from typing import Any

from pytps.grading.grader_frames import frame, read_frame


def _plain(value: Any) -> Any:
    """A user grader's return value as something that pickles (grading._user_verdict reads it)."""
    if isinstance(value, (bool, int, float)) or value is None:
        return value
    if isinstance(value, Mapping):
        return {k: value.get(k) for k in ("correct", "score", "reason") if k in value}
    if hasattr(value, "correct"):
        return {k: getattr(value, k, None) for k in ("correct", "score", "reason")}
    return repr(value)


def _run(job: tuple[Any, ...], users: dict[str, Any]) -> Any:
    from pytps.grading.graders import grade_text, load_user_grader, parse_reference

    kind = job[0]
    if kind == "user":
        _, spec, request, text, record = job
        if spec not in users:
            users[spec] = load_user_grader(spec, "grader")
        value = users[spec](request, text, record)
        if inspect.isawaitable(value):
            value = asyncio.run(_awaited(value))
        return _plain(value)
    _, raw, item, default_grader, text = job
    ref = parse_reference(raw, where=item, item=item, default_grader=default_grader, in_worker=True)
    assert ref is not None
    return grade_text(ref, text)


async def _awaited(value: Any) -> Any:
    return await value


def _die_with_parent(parent: int) -> None:
    """SIGKILL when the pytps process that started this one dies (Linux), however it dies: a
    grader stuck in a loop must not outlive the run."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
    if os.getppid() != parent:
        os._exit(0)


def main() -> None:
    parent = int(sys.argv[1]) if len(sys.argv) > 1 else os.getppid()
    _die_with_parent(parent)
    out = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    inp = sys.stdin.buffer
    users: dict[str, Any] = {}
    import pytps.grading.graders  # noqa: F401 - imported before "ready", not in the first answer's time

    out.write(frame(("ready", None)))
    while True:
        try:
            job = read_frame(inp)
        except EOFError:
            return
        try:
            reply: tuple[str, Any] = ("ok", _run(job, users))
        except BaseException as exc:  # the parent turns it into grader_error
            reply = ("error", f"{type(exc).__name__}: {exc}")
        try:
            out.write(frame(reply))
        except (pickle.PicklingError, TypeError, AttributeError) as exc:
            out.write(frame(("error", f"the grader's answer cannot be sent back: {exc}")))


if __name__ == "__main__":
    main()
