"""The live progress bar of `pytps run` (rich), for a person watching a terminal."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from pytps.app.runs import Progress as RunProgress
from pytps.report.terminal import SafeConsole


class RichProgress(RunProgress):
    def __init__(self, console: Console | None = None) -> None:
        self.console = console or SafeConsole(stderr=True)
        self._bar: Progress | None = None
        self._task: Any = None

    def start(self, total: int | None, duration_s: float | None) -> None:
        # Plain text, not markup: rich's markup columns replace emoji codes whatever the console
        # says (Text.from_markup), which loads rich's table of codes (issue 42); the bar is the same.
        self._bar = Progress(
            TextColumn("pytps run", style="bold", markup=False),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[status]}", markup=False),
            TimeElapsedColumn(),
            console=self.console,
            transient=True,
        )
        self._bar.start()
        self._task = self._bar.add_task("run", total=total, status="")

    def update(self, done: int, in_flight: int, tokens: int, errors: int, elapsed_s: float) -> None:
        if self._bar is None:
            return
        tps = tokens / elapsed_s if elapsed_s > 0 else 0.0
        self._bar.update(self._task, completed=done, status=f"in flight {in_flight}  {tps:,.0f} tok/s  errors {errors}")

    def stop(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
