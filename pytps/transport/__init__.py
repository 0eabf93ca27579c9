"""Transports turn RequestSpecs into RequestRecords; they know nothing about metrics."""

from .httpx_transport import HttpxTransport, RequestSpec, classify_exception

__all__ = ["HttpxTransport", "RequestSpec", "classify_exception"]
