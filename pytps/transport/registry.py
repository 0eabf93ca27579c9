"""Which transport measures a run (--transport): the one registry of transports, and building the
chosen one from the run's configuration.

Each transport is one entry: its name, how to build it, and what it can do. Everything else is
derived from the entries: TRANSPORT_NAMES (the --transport choices), check_transport(), what
--transport auto picks (the first entry, in the registry's order, that can serve the run), and
the errors for a transport asked for what it cannot do. A new transport is its module plus one
entry in TRANSPORTS.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol
from urllib.parse import urlsplit

from pytps.errors import ConfigError

if TYPE_CHECKING:
    from pytps.transport.base import Timeouts, Transport


class _LoadShape(Protocol):
    @property
    def mode(self) -> str: ...
    @property
    def max_in_flight(self) -> int | None: ...


class TransportSettings(Protocol):
    """What choosing and building a transport reads of a run's settings (a RunConfig has them all)."""

    transport: str
    base_url: str
    http2: bool
    kernel_timestamps: bool
    connect_timeout_s: float
    read_timeout_s: float
    request_timeout_s: float
    ca_bundle: str | None
    insecure: bool

    @property
    def plan(self) -> _LoadShape: ...


def _always() -> str | None:
    return None


@dataclass(frozen=True)
class TransportEntry:
    """One transport: how it is built, and what it can do (its capabilities)."""

    name: str
    #: Builds it for a run: (the run's settings, the connections it may open).
    build: Callable[[TransportSettings, int], Transport]
    #: Speaks https://.
    tls: bool = False
    #: Speaks HTTP/2 (--http2).
    http2: bool = False
    #: Keeps the kernel's receive stamp of each read beside its own (--kernel-timestamps).
    kernel_timestamps: bool = False
    #: Paces rate-mode sends on its own timers: the runner hands a request over schedule_lead_ns
    #: before its t_sched and the transport holds it until then.
    rate_timers: bool = False
    #: Honours the environment's proxy (HTTP_PROXY, ALL_PROXY, NO_PROXY); auto passes over the others when one is set.
    proxies: bool = False
    #: Why this build cannot speak TLS after all (a reason naming the fix), or None when it can.
    tls_missing: Callable[[], str | None] = _always
    #: Why this build cannot take kernel stamps after all (a reason naming the fix), or None when it can.
    kernel_timestamps_missing: Callable[[], str | None] = _always

    def speaks(self) -> str:
        """What it speaks, in an error message's words."""
        versions = "HTTP/1.1 and HTTP/2" if self.http2 else "HTTP/1.1"
        return f"{versions} over {'http:// or https://' if self.tls else 'plain http://'}"


# ---- the transports pytps ships, most exact first (the order auto tries them in) -----------------


def _timeouts(cfg: TransportSettings) -> Timeouts:
    """The run's timeouts, as every transport takes them."""
    from pytps.transport.base import Timeouts

    return Timeouts(connect_s=cfg.connect_timeout_s, read_s=cfg.read_timeout_s, total_s=cfg.request_timeout_s)


# Rate mode on the native engine: the engine's thread busy-waits at most this long before a
# scheduled send instead of trusting a timed sleep to wake on time (timed sleeps wake 50-100 us
# late on a VM). The window adapts down to what the sleeps need; it costs at most this much CPU
# per request.
NATIVE_RATE_SPIN_NS = 150_000


def _build_native(cfg: TransportSettings, max_connections: int) -> Transport:
    from pytps.transport.native_transport import NativeTransport

    return NativeTransport(
        cfg.base_url,
        timeouts=_timeouts(cfg),
        max_connections=max_connections,
        kernel_timestamps=cfg.kernel_timestamps,
        spin_ns=NATIVE_RATE_SPIN_NS if cfg.plan.mode == "rate" else 0,
        ca_file=cfg.ca_bundle,
        verify=not cfg.insecure,
    )


def _native_tls_missing() -> str | None:
    from pytps._native import _core

    if _core.TLS_AVAILABLE:
        return None
    from pytps.transport.native_transport import NO_TLS

    return NO_TLS


def _native_kernel_timestamps_missing() -> str | None:
    from pytps._native import _core

    if _core.KERNEL_TIMESTAMPS:
        return None
    return (
        "the kernel's receive stamps (SO_TIMESTAMPING) exist on Linux only, and this build is not for Linux: "
        "leave --kernel-timestamps out (every read keeps its own stamp)"
    )


def _build_httpx(cfg: TransportSettings, max_connections: int) -> Transport:
    from pytps.transport.httpx_transport import HttpxTransport

    return HttpxTransport(
        cfg.base_url,
        http2=cfg.http2,
        max_connections=max_connections,
        timeouts=_timeouts(cfg),
        verify=not cfg.insecure,
        ca_file=cfg.ca_bundle,
    )


def _build_asyncio(cfg: TransportSettings, max_connections: int) -> Transport:
    from pytps.transport.asyncio_transport import AsyncioTransport

    return AsyncioTransport(
        cfg.base_url,
        timeouts=_timeouts(cfg),
    )


