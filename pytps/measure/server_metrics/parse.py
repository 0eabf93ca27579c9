"""One scrape's text exposition as samples: prometheus-client's parser (text format 0.0.4, or
OpenMetrics when the server says so), every family, label and sample kept."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

OPENMETRICS = "application/openmetrics-text"


class ParseError(ValueError):
    """The body is not Prometheus text exposition (the scraper's one warning line says why)."""


@dataclass
class Scrape:
    """One scrape of one URL, on the run's clock: stamped before the request and after the body
    (CLOCK_MONOTONIC ns); its time is the midpoint, half the difference its uncertainty."""

    url: str
    t_before_ns: int
    t_after_ns: int
    types: dict[str, str] = field(default_factory=dict)  # family -> counter, gauge, histogram, ...
    samples: list[tuple[str, dict[str, str], float]] = field(default_factory=list)
    error: str | None = None

    @property
    def t_ns(self) -> int:
        return (self.t_before_ns + self.t_after_ns) // 2

    @property
    def uncertainty_ns(self) -> int:
        return (self.t_after_ns - self.t_before_ns + 1) // 2

    def as_json(self) -> dict[str, Any]:
        """The scrape's line of server_metrics.jsonl (docs/results.md)."""
        return {
            "url": self.url,
            "t_ns": self.t_ns,
            "uncertainty_ns": self.uncertainty_ns,
            "t_before_ns": self.t_before_ns,
            "t_after_ns": self.t_after_ns,
            "error": self.error,
            "types": self.types,
            "samples": [[n, labels, v] for n, labels, v in self.samples],
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Scrape:
        return cls(
            url=d["url"],
            t_before_ns=int(d["t_before_ns"]),
            t_after_ns=int(d["t_after_ns"]),
            types=dict(d.get("types") or {}),
            samples=[(str(n), dict(labels), float(v)) for n, labels, v in d.get("samples") or []],
            error=d.get("error"),
        )


def parse_exposition(
    text: str, content_type: str = "", max_series: int | None = None
) -> tuple[dict[str, str], list[tuple[str, dict[str, str], float]]]:
    """(family types, samples) of a /metrics body. Raises ParseError when it is not Prometheus
    text (an HTML page, JSON, a truncated line). max_series: parsing stops at that many samples
    (the parser yields family by family, so a body of a million series is never all in memory)."""
    from prometheus_client.openmetrics.parser import text_string_to_metric_families as openmetrics
    from prometheus_client.parser import text_string_to_metric_families as prometheus

    parser = openmetrics if OPENMETRICS in content_type else prometheus
    types: dict[str, str] = {}
    samples: list[tuple[str, dict[str, str], float]] = []
    try:
        for family in parser(text):
            types[family.name] = family.type
            for s in family.samples:
                samples.append((s.name, dict(s.labels), float(s.value)))
                if max_series is not None and len(samples) >= max_series:
                    return types, samples
    except Exception as exc:  # the parser raises ValueError, IndexError, ... on text that is not Prometheus's
        raise ParseError(f"not Prometheus text exposition ({type(exc).__name__}: {exc})"[:200]) from None
    if not samples and text.strip() and not text.lstrip().startswith("#"):
        raise ParseError("not Prometheus text exposition (no samples)")
    return types, samples
