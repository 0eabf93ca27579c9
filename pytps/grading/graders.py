"""Grading answers against references (docs/grading.md).

A reference comes with each dataset record ("expected", "grader", options) or each built-in task
(pytps.workload.tasks). parse_reference() checks one before the run starts, so a bad record is one
line naming its file and line; Grading.grade() judges a finished request's answer text (reasoning
excluded) once, before the runner drops the text. A grader that raises marks that request
grader_error with the exception's text, and the run goes on.

No answer can hang a run: regexes are matched by RE2 (linear time) where RE2 can take the
pattern; a user's grader, a JSON Schema (its `pattern`s are Python regexes) and a pattern RE2
cannot take run in a worker process (grading/grader_pool) that is killed at the answer's
deadline (--grader-timeout-s), which makes the verdict grader_timeout.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from pytps.errors import ConfigError, loads_json
from pytps.grading import DEFAULT_GRADER_TIMEOUT_S as DEFAULT_GRADER_TIMEOUT_S
from pytps.grading.answers import EXTRACTORS
from pytps.grading.grade import Grade


class Answered(Protocol):
    """What grading reads of a finished request (pytps.measure.records.RequestRecord is one)."""

    @property
    def index(self) -> int: ...

    @property
    def model(self) -> str | None: ...

    @property
    def finish_reason(self) -> str | None: ...

    @property
    def usage(self) -> Mapping[str, Any]: ...

    @property
    def ok(self) -> bool: ...

    @property
    def text(self) -> str: ...

    @property
    def reasoning_text(self) -> str: ...


if TYPE_CHECKING:
    from pytps.grading.grader_pool import GraderPool

#: The verdict of an answer still with its grader when the run was stopped (Ctrl-C, SIGTERM).
STOPPED_REASON = "grader_stopped: the run was stopped before this answer was graded"

#: The built-in graders and the extraction rule each uses unless the record names another.
DEFAULT_EXTRACT = {
    "exact": "after_marker",
    "contains": "all",
    "regex": "all",
    "number": "last_number",
    "choice": "choice_letter",
    "json": "first_json_object",
    "json-schema": "first_json_object",
}
GRADERS = tuple(DEFAULT_EXTRACT)
_GRADER_FORM = f"one of {', '.join(GRADERS)}, or module:function"

UserGrader = Callable[[dict[str, Any], str, dict[str, Any]], Any]


@dataclass(frozen=True)
class Reference:
    """One item's reference, checked. record: the dataset record as given (a custom grader gets it)."""

    item: str
    grader: str
    expected: Any
    extract: str
    where: str
    tolerance: float = 0.0
    case_fold: bool = False
    schema: dict[str, Any] | None = None
    record: Mapping[str, Any] = field(default_factory=dict, repr=False)
    custom: UserGrader | None = field(default=None, repr=False)
    # A compiled pattern with .search(): RE2's where it takes the pattern, else Python's.
    _regex: Any = field(default=None, repr=False)
    #: Graded in a worker process under the deadline (a user's grader, a JSON Schema, a regex
    #: that only Python's engine takes), not in the run's process.
    isolated: bool = False
    #: The hash of what grades this item (grader, expected, extraction rule, options): the
    #: fingerprint's reference set is made of these, computed when the record is checked.
    digest: str = field(default="", repr=False)


def compile_re2(pattern: str, case_fold: bool = False) -> Any:
    """pattern compiled by RE2 (linear-time matching whatever the text), or None when RE2 cannot
    take it (backreferences, lookaround: Python-only syntax)."""
    import re2

    options = re2.Options()
    options.log_errors = False  # a refused pattern is an answer here, not a line on stderr
    options.case_sensitive = not case_fold
    try:
        return re2.compile(pattern, options)
    except re2.error:
        return None


def _source_sha256(fn: Any) -> str | None:
    """The SHA-256 of a user grader's source (its module's file when the function's own source
    cannot be read); None when neither can."""
    try:
        text = inspect.getsource(fn)
    except (OSError, TypeError):
        try:
            path = inspect.getsourcefile(fn)
            text = open(path, encoding="utf-8").read() if path else ""  # noqa: SIM115
        except (OSError, TypeError):
            return None
    return hashlib.sha256(text.encode("utf-8")).hexdigest() if text else None