#: Every transport pytps has, by name, in the order auto tries them: the most exact first.
TRANSPORTS: dict[str, TransportEntry] = {
    entry.name: entry
    for entry in (
        # HTTP/1.1 on a C++ thread; https:// when the core was built with OpenSSL; goes direct.
        TransportEntry(
            "native",
            _build_native,
            tls=True,
            kernel_timestamps=True,
            rate_timers=True,
            tls_missing=_native_tls_missing,
            kernel_timestamps_missing=_native_kernel_timestamps_missing,
        ),
        # httpx/httpcore: HTTP/2, proxies, any TLS Python has.
        TransportEntry("httpx", _build_httpx, tls=True, http2=True, proxies=True),
        # plain HTTP/1.1 on the event loop, one native call per read.
        TransportEntry("asyncio", _build_asyncio),
    )
}

#: The --transport choices: "auto" (the first transport that can serve the run), then each transport.
TRANSPORT_NAMES: tuple[str, ...] = ("auto", *TRANSPORTS)

# Connections a transport may open: enough for the plan's requests in flight, and no fewer than
# this (rate mode without --max-concurrency has no bound of its own).
MIN_CONNECTIONS = 100


def check_transport(name: str) -> str:
    """name if it is a transport pytps has (or "auto"), else ConfigError listing them."""
    if name != "auto" and name not in TRANSPORTS:
        names = ("auto", *TRANSPORTS)
        raise ConfigError(f"transport (--transport) {name!r} is unknown; use one of {', '.join(names)}")
    return name


def _needs(cfg: TransportSettings) -> list[str]:
    """What the run asks of a transport beyond plain http:// over HTTP/1.1, in the flags' words."""
    needs = []
    if urlsplit(cfg.base_url).scheme == "https":
        needs.append("https://")
    if cfg.http2:
        needs.append("--http2")
    return needs


def _lacks(entry: TransportEntry, needs: list[str]) -> list[str]:
    has = {"https://": entry.tls, "--http2": entry.http2}
    return [need for need in needs if not has[need]]


def _use_instead(entry: TransportEntry, lacking: list[str]) -> str:
    """The fix for what `entry` lacks: use --transport X (or auto), naming the transports that have it."""
    others = [e for e in TRANSPORTS.values() if e is not entry]
    whole = [e.name for e in others if not _lacks(e, lacking)]
    text = f"use {' or '.join(f'--transport {n}' for n in whole)} (or auto)" if whole else "no transport does"
    if len(lacking) > 1:  # also those that have a part of it
        for e in others:
            part = [need for need in lacking if need not in _lacks(e, lacking)]
            if part and e.name not in whole:
                text += f", or --transport {e.name} for {' and '.join(part)}"
    return text


def _serves(entry: TransportEntry, cfg: TransportSettings, needs: list[str]) -> bool:
    """Whether auto may pick `entry` for this run."""
    if _lacks(entry, needs):
        return False
    if "https://" in needs and entry.tls_missing() is not None:
        return False
    # A proxy in the environment is honoured by some transports only: the others go direct.
    # (Imported here: network loads ssl, which the --transport choices of `--help` do not need.)
    from pytps.transport.network import proxy_for

    return entry.proxies or proxy_for(cfg.base_url) is None


def choose_transport(cfg: TransportSettings) -> str:
    """The transport a run uses. auto: the first in TRANSPORTS that speaks what the run needs
    (https://, --http2), can speak TLS in this build, and honours the environment's proxy if
    one is set: the native engine for HTTP/1.1 without a proxy, else httpx. A named transport is
    checked against what it can do, and --kernel-timestamps against the chosen one."""
    check_transport(cfg.transport)
    needs = _needs(cfg)
    if cfg.transport == "auto":
        chosen = next((e for e in TRANSPORTS.values() if _serves(e, cfg, needs)), None)
        if chosen is None:
            raise ConfigError(f"no transport pytps has can serve {cfg.base_url!r} with {' and '.join(needs)}")
    else:
        chosen = TRANSPORTS[cfg.transport]
        lacking = _lacks(chosen, needs)
        if lacking:
            raise ConfigError(
                f"the {chosen.name} transport speaks {chosen.speaks()}; "
                f"for {' or '.join(lacking)} {_use_instead(chosen, lacking)}"
            )
        missing = chosen.tls_missing() if "https://" in needs else None
        if missing is not None:
            raise ConfigError(f"--transport {chosen.name} with an https:// URL: {missing}")
    if cfg.kernel_timestamps and not chosen.kernel_timestamps:
        stampers = [e.name for e in TRANSPORTS.values() if e.kernel_timestamps] or ["native"]
        raise ConfigError(
            f"--kernel-timestamps needs the {' or '.join(stampers)} transport (this run would use "
            f"{chosen.name}): add --transport {stampers[0]}, or leave --kernel-timestamps out"
        )
    stamps_missing = chosen.kernel_timestamps_missing() if cfg.kernel_timestamps else None
    if stamps_missing is not None:
        raise ConfigError(f"--kernel-timestamps: {stamps_missing}")
    return chosen.name


def make_transport(cfg: TransportSettings) -> Transport:
    """The transport choose_transport() names, set up with the run's timeouts and trust settings."""
    entry = TRANSPORTS[choose_transport(cfg)]
    return entry.build(cfg, max(cfg.plan.max_in_flight or 0, MIN_CONNECTIONS))
