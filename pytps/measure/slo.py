"""Service-level objectives: which requests were useful, and whether a run met its run-level targets.

A request is *useful* when it succeeded, met every per-request limit (`--slo ttft=0.5,tpot=0.02`)
and passed validation (`--expect-regex`, `--expect-json`). Run-level objectives (`--slo-run
ttft:p90=0.5`) decide whether a run passes; they are reported beside goodput, never mixed into
it. Definitions: docs/metrics.md, "Goodput and SLOs".
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from pytps.errors import ConfigError
from pytps.grading.grade import Grade
from pytps.grading.graders import Grading, compile_re2
from pytps.measure.cost import Prices
from pytps.measure.metrics import RequestMetrics
from pytps.measure.records import RequestRecord

#: Per-request metrics an SLO may name: SLO name -> RequestMetrics field (seconds).
REQUEST_METRICS = {"ttft": "ttft_s", "ttfat": "ttfat_s", "tpot": "tpot_s", "e2e": "e2e_s", "e2e_500": "e2e_500_s"}
#: Statistics a run-level SLO may name, as the summary's distribution keys.
RUN_STATS = ("mean", "p50", "p90", "p95", "p99", "p999", "max")
_SLO_FORM = "NAME=SECONDS[,NAME=SECONDS...] with NAME one of " + ", ".join(REQUEST_METRICS)
_RUN_FORM = (
    "NAME:STAT=SECONDS[,...] with NAME one of "
    + ", ".join(REQUEST_METRICS)
    + " and STAT one of "
    + ", ".join(RUN_STATS)
)


def _number(text: str, where: str, form: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ConfigError(f"{where}: {text!r} is not a number of seconds; write {form}") from None
    if not value > 0:
        raise ConfigError(f"{where}: the limit must be > 0 seconds, got {text}")
    return value


def _spec_items(spec: str | dict[str, float] | None) -> list[tuple[Any, Any]]:
    """`a=1,b=2` (or a mapping) as its (name, value) pairs; none for an empty spec."""
    if not spec:
        return []
    return list(spec.items()) if isinstance(spec, dict) else [p.partition("=")[::2] for p in spec.split(",")]


def parse_slo(spec: str | dict[str, float] | None) -> dict[str, float]:
    """`ttft=0.5,tpot=0.02` (or a mapping) -> {"ttft": 0.5, "tpot": 0.02}."""
    out: dict[str, float] = {}
    for name, value in _spec_items(spec):
        name = str(name).strip()
        if name not in REQUEST_METRICS:
            raise ConfigError(f"slo (--slo) names {name!r}; write {_SLO_FORM}")
        out[name] = _number(str(value).strip(), f"slo (--slo) {name}", _SLO_FORM)
    return out


def parse_slo_run(spec: str | dict[str, float] | None) -> dict[str, float]:
    """`ttft:p90=0.5,e2e:p99=10` (or a mapping) -> {"ttft:p90": 0.5, "e2e:p99": 10.0}."""
    out: dict[str, float] = {}
    for key, value in _spec_items(spec):
        name, _, stat = str(key).strip().partition(":")
        if name not in REQUEST_METRICS or stat not in RUN_STATS:
            raise ConfigError(f"slo_run (--slo-run) names {key!r}; write {_RUN_FORM}")
        out[f"{name}:{stat}"] = _number(str(value).strip(), f"slo_run (--slo-run) {key}", _RUN_FORM)
    return out


@dataclass
class Validation:
    """What a useful answer must look like: a regular expression it contains, or JSON (optionally
    an object with these keys)."""

    regex: str | None = None
    json: bool = False
    json_keys: tuple[str, ...] = ()
    # RE2's compiled pattern: matching takes linear time, so no answer can hang the run.
    _compiled: Any = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.regex is not None:
            try:
                re.compile(self.regex)
            except re.error as exc:
                raise ConfigError(
                    f"expect_regex (--expect-regex) {self.regex!r} is not a valid regular expression: {exc}"
                ) from None
            self._compiled = compile_re2(self.regex)
            if self._compiled is None:
                raise ConfigError(
                    f"expect_regex (--expect-regex) {self.regex!r} needs Python-only syntax (a backreference or "
                    "lookaround): --expect-regex is matched by RE2, in linear time; rewrite it without, or grade "
                    'with a dataset record\'s "grader": "regex" (run under --grader-timeout-s)'
                )

    @property
    def active(self) -> bool:
        return self._compiled is not None or self.json

    def describe(self) -> dict[str, Any] | None:
        if not self.active:
            return None
        return {"regex": self.regex, "json": self.json, "json_keys": list(self.json_keys)}

    def failure(self, answer: str) -> str | None:
        """Why the answer fails validation, or None when it passes."""
        if self._compiled is not None and not self._compiled.search(answer):
            return f"validation: the answer does not match /{self.regex}/"
        if self.json:
            try:
                value: Any = json.loads(answer)
            except json.JSONDecodeError as exc:
                return f"validation: the answer is not JSON ({exc.msg} at character {exc.pos})"
            missing = [k for k in self.json_keys if not isinstance(value, dict) or k not in value]
            if missing:
                return f"validation: the answer's JSON lacks {', '.join(missing)}"
        return None


def usefulness(
    m: RequestMetrics, slo: dict[str, float], validation_failure: str | None, grade: Grade | None = None
) -> str | None:
    """Why a request was not useful (its error, the first SLO it missed, its validation, its graded
    answer: "wrong: ..." or "grader_error: ..."), or None. A metric a request does not have (TPOT
    of a one-token answer) is not held against it."""
    if not m.ok:
        return f"error: {m.error}"
    for name, limit in slo.items():
        value = getattr(m, REQUEST_METRICS[name])
        if value is not None and value > limit:
            return f"slo: {name} {value:.6g} s > {limit:g} s"
    if validation_failure is not None:
        return validation_failure
    if grade is not None and grade.correct is not True:
        return grade.reason if grade.correct is None else f"wrong: {grade.reason}"
    return None


def evaluate_run(slo_run: dict[str, float], summary: dict[str, Any]) -> list[dict[str, Any]]:
    """Each run-level objective with the run's value and whether it was met."""
    out = []
    for key, limit in slo_run.items():
        name, stat = key.split(":")
        value = (summary.get(REQUEST_METRICS[name]) or {}).get(stat)
        out.append({"slo": key, "limit_s": limit, "value_s": value, "met": value is not None and value <= limit})
    return out