def load_user_grader(spec: str, where: str) -> UserGrader:
    """`module:function` imported now, before any request: ConfigError naming `where` otherwise."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise ConfigError(f"{where}: grader {spec!r} is not {_GRADER_FORM}")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # an import error, or the module's own code raising
        raise ConfigError(
            f"{where}: grader {spec!r}: cannot import {module_name} ({type(exc).__name__}: {exc})"
        ) from None
    fn = getattr(module, attr, None)
    if not callable(fn):
        raise ConfigError(f"{where}: grader {spec!r}: {module_name} has no function {attr}")
    grader: UserGrader = fn
    return grader


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip().replace(",", ""))
        except ValueError:
            return None
    return None


def parse_reference(
    raw: Mapping[str, Any],
    *,
    where: str,
    item: str,
    default_grader: str | None = None,
    users: dict[str, UserGrader] | None = None,
    in_worker: bool = False,
) -> Reference | None:
    """The reference of one record, checked; None when the record has none and no grader is set.
    users: user graders already imported, by spec (one import per spec). in_worker: parsed in a
    grader worker, which matches with Python's engine (the pattern is there because RE2 refused it)."""
    users = {} if users is None else users
    grader = raw.get("grader", default_grader)
    has_expected = "expected" in raw and raw["expected"] is not None
    if grader is None:
        if not has_expected:
            return None
        grader = "exact"
    if not isinstance(grader, str):
        raise ConfigError(f"{where}: grader must be a string, {_GRADER_FORM}")
    custom = None
    if grader not in DEFAULT_EXTRACT:
        if ":" not in grader:
            raise ConfigError(f"{where}: unknown grader {grader!r}; use {_GRADER_FORM}")
        if grader not in users:
            users[grader] = load_user_grader(grader, where)
        custom = users[grader]
    expected = raw.get("expected")
    if custom is None and grader != "json-schema" and not has_expected:
        raise ConfigError(f'{where}: grader {grader} needs a reference: add "expected" to the record')
    extract = raw.get("extract", DEFAULT_EXTRACT.get(grader, "all"))
    if extract not in EXTRACTORS:
        raise ConfigError(f"{where}: unknown extract rule {extract!r}; use one of {', '.join(EXTRACTORS)}")
    tolerance = raw.get("tolerance", 0.0)
    if _number(tolerance) is None or not (_number(tolerance) or 0.0) >= 0 or isinstance(tolerance, str):
        raise ConfigError(f"{where}: tolerance must be a number >= 0, got {tolerance!r}")
    case_fold = raw.get("case_fold", False)
    if not isinstance(case_fold, bool):
        raise ConfigError(f"{where}: case_fold must be true or false, got {case_fold!r}")
    regex: Any = None
    schema = None
    isolated = custom is not None or grader == "json-schema"
    if grader == "regex":
        if not isinstance(expected, str):
            raise ConfigError(f"{where}: grader regex needs expected to be a regular expression string")
        try:
            regex = re.compile(expected, re.IGNORECASE if case_fold else 0)
        except re.error as exc:
            raise ConfigError(f"{where}: expected {expected!r} is not a valid regular expression: {exc}") from None
        linear = None if in_worker else compile_re2(expected, case_fold)
        if linear is not None:
            regex = linear
        else:
            isolated = not in_worker
    elif grader == "number":
        if _number(expected) is None:
            raise ConfigError(f"{where}: grader number needs expected to be a number, got {expected!r}")
    elif grader == "choice":
        if not (isinstance(expected, str) and len(expected.strip()) == 1 and expected.strip().isalpha()):
            raise ConfigError(f"{where}: grader choice needs expected to be one letter (A, B, ...), got {expected!r}")
        expected = expected.strip().upper()
    elif grader == "json":
        if isinstance(expected, str):
            expected = loads_json(expected, f"{where}: expected")
        if not isinstance(expected, dict):
            raise ConfigError(f"{where}: grader json needs expected to be a JSON object")
    elif grader == "json-schema":
        schema = _schema(raw.get("schema"), where)
    elif grader in ("exact", "contains") and not isinstance(expected, (str, int, float)):
        raise ConfigError(f"{where}: grader {grader} needs expected to be a string (or a number)")
    try:
        canon = json.dumps(
            [grader, expected, extract, float(tolerance), case_fold, schema], sort_keys=True, default=str
        )
    except RecursionError:
        raise ConfigError(
            f"{where}: the reference is nested too deep (about 1,000 levels at most): flatten it"
        ) from None
    return Reference(
        digest=hashlib.sha256(canon.encode("utf-8")).hexdigest(),
        item=item,
        grader=grader,
        expected=expected,
        extract=extract,
        where=where,
        tolerance=float(tolerance),
        case_fold=case_fold,
        schema=schema,
        record=raw,
        custom=custom,
        _regex=regex,
        isolated=isolated,
    )


