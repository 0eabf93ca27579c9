"""The error class (docs/metrics.md, "Errors") of an exception that ended an instrumented call,
for httpx and httpx2, httpcore and httpcore2, aiohttp and requests alike: by the exception
classes' names, so no client package is imported to classify."""

from __future__ import annotations

from pytps.measure.records import (
    ERROR_CLIENT,
    ERROR_CONNECT,
    ERROR_NO_RESPONSE,
    ERROR_PROTOCOL,
    ERROR_TIMEOUT,
    ERROR_TRUNCATED,
    closed_early,
)

_TIMEOUT = {"TimeoutException", "ReadTimeout", "WriteTimeout", "PoolTimeout", "TimeoutError", "ServerTimeoutError"}
_CONNECT = {"ConnectError", "ConnectTimeout", "ConnectionRefusedError", "ClientConnectorError", "NewConnectionError"}
_ENDED = {
    "RemoteProtocolError",
    "ReadError",
    "WriteError",
    "ConnectionResetError",
    "BrokenPipeError",
    "ServerDisconnectedError",
    "ClientPayloadError",
    "ChunkedEncodingError",
    "ProtocolError",
    "IncompleteRead",
}


def error_class(exc: BaseException, *, response_started: bool) -> str:
    """timeout, connect, no_response (ended before any byte of a response), truncated (ended
    while the body came), protocol (bytes that could not be parsed), else client."""
    names = {cls.__name__ for cls in type(exc).__mro__}
    if names & _CONNECT:
        return ERROR_CONNECT
    if names & _TIMEOUT:
        return ERROR_TIMEOUT
    if names & _ENDED:
        if "RemoteProtocolError" in names and not closed_early(exc):
            return ERROR_PROTOCOL
        return ERROR_TRUNCATED if response_started else ERROR_NO_RESPONSE
    return ERROR_CLIENT
