"""Stubs of what csrc/bindings/register_emulator.cpp adds to pytps._core."""

from typing import Any, Final

class Emulator:
    """The native streaming emulator; use pytps.Emulator, which validates the settings and builds
    the config dict (ns units: ttft_ns, itl_ns, itl_sd_ns, itl_replay_ns, prefill_ns_per_token,
    keepalive_ns, spin_ns; plus host, port, ttft_dist, itl_dist, max_batch, batch_slowdown,
    power_idle_w, power_per_stream_w,
    tokens_per_event, coalesce,
    reasoning_tokens, tool_calls, max_output_tokens, default_output_tokens, model, faults,
    seed, realtime, truth_log, keep_truth). Serves OpenAI, Anthropic and Ollama endpoints on its
    own thread."""

    def __init__(self, config: dict[str, Any]) -> None: ...
    def start(self) -> int:
        """Binds, listens, starts the timing thread; returns the port. ValueError when the
        address cannot be bound or the emulator was already started."""
    def stop(self) -> None:
        """Stops the thread and closes every connection (open streams recorded as incomplete)."""
    port: Final[int]
    """The bound port (0 before start())."""
    running: Final[bool]
    """True between start() and stop()."""
    def truth(self, clear: bool = False) -> list[dict[str, Any]]:
        """One record per finished generation request (see pytps.Emulator.truth: admitted_ns,
        released_ns, queued_ns and the per-event batch array come from the load model);
        clear=True hands the records over and forgets them."""
    def wait_truth(self, n: int, timeout_s: float = 5.0) -> int:
        """Waits until at least n records are kept or the timeout passes; returns the count."""
    def stats(self) -> dict[str, int]:
        """Counters: connections_accepted, connections_open, requests, generation_requests,
        streams_active (queued ones included), decoding, queued, events_sent, writes, bytes_sent, write_blocked, faults,
        spins, sleeps, parse_bytes, first_accept_ns (CLOCK_MONOTONIC of the first accepted
        connection, 0 before it), prefix_cache_resets."""
