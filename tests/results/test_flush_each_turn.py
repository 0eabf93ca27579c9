"""RunOutput.flush_each_turn (issue 42): the journal and the event log reach the OS once per turn
of the event loop, not once per request, and no line waits longer than its batch's last one did
with a flush per request: the flush runs before anything the loop queues after the turn's work
(the next batch of finished requests), and on every way out of a run."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import numpy as np

from pytps.measure.records import RequestRecord
from pytps.results.files import EVENT_LOG, JOURNAL
from pytps.results.output import RunOutput


def _record(i: int) -> RequestRecord:
    rec = RequestRecord(index=i, t_send_ns=1_000_000, t_done_ns=3_000_000, status=200)
    rec.first_output_ns = 2_000_000
    rec.output_times_ns = np.array([2_000_000], dtype=np.int64)
    rec.output_kinds = np.full(1, 2, dtype=np.uint8)
    rec.output_tokens = np.full(1, 1, dtype=np.int32)
    rec.output_chars = np.full(1, 3, dtype=np.int32)
    return rec


def _on_disk(out: Path) -> tuple[list[int], int]:
    """What another process would read now: the journal's request indices and the event log's size."""
    with open(out / JOURNAL, encoding="utf-8") as f:
        indices = [json.loads(line)["index"] for line in f]
    return indices, os.path.getsize(out / EVENT_LOG)


def test_without_a_loop_each_request_is_flushed_as_it_is_added(tmp_path):
    output = RunOutput(tmp_path, slots=1, rate_mode=False)
    for i in range(3):
        output.add(_record(i))
        assert _on_disk(tmp_path)[0] == list(range(i + 1))
    output.journal.close()
    output.events.close()


def test_a_turns_requests_reach_the_os_before_the_next_turns_work(tmp_path):
    """Three turns of finished requests (as a transport's batches wake them): after each turn,
    before any callback queued after it runs, every line and event row of it is on disk."""
    seen: list[tuple[list[int], int]] = []

    async def main() -> None:
        loop = asyncio.get_running_loop()
        output = RunOutput(tmp_path, slots=4, rate_mode=False)
        output.flush_each_turn(loop.call_soon)
        done = asyncio.Event()
        batches = [[0, 1, 2], [3], [4, 5, 6, 7]]

        def batch(k: int) -> None:
            for i in batches[k]:
                output.add(_record(i))
            # The next batch (or the check) is queued after the turn's adds, as the loop's
            # next wake-up of finished requests would be.
            loop.call_soon(check, k)

        def check(k: int) -> None:
            seen.append(_on_disk(tmp_path))
            if k + 1 < len(batches):
                batch(k + 1)
            else:
                done.set()

        loop.call_soon(batch, 0)
        await done.wait()
        output.journal.close()
        output.events.close()

    asyncio.run(main())
    row_bytes = seen[0][1] // 3
    assert row_bytes > 0
    assert seen == [([0, 1, 2], 3 * row_bytes), ([0, 1, 2, 3], 4 * row_bytes), (list(range(8)), 8 * row_bytes)]


def test_the_flush_runs_once_per_turn(tmp_path, monkeypatch):
    flushes: list[int] = []

    async def main() -> None:
        output = RunOutput(tmp_path, slots=4, rate_mode=False)
        output.flush_each_turn(asyncio.get_running_loop().call_soon)
        real = output.journal.flush
        monkeypatch.setattr(output.journal, "flush", lambda: (flushes.append(output.finished), real())[1])
        for i in range(5):
            output.add(_record(i))
        await asyncio.sleep(0)
        output.add(_record(5))
        await asyncio.sleep(0)
        output.journal.close()
        output.events.close()

    asyncio.run(main())
    assert flushes == [5, 6]


def test_lines_of_a_turn_that_ends_the_run_are_not_lost(tmp_path):
    """A run that ends in the turn its last requests finished (the loop stops or raises before
    the queued flush runs): an explicit flush, finish()'s close, or the file's own close at exit
    still writes them; the queued flush is then harmless."""

    async def main() -> RunOutput:
        output = RunOutput(tmp_path, slots=4, rate_mode=False)
        output.flush_each_turn(asyncio.get_running_loop().call_soon)
        for i in range(4):
            output.add(_record(i))
        output.journal.close()  # what finish() does first
        output.events.close()
        return output

    output = asyncio.run(main())  # the queued flush ran on closed files: no error
    assert _on_disk(tmp_path)[0] == [0, 1, 2, 3]
    output.flush()
