"""Where a job's requests go: an `Endpoint` is a base URL, or the built-in emulator started for
as long as the job lasts (with its keyword arguments)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any

from pytps.errors import ConfigError


@dataclass(frozen=True)
class Endpoint:
    """base_url, or (None) the built-in emulator with `emulator`, pytps.Emulator's keyword arguments."""

    base_url: str | None = None
    emulator: Mapping[str, Any] = field(default_factory=dict)

    def open(self, stack: ExitStack, say: Callable[[str], None] | None = None) -> str:
        """The base URL: the emulator's is started now and closed with `stack`; say(its URL)."""
        if self.base_url is not None:
            return self.base_url
        from pytps.emulator import Emulator

        # No truth kept in memory unless asked for: nothing here reads it, and it grows with the run.
        emu = stack.enter_context(Emulator(**{"keep_truth": False, **self.emulator}))
        if say is not None:
            say(emu.base_url)
        url: str = emu.base_url
        return url


def emulator_settings(emu: Mapping[str, Any], run: Mapping[str, Any]) -> dict[str, Any]:
    """pytps.Emulator's keyword arguments from the table's emu_* settings (names less "emu_") and
    the run's: with emu_answer_accuracy, the emulator knows the --tasks or --dataset references."""
    answers: Any = None
    accuracy = emu.get("emu_answer_accuracy")
    if accuracy is not None:
        if run.get("tasks") is None and run.get("dataset") is None:
            raise ConfigError("--emu-answer-accuracy needs --tasks or --dataset: the references the emulator knows")
        # A sweep's cells all run the same items: enough for the longest of them.
        turns, sessions = run.get("turns"), run.get("sessions")
        in_sessions = (sessions or 10) * (turns or 1) if turns or sessions else 0
        requests = run.get("requests")
        count = max(requests if isinstance(requests, int) else 0, in_sessions, 1000) + int(run.get("warmup") or 0) + 1
        tasks = run.get("tasks")
        answers = f"tasks:{tasks}:{count}:{run.get('seed', 0)}" if tasks is not None else run.get("dataset")
    return {
        "ttft_ms": emu["emu_ttft_ms"],
        "itl_us": emu["emu_itl_us"],
        "prefill_us_per_token": emu["emu_prefill_us_per_token"],
        "prefix_cache_tokens": emu["emu_prefix_cache_tokens"],
        "answers": answers,
        "answer_accuracy": 1.0 if accuracy is None else accuracy,
        "answer_accuracy_drop": emu["emu_answer_accuracy_drop"],
    }
