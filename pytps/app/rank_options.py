"""The choices of `pytps rank`'s options, apart from the code that runs a rank, so that the parser
(`pytps --help`, `--version`) loads none of the run's modules (tests/cli/test_startup.py)."""

from __future__ import annotations

#: How the endpoints' sends are interleaved in time (docs/rank.md): auto picks simultaneous for
#: endpoints on different hosts, blocks for endpoints that share one.
INTERLEAVES = ("auto", "simultaneous", "blocks", "sequential")
