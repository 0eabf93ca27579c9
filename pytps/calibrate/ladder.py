"""The calibration ladder: per-stream token rates x concurrency x tokens per event."""

from __future__ import annotations

from dataclasses import dataclass, field

#: Per-stream token rates (tok/s) and concurrencies of the full ladder (the issue's grid).
FULL_RATES_TPS = (100.0, 1_000.0, 5_000.0, 20_000.0, 50_000.0)
FULL_CONCURRENCY = (1, 8, 32, 128, 512)
#: --quick: three rates and three concurrencies, one transport (under a minute on 2 cores).
QUICK_RATES_TPS = (1_000.0, 5_000.0, 20_000.0)
QUICK_CONCURRENCY = (1, 8, 32)
#: From this per-stream rate on, events carry 4 tokens (as fast servers send them): at one
#: token per event 20k tok/s would be an event every 50 µs per stream.
MULTI_TOKEN_FROM_TPS = 20_000.0
MULTI_TOKENS_PER_EVENT = 4
#: At most this many events in one cell (all its streams): at 512 streams x 50k events/s a
#: one-second stream would be 25M events, minutes for a slow client to read.
MAX_CELL_EVENTS = 100_000
MIN_STREAM_EVENTS = 20
#: At least this many events in a cell (longer streams at low rates and concurrency), so that its
#: p99 is not simply its largest delay: at 100 tok/s one stream of one second is 100 events.
MIN_CELL_EVENTS = 300


@dataclass(frozen=True)
class Cell:
    """One point of the ladder: what the emulator sends, to how many streams at once."""

    rate_tps: float  # tokens per second per stream, as the emulator schedules them
    tokens_per_event: int
    concurrency: int

    @property
    def events_per_s(self) -> float:
        """Events per second per stream: the envelope's rate axis (client cost is per event)."""
        return self.rate_tps / self.tokens_per_event

    @property
    def itl_us(self) -> float:
        """The emulator's gap between events of one stream."""
        return 1e6 / self.events_per_s


@dataclass
class Ladder:
    rates_tps: tuple[float, ...]
    concurrency: tuple[int, ...]
    # Seconds each stream should last (output tokens = rate x this); requests per stream.
    stream_s: float = 1.0
    rounds: int = 1
    tokens_per_event: dict[float, tuple[int, ...]] = field(default_factory=dict)

    @classmethod
    def full(cls) -> Ladder:
        return cls(FULL_RATES_TPS, FULL_CONCURRENCY, stream_s=1.0)

    @classmethod
    def quick(cls) -> Ladder:
        return cls(QUICK_RATES_TPS, QUICK_CONCURRENCY, stream_s=1.0)

    def tpes(self, rate_tps: float) -> tuple[int, ...]:
        """Tokens per event at this rate: 1, and 4 where the rate needs it (>= 20k tok/s)."""
        if rate_tps in self.tokens_per_event:
            return self.tokens_per_event[rate_tps]
        return (1, MULTI_TOKENS_PER_EVENT) if rate_tps >= MULTI_TOKEN_FROM_TPS else (1,)

    def rows(self) -> list[tuple[float, int]]:
        """(rate, tokens per event): one emulator setting each; its cells go up in concurrency."""
        return [(r, t) for r in self.rates_tps for t in self.tpes(r)]

    def output_tokens(self, cell: Cell) -> int:
        """Tokens per request: the stream lasts about stream_s, with at least MIN_CELL_EVENTS and
        at most MAX_CELL_EVENTS in the cell, and at least MIN_STREAM_EVENTS per stream."""
        streams = cell.concurrency * self.rounds
        events = max(round(cell.events_per_s * self.stream_s), -(-MIN_CELL_EVENTS // streams))
        events = min(events, MAX_CELL_EVENTS // streams)
        return max(MIN_STREAM_EVENTS, events) * cell.tokens_per_event
