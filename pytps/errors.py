"""Every public pytps error is a class here; the CLI turns each into one line and an exit code."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path


class PytpsError(Exception):
    """Base class of all pytps errors."""


class ProtocolError(PytpsError, ValueError):
    """The byte stream breaks its protocol beyond local recovery (e.g. a line over the parser's bound)."""


class BuildError(PytpsError, ImportError):
    """The compiled module pytps._core is missing or does not match this package."""


class ConfigError(PytpsError, ValueError):
    """A run is configured in a way that cannot work (a bad flag, length spec, API or dataset). Raised
    before any request is sent, with the bad value and the accepted forms."""


class EndpointError(PytpsError):
    """The endpoint cannot be benchmarked as asked: unreachable, refusing the key, unknown path or model."""


class ServerStartError(PytpsError):
    """A server pytps launched (`--serve`) exited before it was ready, was not ready in time, or
    ignored SIGTERM (killed after the grace period).
    The message is one line; `log_tail` holds the last lines of its output (secrets redacted)."""

    def __init__(self, message: str, log_tail: list[str] | None = None) -> None:
        super().__init__(message)
        self.log_tail = list(log_tail or [])


class StoreError(PytpsError):
    """The results store cannot be used: it cannot be opened, its schema is newer than this pytps
    knows, or its backend is not installed. A run that meets it still writes its folder."""


def loads_json(text: str | bytes, what: str, error: type[Exception] = ConfigError) -> object:
    """json.loads, or `error` saying that `what` is not JSON and where (one line: a JSON parser's
    message names the line and column of multi-line text only)."""
    import json

    try:
        return json.loads(text)
    except RecursionError:
        raise error(f"{what} is nested too deep for the JSON parser (about 1,000 levels at most)") from None
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno}, column {exc.colno}" if exc.lineno > 1 else f"column {exc.colno}"
        raise error(f"{what} is not JSON ({exc.msg} at {where})") from None


def read_json_if_any(path: Path) -> object:
    """A file's one JSON value, or None when it is missing, unreadable or not JSON: for a file a
    caller can do without (a cache, the index a new run starts, a file beside the one asked for)
    or names the failure of in its own words."""
    import json

    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def read_json_or_lines(path: Path, cannot_read: str, bad_line: str) -> object:
    """A file's one JSON value, or its JSON Lines as a list of their values. The ConfigErrors are
    the caller's words: `cannot_read` formatted with {path} and {reason}, `bad_line` with {path},
    {name} (the file's name), {n} (the line) and {msg} (the JSON parser's)."""
    import json

    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(cannot_read.format(path=str(path), reason=exc.strerror or exc)) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    values = []
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                values.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise ConfigError(bad_line.format(path=str(path), name=path.name, n=n, msg=exc.msg)) from None
    return values
