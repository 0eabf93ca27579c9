"""Defaults the table of settings spells that rooms below the run read too (runner.scrape_settings
re-exports them): a module of constants only, cheap to import from a scraper's own process."""

from __future__ import annotations

#: --server-metrics-max-bytes's default: the most one scrape reads (a vLLM /metrics is ~100 KB).
DEFAULT_MAX_SCRAPE_BYTES = 16 << 20