def _schema(schema: Any, where: str) -> dict[str, Any]:
    if isinstance(schema, str):
        schema = loads_json(schema, f"{where}: schema")
    if not isinstance(schema, dict):
        raise ConfigError(f'{where}: grader json-schema needs "schema": a JSON Schema object')
    try:
        import jsonschema
    except ImportError:
        raise ConfigError(f"{where}: grader json-schema needs the jsonschema package: pip install jsonschema") from None
    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise ConfigError(f"{where}: schema does not parse as a JSON Schema: {exc.message}") from None
    out: dict[str, Any] = schema
    return out


# ---- the built-in graders: (reference, extracted answer) -> why it is wrong, or None -----------


def _fold(text: str, ref: Reference) -> str:
    return " ".join(text.split()).casefold() if ref.case_fold else text


def _exact(ref: Reference, got: str) -> str | None:
    want = str(ref.expected).strip()
    return None if _fold(got, ref) == _fold(want, ref) else f"{_short(got)} != {_short(want)}"


def _contains(ref: Reference, got: str) -> str | None:
    want = str(ref.expected)
    return None if _fold(want, ref) in _fold(got, ref) else f"the answer does not contain {_short(want)}"


def _regex(ref: Reference, got: str) -> str | None:
    assert ref._regex is not None
    return None if ref._regex.search(got) else f"the answer does not match /{ref.expected}/"


def _numeric(ref: Reference, got: str) -> str | None:
    value, want = _number(got), _number(ref.expected)
    assert want is not None
    if value is None or not math.isfinite(value):
        return f"{_short(got)} is not a number"
    return None if abs(value - want) <= ref.tolerance else f"{got} != {ref.expected}"


def _choice(ref: Reference, got: str) -> str | None:
    return None if got.upper() == ref.expected else f"chose {got}, not {ref.expected}"


def _json_equal(ref: Reference, got: str) -> str | None:
    value = json.loads(got)
    want: dict[str, Any] = ref.expected
    wrong = [k for k in want if k not in value or not _same(value[k], want[k], ref)]
    return None if not wrong else "wrong or missing: " + ", ".join(sorted(wrong))


def _same(a: Any, b: Any, ref: Reference) -> bool:
    if isinstance(b, str) and isinstance(a, str):
        return _fold(a.strip(), ref) == _fold(b.strip(), ref)
    if isinstance(b, (int, float)) and isinstance(a, (int, float)) and not isinstance(a, bool):
        return abs(a - b) <= ref.tolerance
    return bool(a == b)


def _json_schema(ref: Reference, got: str) -> str | None:
    import jsonschema

    assert ref.schema is not None
    errors = sorted(jsonschema.validators.validator_for(ref.schema)(ref.schema).iter_errors(json.loads(got)), key=str)
    return None if not errors else f"schema: {errors[0].message}"


_BUILTIN: dict[str, Callable[[Reference, str], str | None]] = {
    "exact": _exact,
    "contains": _contains,
    "regex": _regex,
    "number": _numeric,
    "choice": _choice,
    "json": _json_equal,
    "json-schema": _json_schema,
}
_NOTHING = {
    "last_number": "no number in the answer",
    "choice_letter": 'no choice letter after "Answer:"',
    "first_json_object": "no JSON object in the answer",
    "last_line": "the answer is empty",
}


def _short(text: str, n: int = 60) -> str:
    return repr(text if len(text) <= n else text[: n - 1] + "…")


