"""pytps.transport.registry: every transport is one entry (name, builder, capabilities), and the
--transport choices, validation, auto and the errors all follow from the entries."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest
from canned_transport import CannedTransport

from pytps._native import _core
from pytps.errors import ConfigError
from pytps.runner.config import make_config
from pytps.runner.loop import Runner
from pytps.transport import registry
from pytps.transport.registry import (
    TRANSPORT_NAMES,
    TRANSPORTS,
    TransportEntry,
    check_transport,
    choose_transport,
    make_transport,
)

NO_PROXY_VARS = ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY")


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch):
    for var in NO_PROXY_VARS:
        monkeypatch.delenv(var, raising=False)


class OwnedCanned(CannedTransport):
    """A CannedTransport the registry builds: the runner made it, so the runner closes it."""

    closed = False

    async def aclose(self) -> None:
        self.closed = True


def _fake(**caps) -> TransportEntry:
    return TransportEntry("fake", lambda cfg, max_connections: OwnedCanned(), **caps)


def _with(monkeypatch, entry: TransportEntry, *, first: bool = False) -> None:
    """The registry with `entry` added: last (auto tries it last), or first."""
    entries = {entry.name: entry, **TRANSPORTS} if first else {**TRANSPORTS, entry.name: entry}
    monkeypatch.setattr(registry, "TRANSPORTS", entries)


def test_the_names_are_the_entries():
    assert TRANSPORT_NAMES == ("auto", "native", "httpx", "asyncio")
    assert tuple(TRANSPORTS) == TRANSPORT_NAMES[1:]
    assert all(name == entry.name for name, entry in TRANSPORTS.items())
    with pytest.raises(ConfigError, match="'carrier-pigeon' is unknown; use one of auto, native, httpx, asyncio"):
        check_transport("carrier-pigeon")


def test_capabilities_match_what_each_transport_does():
    made = [e.build(make_config("http://127.0.0.1:9", transport=name, rate=5), 1) for name, e in TRANSPORTS.items()]
    try:
        for t in made:
            entry = TRANSPORTS[t.name]
            # A transport that paces rate-mode sends itself is handed them ahead of time.
            assert (t.schedule_lead_ns > 0) == entry.rate_timers, t.name
            assert hasattr(t, "kernel_timestamps") == entry.kernel_timestamps, t.name
    finally:
        async def close_all():
            for t in made:
                await t.aclose()

        asyncio.run(close_all())
    assert TRANSPORTS["httpx"].http2 and not TRANSPORTS["native"].http2 and not TRANSPORTS["asyncio"].tls


def test_a_new_entry_is_selectable_and_builds_what_the_runner_drives(monkeypatch, tmp_path):
    _with(monkeypatch, _fake())
    assert "fake" not in TRANSPORT_NAMES  # the --transport choices are fixed at import; the checks read the entries
    cfg = make_config("http://127.0.0.1:9", model="m", transport="fake", requests=3, input_tokens=8, out=tmp_path / "o")
    assert choose_transport(cfg) == "fake"
    assert isinstance(make_transport(cfg), OwnedCanned)
    result = asyncio.run(Runner(cfg).run())
    assert result.metadata["transport"] == "canned" and result.summary["requests_ok"] == 3
    # Last in the registry's order: auto never gets to it while native or httpx can serve.
    assert choose_transport(make_config("http://127.0.0.1:9")) == "native"


def test_the_errors_follow_the_capabilities(monkeypatch):
    _with(monkeypatch, _fake())  # plain http:// over HTTP/1.1, nothing else
    with pytest.raises(ConfigError) as err:
        choose_transport(make_config("https://127.0.0.1:9", transport="fake"))
    assert str(err.value) == (
        "the fake transport speaks HTTP/1.1 over plain http://; "
        "for https:// use --transport native or --transport httpx (or auto)"
    )
    with pytest.raises(ConfigError) as err:
        choose_transport(make_config("https://127.0.0.1:9", transport="fake", http2=True))
    assert str(err.value) == (
        "the fake transport speaks HTTP/1.1 over plain http://; for https:// or --http2 use "
        "--transport httpx (or auto), or --transport native for https://"
    )
    with pytest.raises(ConfigError, match=r"--kernel-timestamps needs the native transport \(this run would use fake"):
        choose_transport(make_config("http://127.0.0.1:9", transport="fake", kernel_timestamps=True))

    # The same fake, given HTTP/2 and kernel stamps: the checks read what the entry says.
    _with(monkeypatch, _fake(http2=True, kernel_timestamps=True))
    assert choose_transport(make_config("http://127.0.0.1:9", transport="fake", http2=True)) == "fake"
    assert choose_transport(make_config("http://127.0.0.1:9", transport="fake", kernel_timestamps=True)) == "fake"
    with pytest.raises(ConfigError, match="needs the native or fake transport"):
        choose_transport(make_config("http://127.0.0.1:9", transport="asyncio", kernel_timestamps=True))

    # A build without kernel stamps (not Linux): one line that says why.
    _with(monkeypatch, _fake(kernel_timestamps=True, kernel_timestamps_missing=lambda: "Linux only: leave it out"))
    with pytest.raises(ConfigError, match=r"^--kernel-timestamps: Linux only: leave it out$"):
        choose_transport(make_config("http://127.0.0.1:9", transport="fake", kernel_timestamps=True))


def test_the_native_transport_says_whether_this_build_has_kernel_stamps():
    missing = TRANSPORTS["native"].kernel_timestamps_missing()
    if _core.KERNEL_TIMESTAMPS:
        assert missing is None
    else:
        assert missing is not None and "Linux only" in missing and "\n" not in missing


def test_auto_takes_the_first_entry_that_can_serve(monkeypatch):
    broken_tls = _fake(tls=True, tls_missing=lambda: "no TLS in this fake: use another")
    _with(monkeypatch, broken_tls, first=True)
    assert choose_transport(make_config("http://127.0.0.1:9")) == "fake"
    # https:// that this build of the entry cannot speak: auto passes over it, a named choice says why.
    assert choose_transport(make_config("https://127.0.0.1:9")) == ("native" if _core.TLS_AVAILABLE else "httpx")
    with pytest.raises(ConfigError, match=r"^--transport fake with an https:// URL: no TLS in this fake: use another$"):
        choose_transport(make_config("https://127.0.0.1:9", transport="fake"))
    # A proxy in the environment: only an entry that honours it is picked.
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.invalid:3128")
    assert choose_transport(make_config("http://10.1.2.3:8000")) == "httpx"
    _with(monkeypatch, dataclasses.replace(broken_tls, proxies=True), first=True)
    assert choose_transport(make_config("http://10.1.2.3:8000")) == "fake"
