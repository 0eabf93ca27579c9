"""The library entry points: pytps.run(...) and its coroutine pytps.arun(...), the same job as
`pytps run`, returning the RunResult (pytps.app.runs holds them)."""

from __future__ import annotations

from pytps.app.runs import arun, run

__all__ = ["arun", "run"]
