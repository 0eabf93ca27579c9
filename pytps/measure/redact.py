"""The one redaction rule: which strings of a run are secrets, and text with them replaced.

A secret is (docs/results.md, "Secrets"):
- the API key (from the environment variable, or given to the library);
- the value of every request header whose name is one of SECRET_HEADERS or contains one of
  SECRET_WORDS (Authorization, X-Api-Key, Cookie, X-Auth-Token, ...), and the credential after
  an auth scheme ("Bearer sk-..." gives "sk-..." too, which servers echo alone);
- the password and the whole userinfo of the base URL (`http://user:pass@host`);
- the value of every query parameter of the base URL whose name is a secret word (Gemini's `key=`).

Every message built from server text, every error detail and every line the CLI prints goes
through a Redactor before it is written, so nothing pytps writes (journal, console, HTML,
trace, report --json, sweep and matrix indexes) holds a secret. Strings shorter than 4
characters are not redacted: they would remove ordinary words and protect nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from urllib.parse import parse_qsl, unquote, urlsplit

#: Header names whose value is a secret, lower case.
SECRET_HEADERS = frozenset({"authorization", "proxy-authorization", "x-api-key", "api-key", "cookie", "set-cookie"})
#: A header or query parameter whose name contains one of these holds a secret.
SECRET_WORDS = ("token", "key", "secret", "auth", "password", "passwd", "cookie", "session", "signature", "sig")
#: What a secret is replaced with.
MASK = "***"
MIN_SECRET = 4


def is_secret_name(name: str) -> bool:
    """Whether a header or query parameter named `name` holds a secret."""
    low = name.strip().lower()
    return low in SECRET_HEADERS or any(word in low for word in SECRET_WORDS)


def header_secrets(headers: Mapping[str, str]) -> list[str]:
    """The secret values of request headers: each whole, and the credential after its scheme."""
    out: list[str] = []
    for name, value in headers.items():
        if not is_secret_name(name):
            continue
        out.append(value)
        scheme, _, credential = value.strip().partition(" ")
        if credential and scheme.isalpha():
            out.append(credential.strip())
    return out


def url_secrets(url: str | None) -> list[str]:
    """The secrets a URL carries: its userinfo (and password), and secret-named query values."""
    if not url:
        return []
    try:
        parts = urlsplit(url)
    except ValueError:
        return []
    out: list[str] = []
    if "@" in parts.netloc:
        userinfo = parts.netloc.rpartition("@")[0]
        out += [userinfo, unquote(userinfo)]
        if parts.password:
            out += [parts.password, unquote(parts.password)]
    for name, value in parse_qsl(parts.query, keep_blank_values=False):
        if is_secret_name(name):
            out.append(value)
    return out


def secrets_of(api_key: str | None, headers: Mapping[str, str] | None = None, base_url: str | None = None) -> list[str]:
    """Every secret of a run's settings, by the rule above."""
    out = [api_key] if api_key else []
    return out + header_secrets(headers or {}) + url_secrets(base_url)


class Redactor:
    """Replaces every secret (of 4+ characters) in a text by MASK; longest first, so a secret that
    contains another goes whole."""

    def __init__(self, secrets: Iterable[str | None] = ()) -> None:
        kept = {s for s in secrets if isinstance(s, str) and len(s) >= MIN_SECRET}
        self.secrets = sorted(kept, key=len, reverse=True)

    def __bool__(self) -> bool:
        return bool(self.secrets)

    def __call__(self, text: str) -> str:
        for secret in self.secrets:
            text = text.replace(secret, MASK)
        return text

    def optional(self, text: str | None) -> str | None:
        return self(text) if text else text


def redact(text: str, secrets: Iterable[str | None]) -> str:
    """text with every secret (of 4+ characters) replaced by MASK."""
    return Redactor(secrets)(text)
