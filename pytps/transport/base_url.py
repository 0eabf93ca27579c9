"""A base URL as every transport reads it: the one place that decides what goes in the Host
header, what path (and query) a request asks for, and what a URL's userinfo becomes.

- The Host header is host[:port], never the userinfo (user:password@ is a credential: sent in
  Host it reaches every proxy's and server's access log).
- The query string is kept on every request path: Azure OpenAI's `?api-version=` is part of
  the endpoint, so /v1/chat/completions becomes /v1/chat/completions?api-version=...
- userinfo becomes HTTP Basic auth (RFC 7617) where no other credential is sent; with an API
  key (or an Authorization header) the two would fight over one header, and make_config
  refuses the pair in one line (see refuse_userinfo_with_key)."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from pytps.errors import ConfigError

#: Headers that carry a credential of their own: with one of them, userinfo is not sent.
_AUTH_HEADERS = ("authorization", "x-api-key", "api-key")


@dataclass(frozen=True)
class BaseUrl:
    """One parsed base URL. Build it with BaseUrl.parse()."""

    scheme: str
    host: str  # as getaddrinfo takes it: no brackets around an IPv6 address
    port: int
    prefix: str  # the path before pytps's request paths, without a trailing "/"
    query: str  # without the "?"; "" for none
    username: str | None  # percent-decoded
    password: str | None
    explicit_port: bool

    @classmethod
    def parse(cls, url: str) -> BaseUrl:
        parts = urlsplit(url)
        host = parts.hostname or ""
        try:
            port = parts.port
        except ValueError:
            raise ConfigError(
                "the base URL's port is not a number from 0 to 65535; write it like http://host:8000"
            ) from None
        tls = parts.scheme == "https"
        return cls(
            scheme=parts.scheme,
            host=host,
            port=port if port is not None else (443 if tls else 80),
            prefix=parts.path.rstrip("/"),
            query=parts.query,
            username=unquote(parts.username) if parts.username is not None else None,
            password=unquote(parts.password) if parts.password is not None else None,
            explicit_port=port is not None,
        )

    @property
    def tls(self) -> bool:
        return self.scheme == "https"

    @property
    def host_header(self) -> str:
        """The Host header's value: host[:port], IPv6 in brackets, never userinfo."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}" if self.explicit_port else host

    @property
    def origin(self) -> str:
        """scheme://host[:port], with no userinfo, path or query."""
        return f"{self.scheme}://{self.host_header}"

    @property
    def shown(self) -> str:
        """The URL without its userinfo (for messages; a query may still hold a secret: redact)."""
        return self.origin + self.prefix + (f"?{self.query}" if self.query else "")

    def target(self, path: str) -> str:
        """The request target for a pytps path (/v1/chat/completions): prefix, path and the base
        URL's query (after the path's own query, if it has one)."""
        out = self.prefix + path
        if self.query:
            out += ("&" if "?" in path else "?") + self.query
        return out

    def url(self, path: str) -> str:
        """The absolute URL of a pytps path, without userinfo."""
        return self.origin + self.target(path)

    @property
    def has_userinfo(self) -> bool:
        return self.username is not None

    def basic_auth(self) -> dict[str, str]:
        """{"Authorization": "Basic ..."} from the userinfo, or {} without one."""
        if self.username is None:
            return {}
        token = base64.b64encode(f"{self.username}:{self.password or ''}".encode()).decode("ascii")
        return {"Authorization": f"Basic {token}"}

    def auth_for(self, headers: Mapping[str, str]) -> dict[str, str]:
        """The Basic auth header to add to a request with these headers: none when they carry a
        credential already (the userinfo never replaces an API key)."""
        if any(k.lower() in _AUTH_HEADERS for k in headers):
            return {}
        return self.basic_auth()


def has_userinfo(url: str) -> bool:
    return "@" in urlsplit(url).netloc


def refuse_userinfo_with_key(url: str, api_key: str | None, headers: Mapping[str, str]) -> None:
    """ConfigError (one line, naming no secret) when the base URL has user:password@ and an API
    key or an auth header is given too: pytps would have to pick one credential silently."""
    if not has_userinfo(url):
        return
    if api_key or any(k.lower() in _AUTH_HEADERS for k in headers):
        raise ConfigError(
            "the base URL (--base-url) carries user:password@ and an API key (or auth header) is given too: "
            "pass one credential; drop the userinfo from the URL, or unset the API key to send it as Basic auth"
        )
