"""Transports turn RequestSpecs into RequestRecords; they know nothing about metrics.

The contract is pytps.transport.base.Transport; the three that ship are native_transport,
asyncio_transport and httpx_transport, and registry.py holds them (TRANSPORTS: name, builder,
capabilities) and picks one for a run.
"""

from pytps.transport.base import RequestRecord, RequestSpec, Timeouts, Transport
from pytps.transport.registry import TRANSPORT_NAMES

__all__ = ["TRANSPORT_NAMES", "RequestRecord", "RequestSpec", "Timeouts", "Transport"]
