"""Transports turn RequestSpecs into RequestRecords; they know nothing about metrics.

The contract is pytps.transport.base.Transport; the three that ship are native_transport,
asyncio_transport and httpx_transport, and select.py picks one for a run.
"""

from pytps.transport.base import TRANSPORT_NAMES, RequestRecord, RequestSpec, Transport

__all__ = ["TRANSPORT_NAMES", "RequestRecord", "RequestSpec", "Transport"]
