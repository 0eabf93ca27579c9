"""The concurrency mode in batches (Runner._batch_concurrency_loop, issue 42): with the native
engine and nothing to grade, finished requests are finished and the next ones sent a batch at a
time, without a coroutine per slot. It must send and write what the slots' loop does: the same
requests, none lost or doubled, the same counts, the same stops, the same way out on an error."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

import pytps
from pytps.results.folder import Journal, load_journal
from pytps.results.output import RunOutput
from pytps.runner.config import make_config
from pytps.runner.loop import Runner
from pytps.transport.native_transport import NativeTransport

# What a request's line says whatever the loop: not when, only what.
SAME = ("index", "warmup", "ok", "error", "status", "output_tokens", "token_source", "output_events", "stream")


def _run(emu: pytps.Emulator, out: Path, *, batches: bool, monkeypatch: pytest.MonkeyPatch, **settings: Any):
    settings = {"requests": 120, "concurrency": 8, "output_tokens": 3, "input_tokens": 16, **settings}
    cfg = make_config(emu.base_url, out=out, model="m", transport="native", **settings)
    runner = Runner(cfg)
    used: list[bool] = []
    fits = Runner._batches_fit

    def spy(self: Runner) -> bool:
        used.append(fits(self) and batches)
        return used[-1]

    monkeypatch.setattr(Runner, "_batches_fit", spy)
    result = asyncio.run(runner.run())
    monkeypatch.undo()
    assert used == [batches]
    return result, load_journal(out)


def _same(line: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(line[k] for k in SAME)


def test_a_batch_run_sends_and_writes_what_the_slots_loop_does(tmp_path, monkeypatch):
    with pytps.Emulator(ttft_ms=0, itl_us=50) as emu:
        slots, slot_lines = _run(emu, tmp_path / "slots", batches=False, monkeypatch=monkeypatch, warmup=5)
        batch, batch_lines = _run(emu, tmp_path / "batch", batches=True, monkeypatch=monkeypatch, warmup=5)
    assert sorted(map(_same, batch_lines)) == sorted(map(_same, slot_lines))
    assert sorted(line["index"] for line in batch_lines) == list(range(125))
    for key in ("requests_total", "requests_ok", "useful_requests", "output_tokens_total", "token_sources", "errors"):
        assert batch.summary[key] == slots.summary[key], key
    assert batch.summary["requests_total"] == 120 and batch.summary["requests_ok"] == 120


def test_never_more_in_flight_than_the_slots(tmp_path, monkeypatch):
    seen: list[int] = []
    submit = NativeTransport.submit_batch

    def watched(self: NativeTransport, specs: list[Any]) -> None:
        submit(self, specs)
        seen.append(len(self._batch_records))

    monkeypatch.setattr(NativeTransport, "submit_batch", watched)
    with pytps.Emulator(ttft_ms=1, itl_us=100) as emu:
        cfg = make_config(emu.base_url, out=tmp_path / "o", model="m", requests=300, concurrency=5, output_tokens=2)
        result = asyncio.run(Runner(cfg).run())
    assert result.summary["requests_ok"] == 300
    assert max(seen) == 5 and seen[-1] == 0  # every slot busy at once; the last hand-over sent nothing


def test_a_duration_ends_the_batch_run_and_every_request_sent_is_written(tmp_path):
    with pytps.Emulator(ttft_ms=1, itl_us=100) as emu:
        cfg = make_config(
            emu.base_url, out=tmp_path / "o", model="m", requests=None, duration=0.5, concurrency=4, output_tokens=2
        )
        result = asyncio.run(Runner(cfg).run())
        sent = len(emu.wait_truth(result.summary["requests_total"]))
    lines = load_journal(tmp_path / "o")
    assert result.summary["requests_total"] > 20
    assert len(lines) == sent == result.summary["requests_total"]  # the probe (index 0) among them
    assert sorted(line["index"] for line in lines) == list(range(len(lines)))


def test_the_error_rate_stops_a_batch_run(tmp_path):
    with pytps.Emulator(ttft_ms=1, itl_us=200, faults=["500:p=1"]) as emu:
        cfg = make_config(
            emu.base_url,
            out=tmp_path / "o",
            model="m",
            requests=500,
            concurrency=4,
            max_error_rate=0.2,
            output_tokens=4,
        )
        result = asyncio.run(Runner(cfg).run())
    assert result.stopped_reason and "max-error-rate" in result.stopped_reason
    assert 10 <= result.summary["requests_total"] < 500
    assert len(load_journal(tmp_path / "o")) == result.summary["requests_total"]


def test_an_error_while_finishing_ends_the_run_and_keeps_what_was_written(tmp_path, monkeypatch):
    append = Journal.append

    def failing(self: Journal, rec: Any, scalars: dict[str, Any]) -> None:
        if rec.index == 60:
            raise RuntimeError("a finishing step failed")
        append(self, rec, scalars)

    monkeypatch.setattr(Journal, "append", failing)
    with pytps.Emulator(ttft_ms=0, itl_us=50) as emu:
        cfg = make_config(emu.base_url, out=tmp_path / "o", model="m", requests=200, concurrency=4, output_tokens=2)
        with pytest.raises(RuntimeError, match="a finishing step failed"):
            asyncio.run(Runner(cfg).run())
    written = {line["index"] for line in load_journal(tmp_path / "o")}
    assert 60 not in written and len(written) >= 55  # each request finished before it is on disk


def test_a_runner_that_changes_a_requests_step_keeps_the_slots_loop(tmp_path):
    # pytps rank's GatedRunner waits for its turn in send_one(): the batches would pass it by.
    stepped: list[int] = []

    class Stepped(Runner):
        async def send_one(self, i: int, model: str, output: Any, warmup: bool, t_sched_ns: int | None = None) -> None:
            stepped.append(i)
            await super().send_one(i, model, output, warmup, t_sched_ns)

    with pytps.Emulator(ttft_ms=0, itl_us=50) as emu:
        cfg = make_config(emu.base_url, out=tmp_path / "o", model="m", requests=40, concurrency=4, output_tokens=2)
        runner = Stepped(cfg)
        result = asyncio.run(runner.run())
    assert result.summary["requests_ok"] == 40 and sorted(stepped) == list(range(1, 40))  # the probe is apart


def test_an_output_that_changes_add_gets_add_of_each_record(tmp_path):
    # A scale worker's output shifts a skewed clock's records in add(): a batch must pass through it.
    added: list[int] = []

    class Counting(RunOutput):
        def add(self, rec: Any, grading: str = "done") -> Any:
            added.append(rec.index)
            return super().add(rec, grading)

    with pytps.Emulator(ttft_ms=0, itl_us=50) as emu:
        cfg = make_config(emu.base_url, out=tmp_path / "o", model="m", requests=60, concurrency=4, output_tokens=2)
        runner = Runner(cfg)
        runner.output_type = Counting
        result = asyncio.run(runner.run())
    assert result.summary["requests_ok"] == 60 and sorted(added) == list(range(60))
    assert len(load_journal(tmp_path / "o")) == 60
