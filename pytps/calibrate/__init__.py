"""`pytps calibrate`: how exact pytps (or any other streaming client) is on this host, measured
against the emulator in a separate process, and the trust envelope that `pytps run` checks
(docs/calibrate.md)."""

from __future__ import annotations

from pytps.calibrate.envelope import THRESHOLDS, envelope_dir, envelope_path, load_envelope, run_verdict
from pytps.calibrate.ladder import Cell, Ladder

__all__ = ["THRESHOLDS", "Cell", "Ladder", "envelope_dir", "envelope_path", "load_envelope", "run_verdict"]
