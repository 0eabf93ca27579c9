"""Every public pytps error is a class here; the CLI turns each into one line and an exit code."""

from __future__ import annotations


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


class StoreError(PytpsError):
    """The results store cannot be used: it cannot be opened, its schema is newer than this pytps
    knows, or its backend is not installed. A run that meets it still writes its folder."""