def grade_text(ref: Reference, text: str) -> Grade:
    """A built-in grader's verdict on an answer text (reasoning already left out)."""
    got = EXTRACTORS[ref.extract](text)
    if got is None:
        why: str | None = _NOTHING.get(ref.extract, "nothing to grade")
    else:
        why = _BUILTIN[ref.grader](ref, got)
    ok = why is None
    return Grade(ref.item, ref.grader, ok, 1.0 if ok else 0.0, why, got)


def _user_verdict(ref: Reference, value: Any, extracted: str | None) -> Grade:
    """A user grader's return value: a bool, a number in [0, 1] (correct when >= 0.5), or a
    mapping / object with `correct` and optional `score` and `reason`."""
    score = reason = None
    if isinstance(value, Mapping):
        correct, score, reason = value.get("correct"), value.get("score"), value.get("reason")
    elif isinstance(value, bool):
        correct = value
    elif isinstance(value, (int, float)):
        score = float(value)
        if not 0.0 <= score <= 1.0:
            raise ValueError(f"the grader returned the score {score!r}, outside [0, 1]")
        correct = score >= 0.5
    else:
        correct = getattr(value, "correct", None)
        score, reason = getattr(value, "score", None), getattr(value, "reason", None)
    if not isinstance(correct, bool):
        raise TypeError(f"the grader returned {value!r}; return a bool, a score, or {{'correct': bool, ...}}")
    if score is not None:
        score = float(score)
        if not 0.0 <= score <= 1.0:  # NaN fails this too
            raise ValueError(f"the grader's score {score!r} is outside [0, 1]")
    if correct:
        reason = None
    elif reason is None:
        reason = "the grader said wrong"
    return Grade(
        ref.item, ref.grader, correct, score if score is not None else float(correct), reason and str(reason), extracted
    )


