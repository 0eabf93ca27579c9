"""Which transport measures a run (--transport), and building it from the run's configuration."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from .._native import _core
from ..errors import ConfigError
from .base import Transport

if TYPE_CHECKING:
    from ..config import RunConfig

# Rate mode on the native engine: the engine's thread busy-waits at most this long before a
# scheduled send instead of trusting a timed sleep to wake on time (timed sleeps wake 50-100 us
# late on a VM). The window adapts down to what the sleeps need; it costs at most this much CPU
# per request.
NATIVE_RATE_SPIN_NS = 150_000

# Connections a transport may open: enough for the plan's requests in flight, and no fewer than
# this (rate mode without --max-concurrency has no bound of its own).
MIN_CONNECTIONS = 100


def proxy_for(base_url: str) -> str | None:
    """The proxy the environment (HTTP_PROXY, ALL_PROXY, NO_PROXY...) sets for this URL, as httpx
    would use it; None when requests go direct."""
    if not any(name.lower().endswith("_proxy") for name in os.environ):
        return None  # the common case, without importing urllib.request (~7 ms of start-up)
    # proxy_bypass_environment is public in CPython (what urllib and httpx use for NO_PROXY) but
    # missing from typeshed's stubs.
    from urllib.request import getproxies_environment, proxy_bypass_environment  # type: ignore[attr-defined]

    url = urlsplit(base_url)
    proxies = getproxies_environment()
    proxy = proxies.get(url.scheme) or proxies.get("all")
    if not proxy or proxy_bypass_environment(url.hostname or "", proxies):
        return None
    return proxy


def choose_transport(cfg: RunConfig) -> str:
    """auto: the native engine for HTTP/1.1 without a proxy (the most exact), over http:// and, when
    the native core was built with TLS, https://; else httpx (--http2, proxies, https:// without
    TLS in the build). The other names are checked against what they can speak."""
    from ..config import check_transport

    check_transport(cfg.transport)
    scheme = urlsplit(cfg.base_url).scheme
    plain = scheme == "http" and not cfg.http2
    if cfg.transport == "asyncio" and not plain:
        raise ConfigError(
            "the asyncio transport speaks plain http:// over HTTP/1.1; for https:// or "
            "--http2 use --transport httpx (or auto), or --transport native for https://"
        )
    if cfg.transport == "native":
        if cfg.http2 or scheme not in ("http", "https"):
            raise ConfigError(
                "the native transport speaks HTTP/1.1 over http:// or https://; for --http2 "
                "use --transport httpx (or auto)"
            )
        if scheme == "https" and not _core.TLS_AVAILABLE:
            from .native_transport import NO_TLS

            raise ConfigError(f"--transport native with an https:// URL: {NO_TLS}")
    native_ok = not cfg.http2 and (scheme == "http" or (scheme == "https" and _core.TLS_AVAILABLE))
    chosen = cfg.transport
    if cfg.transport == "auto":
        # A proxy in the environment is honoured by httpx only: the native engine goes direct.
        chosen = "native" if native_ok and proxy_for(cfg.base_url) is None else "httpx"
    if cfg.kernel_timestamps and chosen != "native":
        raise ConfigError(
            f"--kernel-timestamps needs the native transport (this run would use {chosen}): "
            "add --transport native, or leave --kernel-timestamps out"
        )
    return chosen


def make_transport(cfg: RunConfig) -> Transport:
    """The transport choose_transport() names, set up with the run's timeouts and trust settings."""
    chosen = choose_transport(cfg)
    max_connections = max(cfg.plan.max_in_flight or 0, MIN_CONNECTIONS)
    if chosen == "native":
        from .native_transport import NativeTransport

        return NativeTransport(
            cfg.base_url,
            connect_timeout_s=cfg.connect_timeout_s,
            read_timeout_s=cfg.read_timeout_s,
            total_timeout_s=cfg.request_timeout_s,
            max_connections=max_connections,
            kernel_timestamps=cfg.kernel_timestamps,
            spin_ns=NATIVE_RATE_SPIN_NS if cfg.plan.mode == "rate" else 0,
            ca_file=cfg.ca_bundle,
            verify=not cfg.insecure,
        )
    if chosen == "asyncio":
        from .asyncio_transport import AsyncioTransport

        return AsyncioTransport(
            cfg.base_url,
            connect_timeout_s=cfg.connect_timeout_s,
            read_timeout_s=cfg.read_timeout_s,
            total_timeout_s=cfg.request_timeout_s,
        )
    from .httpx_transport import HttpxTransport

    return HttpxTransport(
        cfg.base_url,
        http2=cfg.http2,
        max_connections=max_connections,
        connect_timeout_s=cfg.connect_timeout_s,
        read_timeout_s=cfg.read_timeout_s,
        total_timeout_s=cfg.request_timeout_s,
        verify=not cfg.insecure,
        ca_file=cfg.ca_bundle,
    )