@dataclass(frozen=True)
class Verdict:
    """What the judge said of one request."""

    useful: bool
    why_not: str | None  # the reason it was not useful
    cost: float | None  # None without prices
    grade: Grade | None = None  # its graded answer, when it was graded


@dataclass
class Judge:
    """Decides, once per finished request, whether it was useful and what it cost."""

    slo: dict[str, float] = field(default_factory=dict)
    slo_run: dict[str, float] = field(default_factory=dict)
    validation: Validation = field(default_factory=Validation)
    prices: Prices | None = None
    prompt_includes_cached: bool = True  # False for Anthropic (pytps.workload.request_formats)
    # Graded answers (pytps.grading.graders): a useful answer is also a correct one.
    grading: Grading = field(default_factory=Grading)
    keep_text: bool = False  # --keep-text: the answer text goes into the journal

    def describe(self) -> dict[str, Any]:
        """The objectives and prices a run was judged by (results.json metadata.slo)."""
        p = self.prices
        return {
            "per_request_s": dict(self.slo),
            "run_s": dict(self.slo_run),
            "validation": self.validation.describe(),
            "grading": self.grading.describe(),
            "prices": None
            if p is None
            else {
                "currency": p.currency,
                "input_per_mtok": p.input_per_mtok,
                "cached_input_per_mtok": p.cached_input_per_mtok,
                "output_per_mtok": p.output_per_mtok,
                "per_request": p.per_request,
                "bill_failed": p.bill_failed,
            },
        }

    def verdict(self, rec: RequestRecord, m: RequestMetrics) -> Verdict:
        failed_validation = self.validation.failure(rec.text) if self.validation.active and m.ok else None
        why = usefulness(m, self.slo, failed_validation, rec.grade)
        cost = None
        if self.prices is not None:
            cost = self.prices.request_cost(rec, m.output_tokens, prompt_includes_cached=self.prompt_includes_cached)
        return Verdict(why is None, why, cost, rec.grade)
