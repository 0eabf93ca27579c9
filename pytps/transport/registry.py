"""Which transport measures a run (--transport), and building it from the run's configuration."""

from __future__ import annotations

from typing import Protocol
from urllib.parse import urlsplit

from pytps._native import _core
from pytps.errors import ConfigError
from pytps.transport.base import TRANSPORT_NAMES, Transport
from pytps.transport.network import proxy_for


class _LoadShape(Protocol):
    @property
    def mode(self) -> str: ...
    @property
    def max_in_flight(self) -> int | None: ...


class TransportSettings(Protocol):
    """What choosing and building a transport reads of a run's settings (a RunConfig has them all)."""

    @property
    def transport(self) -> str: ...
    @property
    def base_url(self) -> str: ...
    @property
    def http2(self) -> bool: ...
    @property
    def kernel_timestamps(self) -> bool: ...
    @property
    def connect_timeout_s(self) -> float: ...
    @property
    def read_timeout_s(self) -> float: ...
    @property
    def request_timeout_s(self) -> float: ...
    @property
    def ca_bundle(self) -> str | None: ...
    @property
    def insecure(self) -> bool: ...
    @property
    def plan(self) -> _LoadShape: ...


def check_transport(name: str) -> str:
    """name if it is a transport pytps has, else ConfigError listing them."""
    if name not in TRANSPORT_NAMES:
        raise ConfigError(f"transport (--transport) {name!r} is unknown; use one of {', '.join(TRANSPORT_NAMES)}")
    return name


# Rate mode on the native engine: the engine's thread busy-waits at most this long before a
# scheduled send instead of trusting a timed sleep to wake on time (timed sleeps wake 50-100 us
# late on a VM). The window adapts down to what the sleeps need; it costs at most this much CPU
# per request.
NATIVE_RATE_SPIN_NS = 150_000

# Connections a transport may open: enough for the plan's requests in flight, and no fewer than
# this (rate mode without --max-concurrency has no bound of its own).
MIN_CONNECTIONS = 100


def choose_transport(cfg: TransportSettings) -> str:
    """auto: the native engine for HTTP/1.1 without a proxy (the most exact), over http:// and, when
    the native core was built with TLS, https://; else httpx (--http2, proxies, https:// without
    TLS in the build). The other names are checked against what they can speak."""
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
            from pytps.transport.native_transport import NO_TLS

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


def make_transport(cfg: TransportSettings) -> Transport:
    """The transport choose_transport() names, set up with the run's timeouts and trust settings."""
    chosen = choose_transport(cfg)
    max_connections = max(cfg.plan.max_in_flight or 0, MIN_CONNECTIONS)
    if chosen == "native":
        from pytps.transport.native_transport import NativeTransport

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
        from pytps.transport.asyncio_transport import AsyncioTransport

        return AsyncioTransport(
            cfg.base_url,
            connect_timeout_s=cfg.connect_timeout_s,
            read_timeout_s=cfg.read_timeout_s,
            total_timeout_s=cfg.request_timeout_s,
        )
    from pytps.transport.httpx_transport import HttpxTransport

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
