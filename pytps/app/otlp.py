"""`--otlp`: a finished run's results folder exported to an OpenTelemetry collector
(pytps.results.otlp), after the timing ended; a failed delivery is one warning, and the run's
results stay as they were."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pytps.errors import ConfigError


@dataclass(frozen=True)
class OtlpOutcome:
    """One line for the console: what was delivered, or the warning."""

    line: str
    warning: bool


def check_otlp_available() -> None:
    """Before the run: --otlp without the `otlp` extra is refused then, not after the measuring."""
    from pytps.results.otlp import OtlpUnavailable, _require

    try:
        _require()
    except OtlpUnavailable as e:
        raise ConfigError(str(e)) from None


def export_run(out_dir: Path, url: str | None) -> OtlpOutcome:
    """Exports the saved run to `url` (a collector's base URL; None or "": the OTEL_EXPORTER_OTLP_*
    variables). Never raises for the collector's sake."""
    from pytps.results.otlp import export_folder, shown_url

    done = export_folder(out_dir, url or None)
    if done.error is not None:
        return OtlpOutcome(f"OTLP export failed: {done.error}; the results folder is intact", True)
    return OtlpOutcome(f"otlp: {done.spans} spans and {done.metrics} metric points sent to {shown_url(url)}", False)
