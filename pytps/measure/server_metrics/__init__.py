"""A server's own Prometheus metrics beside pytps's figures (docs/server-metrics.md).

`parse` turns one scrape's text into samples (prometheus-client's parser, never by hand),
`engines` names each known engine's metrics under common names (data, one table per engine),
`histogram` is Prometheus's histogram_quantile, and `summary` makes the run's figures from the
scrapes file: gauges over the steady window, counters' deltas and rates, histogram percentiles,
and the derived figures of docs/metrics.md (joules per output token, speculative decoding,
the token cross-check, queueing). The scraper that takes the scrapes is the runner's
(pytps.runner.scraper): this room does no I/O but reading a saved file.
"""

from __future__ import annotations

from pytps.measure.server_metrics.parse import ParseError, Scrape, parse_exposition

__all__ = ["ParseError", "Scrape", "parse_exposition"]
