"""What every HTTP client of pytps's shares about the network: the proxy the environment sets for
a URL, and the hint a certificate failure gets."""

from __future__ import annotations

import os
import ssl
from urllib.parse import urlsplit

TLS_TRUST_HINT = (
    "if the server's certificate is signed by a private CA, trust that CA with --ca-bundle PATH; "
    "to skip verification, --insecure"
)


def tls_hint(exc: BaseException) -> str | None:
    """The --ca-bundle/--insecure hint when exc (or what caused it) is a certificate verification failure."""
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            break
        if isinstance(seen, ssl.SSLCertVerificationError) or "CERTIFICATE_VERIFY_FAILED" in str(seen):
            return TLS_TRUST_HINT
        seen = seen.__cause__ or seen.__context__
    return None


def resolver_host(host: str) -> str | bytes:
    """host as socket.getaddrinfo (and socket.create_connection) should take it: an ASCII name as
    the very bytes CPython would make of it, so CPython does not encode it with the idna codec,
    whose import (encodings.idna, stringprep, unicodedata: ~1 ms, ~6 ms under importtime) every
    run paid (issue 42). The idna codec turns an ASCII name into its ASCII bytes unchanged, and
    refuses one with an empty or over-63-character label (UnicodeError): such a name, like any
    non-ASCII one, is passed as it is, so the codec sees it and answers exactly as before."""
    if host.isascii():
        labels = host.split(".")
        if all(0 < len(label) < 64 for label in labels[:-1]) and len(labels[-1]) < 64:
            return host.encode("ascii")
    return host


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
