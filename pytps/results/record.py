"""Record: one finished HTTP attempt (or timed stream) as a library user sees it.

Its fields are a line of requests.jsonl (pytps.results.folder.journal_line: `ttft_s`, `output_tokens`,
`usage`, …) plus what only an embedded call knows (`ttfb_s`, `call_id`, `attempt`, `tag`, `model`,
…), as attributes and through as_dict(). The per-event arrays stay on `.request` (the
RequestRecord), so ITL samples are computed from it on demand, by pytps.measure.metrics as everywhere else.

The fields are computed on first use, not when the call finishes: the application's own thread
or event loop pays only for handing the record over (a JSONL journal computes them on its thread).
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from pytps.measure.records import RequestRecord

# One index per record in this process, so any set of records can be summarized together.
_indexes = itertools.count()


def next_index() -> int:
    return next(_indexes)


class Record:
    """One finished attempt: the requests.jsonl fields as attributes (`rec.ttft_s`) and as_dict()."""

    __slots__ = ("_extras", "_fields", "request")

    if TYPE_CHECKING:
        # The fields most read; every key of as_dict() is an attribute (docs/embedding.md).
        index: int
        ok: bool
        error: str | None
        error_detail: str | None
        status: int | None
        ttft_s: float | None
        ttfat_s: float | None
        ttfb_s: float | None
        e2e_s: float | None
        tpot_s: float | None
        decode_tps: float | None
        output_tokens: int
        token_source: str
        usage: dict[str, int]
        response_id: str | None
        model: str | None
        call_id: int | None
        attempt: int | None
        dialect: str | None
        streamed: bool

    def __init__(
        self,
        request: RequestRecord | None = None,
        extras: dict[str, Any] | None = None,
        *,
        fields: dict[str, Any] | None = None,
    ) -> None:
        # The measured RequestRecord (per-event arrays); None for a record read back from a journal.
        self.request = request
        self._extras = extras or {}
        self._fields = fields

    @property
    def tag(self) -> str | None:  # read by every collector: without computing the fields
        value: str | None = (self._fields or self._extras).get("tag")
        return value

    def _all(self) -> dict[str, Any]:
        fields = self._fields
        if fields is None:
            assert self.request is not None
            fields = self._fields = _fields_of(self.request, self._extras)
        return fields

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        try:
            return self._all()[name]
        except KeyError:
            raise AttributeError(f"a pytps record has no field {name!r}") from None

    def as_dict(self) -> dict[str, Any]:
        """The fields, JSON-ready (a copy)."""
        return dict(self._all())

    @property
    def itl_s(self) -> np.ndarray:
        """Inter-token latency samples in seconds, one per token after the first token-carrying
        event (docs/metrics.md, ITL): empty when the record carries no events."""
        from pytps.measure.metrics import NS_PER_S, event_tokens, itl_samples

        rec = self.request
        if rec is None or not len(rec.output_times_ns):
            return np.zeros(0, dtype=np.float64)
        values, counts = itl_samples(rec.output_times_ns, event_tokens(rec, int(self._all()["output_tokens"])))
        out: np.ndarray = np.repeat(values, counts) / NS_PER_S
        return out

    def __repr__(self) -> str:
        f = self._all()
        return (
            f"<pytps.Record call={f.get('call_id')} attempt={f.get('attempt')} tag={f.get('tag')!r} "
            f"status={f.get('status')} error={f.get('error')} ttft_s={f.get('ttft_s')} tokens={f.get('output_tokens')}>"
        )


def _fields_of(rec: RequestRecord, extras: dict[str, Any]) -> dict[str, Any]:
    """A finished RequestRecord's requests.jsonl line (its metrics, `ttfb_s` among them, and the
    default verdict, as `pytps run` writes it), then the extras."""
    from pytps.measure.metrics import measure
    from pytps.results.folder import journal_line

    m, _ = measure(rec)
    verdict = _judge().verdict(rec, m)
    line = journal_line(
        rec, {**m.as_dict(), "useful": verdict.useful, "why_not_useful": verdict.why_not, "cost": verdict.cost}
    )
    line["model"] = rec.model
    line.update(extras)
    return line


_JUDGE: Any = None


def _judge() -> Any:
    global _JUDGE
    if _JUDGE is None:
        from pytps.measure.slo import Judge

        _JUDGE = Judge()
    return _JUDGE
