"""--server-metrics settings (docs/server-metrics.md), checked when a run is configured. Apart
from the scraper (pytps.runner.scraper) so that configuring a run does not load an HTTP client,
ssl and the exposition parser: only a run that scrapes starts the scraper's process."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from urllib.parse import urlsplit

from pytps.errors import ConfigError
from pytps.measure.redact import Redactor
from pytps.settings.defaults import DEFAULT_MAX_SCRAPE_BYTES as DEFAULT_MAX_SCRAPE_BYTES

#: The most series one scrape keeps; the rest are dropped, with one warning naming the cap.
MAX_SCRAPE_SERIES = 50_000


def metrics_url(url: str, base_url: str) -> str:
    """A --server-metrics URL checked (one line before the run when pytps cannot use it); ""
    means <origin of base_url>/metrics."""
    if not url:
        parts = urlsplit(base_url)
        return f"{parts.scheme}://{parts.netloc}/metrics"
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(
            f"server metrics URL {url!r}: not an http:// or https:// URL with a host; "
            "give it as http://HOST:PORT/metrics"
        )
    try:
        parts.port  # noqa: B018  (raises on a port that is not a number)
    except ValueError:
        raise ConfigError(f"server metrics URL {url!r}: the port is not a number") from None
    return url


class ServerMetrics:
    """--server-metrics settings, checked once (make_config): the URLs, the interval, the headers
    sent to them (the API key is not, unless a header given here carries it), raw bodies kept."""

    def __init__(
        self,
        urls: Sequence[str],
        interval_s: float = 0.5,
        headers: Mapping[str, str] | None = None,
        raw: bool = False,
        max_bytes: int = DEFAULT_MAX_SCRAPE_BYTES,
    ) -> None:
        self.urls = list(urls)
        self.interval_s = interval_s
        self.headers = dict(headers or {})
        self.raw = raw
        self.max_bytes = max_bytes

    @classmethod
    def make(
        cls,
        urls: str | Sequence[str] | bool | None,
        base_url: str,
        interval_s: float | None = None,
        headers: Mapping[str, str] | None = None,
        raw: bool = False,
        *,
        max_bytes: int = DEFAULT_MAX_SCRAPE_BYTES,
    ) -> ServerMetrics | None:
        """None when scraping is off (urls None or False); True or an empty list: the base URL's
        origin + /metrics."""
        if urls is None or urls is False:
            if headers or raw or interval_s is not None:
                raise ConfigError(
                    "--server-metrics-interval, --server-metrics-header and --server-metrics-raw need --server-metrics"
                )
            return None
        listed = [urls] if isinstance(urls, str) else [] if urls is True else list(urls)
        checked = [metrics_url(u, base_url) for u in (listed or [""])]
        interval = 0.5 if interval_s is None else float(interval_s)
        if not interval > 0:
            raise ConfigError(f"--server-metrics-interval {interval_s}: give a positive number of seconds, e.g. 0.5")
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 1024:
            raise ConfigError(
                f"--server-metrics-max-bytes {max_bytes}: give a whole number of bytes of at least 1024, e.g. 16777216"
            )
        return cls(list(dict.fromkeys(checked)), interval, headers, raw, max_bytes)

    def describe(self, redactor: Redactor) -> dict[str, object]:
        """results.json's metadata: the URLs (secrets masked), the interval, the header names."""
        return {
            "urls": [redactor(u) for u in self.urls],
            "interval_s": self.interval_s,
            "header_names": sorted(self.headers),
            "raw": self.raw,
            "max_bytes": self.max_bytes,
        }