@dataclass
class Grading:
    """How a run grades answers: the references checked before the run (a dataset's, by item
    id), and the default grader. Items met during the run (built-in tasks) are parsed on first use."""

    enabled: bool = False
    references: dict[str, Reference] = field(default_factory=dict)
    default_grader: str | None = None
    _users: dict[str, UserGrader] = field(default_factory=dict, repr=False)
    #: The most one answer's grading may take in a worker (--grader-timeout-s).
    timeout_s: float = DEFAULT_GRADER_TIMEOUT_S
    _pool: GraderPool | None = field(default=None, repr=False, compare=False)

    @property
    def active(self) -> bool:
        return self.enabled

    def describe(self) -> dict[str, Any] | None:
        """What results.json's metadata.grading records."""
        if not self.enabled:
            return None
        return {
            "default_grader": self.default_grader,
            "items_checked": len(self.references),
            "timeout_s": self.timeout_s,
            **self.identity(),
        }

    def close(self) -> None:
        """Ends the grader workers (a run calls it when its gradings are over)."""
        if self._pool is not None:
            self._pool.close()

    def _workers(self) -> GraderPool:
        if self._pool is None:
            from pytps.grading.grader_pool import GraderPool

            self._pool = GraderPool(self.timeout_s)
        return self._pool

    def pending(self, rec: Answered, item: str | None, raw: Mapping[str, Any] | None = None) -> Grade | None:
        """What the journal says of an answer that will be graded, until its verdict comes (None:
        it will not be graded, or its grade is known at once)."""
        if not self.enabled or not rec.ok:
            return None
        try:
            ref = self.reference(item, raw)
        except ConfigError:
            return None
        if ref is None:
            return None
        return Grade(ref.item, ref.grader, None, None, "grader_pending: the run ended before this answer was graded")

    def identity(self) -> dict[str, Any]:
        """What makes two runs' grading the same (the workload fingerprint hashes it): the graders
        and extraction rules used, a hash of the reference set (each item's grader, expected answer,
        extraction rule and options), and each user grader's source hash (its code, so an edited
        grader is another workload)."""
        refs = sorted(self.references.values(), key=lambda r: r.item)
        # Each reference's digest, made when its record was checked (a flat list: a reference nested
        # near the parser's limit is not encoded again here, deep in the run's stack).
        text = json.dumps([[r.item, r.digest] for r in refs], separators=(",", ":"))
        specs = sorted({*self._users, *(r.grader for r in refs if r.custom is not None)})
        users = {spec: _source_sha256(self._users.get(spec) or next(r.custom for r in refs if r.grader == spec))
                 for spec in specs}  # fmt: skip
        return {
            "graders": sorted({r.grader for r in refs} | ({self.default_grader} if self.default_grader else set())),
            "extracts": sorted({r.extract for r in refs}),
            "references_sha256": hashlib.sha256(text.encode("utf-8")).hexdigest() if refs else None,
            "user_graders_sha256": users,
        }

    def reference(self, item: str | None, raw: Mapping[str, Any] | None) -> Reference | None:
        """The item's checked reference; one met only now (a built-in task's) is parsed and not
        kept, so memory stays flat however many items a run asks."""
        if item is None:
            return None
        ref = self.references.get(item)
        if ref is None and (raw or self.default_grader):
            ref = parse_reference(
                raw or {}, where=item, item=item, default_grader=self.default_grader, users=self._users
            )
        return ref

    async def grade(self, rec: Answered, item: str | None, raw: Mapping[str, Any] | None = None) -> Grade | None:
        """The grade of a finished request whose prompt was `item` (raw: its reference fields);
        None when it has no reference or failed (a failed request is not graded: its error says
        what happened)."""
        if not self.enabled or not rec.ok:
            return None
        try:
            ref = self.reference(item, raw)
        except ConfigError as exc:
            assert item is not None
            return Grade(
                item,
                str((raw or {}).get("grader", self.default_grader)),
                None,
                None,
                f"grader_error: {exc}",
                None,
                str(exc),
            )
        if ref is None:
            return None
        try:
            if not ref.isolated:
                return grade_text(ref, rec.text)
            if ref.custom is None:  # a JSON Schema, a regex only Python's engine takes
                job: tuple[Any, ...] = ("builtin", dict(ref.record), ref.item, self.default_grader, rec.text)
                graded: Grade = await self._workers().run(job)
                return graded
            request = {
                "index": rec.index,
                "item": ref.item,
                "finish_reason": rec.finish_reason,
                "usage": dict(rec.usage),
                "reasoning_text": rec.reasoning_text,
                "model": rec.model,
            }
            value = await self._workers().run(("user", ref.grader, request, rec.text, dict(ref.record)))
            return _user_verdict(ref, value, EXTRACTORS[ref.extract](rec.text))
        except Exception as exc:  # the run goes on: this request is grader_error (or grader_timeout)
            from pytps.grading.grader_pool import GraderTimeout

            if isinstance(exc, GraderTimeout):
                why = (
                    f"grader_timeout: no verdict within {self.timeout_s:g} s (--grader-timeout-s); "
                    "its process was stopped"
                )
                return Grade(ref.item, ref.grader, None, None, why, None, "grader_timeout")
            text = str(exc) if isinstance(exc, RuntimeError) else f"{type(exc).__name__}: {exc}"
            return Grade(ref.item, ref.grader, None, None, f"grader_error: {text}", None, text)


def build_grading(
    raws: Iterable[tuple[str, str, Mapping[str, Any]]],
    default_grader: str | None,
    *,
    builtin: bool = False,
    timeout_s: float = DEFAULT_GRADER_TIMEOUT_S,
) -> Grading:
    """A run's Grading from its workload's raw references: (item id, where, reference fields).
    Every record is checked now; the first bad one is a ConfigError naming its file and line.
    builtin: the workload's items carry references of their own (built-in tasks)."""
    if default_grader is not None and default_grader not in DEFAULT_EXTRACT and ":" not in default_grader:
        raise ConfigError(f"grader (--grader) {default_grader!r}: use {_GRADER_FORM}")
    users: dict[str, UserGrader] = {}
    if default_grader is not None and ":" in default_grader:
        users[default_grader] = load_user_grader(default_grader, "grader (--grader)")
    refs: dict[str, Reference] = {}
    for item, where, raw in raws:
        ref = parse_reference(raw, where=where, item=item, default_grader=default_grader, users=users)
        if ref is not None:
            refs[item] = ref
    return Grading(builtin or bool(refs), refs, default_grader, users, timeout_s)
