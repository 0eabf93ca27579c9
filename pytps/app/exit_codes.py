"""What `pytps`'s exit status says, so CI can act on it: one table (the README's and --help's),
and the code of a finished run."""

from __future__ import annotations

from typing import Any

OK = 0
FAILED = 1  # pytps itself failed (a bug): Python's own status for an uncaught exception
BAD_INPUT = 2
NO_SUCCESS = 3
ERROR_RATE = 4
INTERRUPTED = 130  # SIGINT (Ctrl-C)
HANGUP = 129  # SIGHUP
TERMINATED = 143  # SIGTERM (docker stop, kubectl, timeout, CI runners)

TABLE = """exit status:
  0    the run measured what it was asked to (some requests may have failed)
  1    pytps itself failed (a bug: please report it with the traceback)
  2    bad input: a flag, a file or the endpoint's answer to the first request; nothing was measured
  3    no measured request succeeded (every cell of a sweep or matrix, for its overall status)
  4    --max-error-rate was exceeded: the run stopped early
  130  interrupted by SIGINT (Ctrl-C); what finished is saved, with its summary
  143  terminated by SIGTERM (129: SIGHUP); what finished is saved, with its summary
sweep and -c matrices: each cell's status by these rules (matrix.json's exit_code); the command's
own is 3 when no cell had a successful request, else 4 when a cell exceeded --max-error-rate, else 0."""


def run_exit_code(summary: dict[str, Any] | None, metadata: dict[str, Any] | None = None) -> int:
    """A finished (not interrupted) run's status: NO_SUCCESS, ERROR_RATE, or OK."""
    if summary is None or not summary.get("requests_ok"):
        return NO_SUCCESS
    if (metadata or {}).get("stopped_reason"):
        return ERROR_RATE
    return OK


def overall_exit_code(cell_codes: list[int]) -> int:
    """A sweep's or matrix's status from its cells' (as TABLE says)."""
    if cell_codes and all(c == NO_SUCCESS for c in cell_codes):
        return NO_SUCCESS
    return ERROR_RATE if ERROR_RATE in cell_codes else OK
