"""The error class (docs/metrics.md, "Errors") of an exception that ended a request: the one
classifier of the httpx transport and of an instrumented application's calls.

It reads the names of the exception's classes, so httpx and httpx2, httpcore and httpcore2,
aiohttp, requests and the standard library are classified alike and none of them is imported.
"""

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

# Every timeout is `timeout`, a connect timeout too (docs/metrics.md), so these are read first.
_TIMEOUT = {
    "TimeoutException",  # httpx, httpcore: connect, read, write and pool timeouts
    "ReadTimeout",
    "WriteTimeout",
    "PoolTimeout",
    "ConnectTimeout",
    "TimeoutError",
    "ServerTimeoutError",  # aiohttp
    "Timeout",  # requests
}
_CONNECT = {"ConnectError", "ConnectionRefusedError", "ClientConnectorError", "NewConnectionError"}
# The connection ended (or a write failed) before the response was whole.
_ENDED = {
    "RemoteProtocolError",
    "ReadError",
    "WriteError",
    "ConnectionResetError",
    "BrokenPipeError",
    "ServerDisconnectedError",
    "ClientPayloadError",
    "ChunkedEncodingError",
    "ProtocolError",  # urllib3's (httpx's base class of it is ruled out below)
    "IncompleteRead",
}
# What the client did wrong itself (httpx: a request it could not send as given).
_OWN = {"LocalProtocolError", "UnsupportedProtocol"}


def error_class(exc: BaseException, *, response_started: bool) -> str:
    """timeout, connect, no_response (the connection ended before any byte of a response),
    truncated (it ended while the response came), protocol (bytes that could not be parsed),
    else client. response_started: whether any byte of the response had come."""
    names = {cls.__name__ for cls in type(exc).__mro__}
    if names & _TIMEOUT:
        return ERROR_TIMEOUT
    if names & _CONNECT:
        return ERROR_CONNECT
    if names & _ENDED and not names & _OWN:
        if "RemoteProtocolError" in names and not closed_early(exc):
            return ERROR_PROTOCOL  # h11 could not parse what the server sent
        return ERROR_TRUNCATED if response_started else ERROR_NO_RESPONSE
    return ERROR_CLIENT
