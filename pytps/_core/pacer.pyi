"""Stubs of what csrc/bindings/register_pacer.cpp adds to pytps._core."""

class FramePacer:
    """A sender thread that writes already-encoded bytes to sockets at absolute due instants
    (CLOCK_MONOTONIC ns), stamping each write right before its send(); it never needs the GIL.
    While a channel is open the pacer is the only writer of its descriptor."""

    def __init__(self, spin_ns: int = 50000, realtime: bool = False) -> None: ...
    @property
    def realtime(self) -> bool:
        """Whether the thread runs SCHED_FIFO (asked with realtime=True; refused without root or
        CAP_SYS_NICE, when it runs as a normal thread)."""
    def open(self, fd: int) -> int:
        """A channel writing to fd (a connected non-blocking socket the caller keeps owning)."""
    def send(self, channel: int, due_ns: int, data: bytes, stamped: bool = False) -> bool:
        """Queues data to be written at due_ns (<= now: at once), after the channel's items due no
        later. False when the channel is closed or a write on it failed."""
    def send_frames(self, channel: int, due_ns: list[int], data: list[bytes]) -> bool:
        """Queues frames data[i] at due_ns[i] (non-decreasing), all stamped, under one lock; they
        must be due no earlier than what the channel already holds. False as send()."""
    def close(self, channel: int) -> tuple[list[int], int, int]:
        """Ends the channel (unsent items dropped; no write on its descriptor under way once this
        returns): (the stamped items' write stamps in write order, items unsent, a failed write's
        errno or 0)."""
