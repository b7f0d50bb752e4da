"""What a gatekeeper rule kind is, the one registry of them, one rule of a kind as the files tune it
(RuleSpec), what a rule reads (RuleContext: one session) and what it finds (Finding, RuleResult).

A kind is one class: its id, its defaults (name, description, severity, verdictImpact) and a
nested `Params` model saying which parameters rules/metadata.yaml must give it and of what type.
It also declares how the history replay judges it (`replay`, `column_params`, `judge_columns`)
and whether the verdict policy reads a finding of it as an entity mismatch (`entity_rule`).
`@rule_kind` registers it; the rule files loader (rules_schema), the replay, the verdict policy's
callers and the Rules page read the registry, so adding a kind touches its class and nothing else
in code.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, ClassVar, Literal, Protocol, TypeAlias, TypeVar, get_args

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, StrictFloat, StrictInt

from pipeline.core.contracts import EvidenceDigest, ExecutorBinding, ExecutorOutput, GatekeeperResult, VerdictImpact
from pipeline.core.feature_shapes import Features, TargetFeatures, binding_target
from pipeline.core.messages import Message, render

Severity = Literal["error", "warning"]
# How the columnar replay (pipeline/replay/columns.py) judges a kind's rules over history:
# "stored": no parameter the arrays compare moves its findings, so the gate rows keep them as
#   found (one bit per kind) under its other parameters, which are fingerprinted; `judge_columns`
#   may add the findings that move with `column_params` (`as_found` leaves those out of the stored);
# "columns": `judge_columns` finds everything from the stored threshold-free numbers;
# "per_session": the arrays cannot judge it, so while a rule of it is in the set every session
#   takes the exact per-session replay.
ReplayRole = Literal["stored", "columns", "per_session"]
# The gate rows keep a stored kind's findings as one bit of a small integer read into int8 arrays.
MAX_STORED_KINDS = 7
ActsOn = Literal["bindings", "digest_scores", "claims", "digests"]
# Parameter types. The loader checks every Number in [0, 1] and every Count >= 0.
Number = StrictFloat  # strict: "0.5" is refused, 1 is accepted as 1.0
Count = StrictInt  # a length or a number of things
# A parameter's value as the YAML writes it: a Number, a Count, a switch or a word list.
ParamValue: TypeAlias = float | int | bool | list[str]


class RuleParams(BaseModel):
    """A kind's parameters. No defaults on purpose: the YAML is their single source."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    # (lower, upper): parameter pairs out of order when the lower exceeds the upper, such as a warn
    # threshold above its pass threshold.
    ordered: ClassVar[tuple[tuple[str, str], ...]] = ()

    def problems(self) -> Iterator[tuple[str, str]]:
        """(parameter, problem) for what the field types cannot say: the `ordered` pairs out of
        order; a kind that overrides it for more checks yields from this one if it orders any."""
        for lower, upper in self.ordered:
            low, high = getattr(self, lower), getattr(self, upper)
            if low > high:
                yield lower, f"{low} > {upper} {high}"


@dataclass(frozen=True)
class RuleSpec:
    """One rule as the files define it: index entry plus metadata."""

    id: str
    name: str
    description: str
    enabled: bool
    severity: Severity
    verdict_impact: VerdictImpact
    params: RuleParams
    note: str = ""  # metadata description: why the rule is tuned this way

    @cached_property
    def downgraded(self) -> bool:
        """A warning-only rule never fails the gatekeeper: its failures count as warnings."""
        return self.verdict_impact == "warn_only" or self.severity == "warning"

    @cached_property
    def params_key(self) -> str:
        """The parameters as one comparable string: what a rule's remembered findings are keyed by."""
        return self.params.model_dump_json()


Bools = npt.NDArray[np.bool_]
Floats = npt.NDArray[np.float64]


class ColumnFacts(Protocol):
    """The threshold-free numbers the columnar replay keeps per binding (`b_*`) and per session,
    as arrays (pipeline/replay/columns.py, HistoryArrays): what `RuleKind.judge_columns` compares
    with a candidate's thresholds."""

    b_score: Floats  # the output's similarity (NaN: none)
    b_full: Bools  # every segment found in the output by structure
    b_split: npt.NDArray[np.int32]  # the lightest piece of a quote split between records (0: none split)
    b_quote: Floats  # the digest's source quote's similarity (NaN: none)
    b_summary: Floats  # the digest summary's similarity (NaN: none)
    b_invented: npt.NDArray[np.int16]  # invented words that count under the session's length filters
    b_entity: Floats  # the highest minLocatedScore at which the entity findings change (-1: never)
    b_entity_low: Floats  # the lowest (NaN: not recorded)
    b_entity_points: npt.NDArray[np.int16]  # how many change points (-1: not recorded)
    b_entity_fail: npt.NDArray[np.int8]  # bit 1: a fail-level finding from the highest point, bit 2: from the lowest
    min_coverage: Floats  # per session, the lowest keyword coverage of a claim (NaN: none)
    min_quote: Floats  # per session, the lowest digest quote score (NaN: no scored digest)
    best_cache: dict[tuple[Any, ...], Floats]  # results that move with no threshold, kept between replays


@dataclass
class ColumnFindings:
    """A kind's findings over arrays: per binding (`per_binding`) or per session, whether there
    is any finding and a fail-level one; `unknown` marks those the stored numbers cannot decide
    (their sessions go to the per-session replay)."""

    per_binding: bool
    found: Bools
    failing: Bools
    unknown: Bools | None = None


class RuleKind:
    """Base of every rule kind; subclasses set the class attributes (`replay` among them: a kind
    that does not say how the replay judges it cannot register) and implement `validate`.

    A kind judges one session in `validate` and, if it can, a whole history in arrays in
    `judge_columns`; the two sit side by side on the kind and the replay's equivalence test
    (tests/test_history_columns.py) holds them to the same findings."""

    id: ClassVar[str]
    name: ClassVar[str]
    description: ClassVar[str]  # English; index.yaml's description replaces it
    severity: ClassVar[Severity]
    verdict_impact: ClassVar[VerdictImpact]
    Params: ClassVar[type[RuleParams]] = RuleParams  # a kind without parameters keeps the empty model
    # Whether the rule ties a claim to the tool's own output (the cited call exists, the quote is
    # in it): with one of these off or warn-only, a forged quote passes, and verdicts are "ungated".
    gates_evidence: ClassVar[bool] = False
    replay: ClassVar[ReplayRole]
    # The parameters `judge_columns` compares at replay; every other parameter is fingerprinted
    # with the stored findings and numbers, which hold only under it.
    column_params: ClassVar[frozenset[str]] = frozenset()
    # A finding of it in a claim says the claim brings in a value, service or id its evidence
    # lacks: the verdict policy makes the claim's check external_unknown, not unsupported.
    entity_rule: ClassVar[bool] = False
    # What each threshold or count is compared with, as the Rules page says beside its input:
    # "bindings" (a claim's quotes), "digest_scores" (a binding's digest quote or summary score),
    # "claims" or "digests". A parameter left out is a list or a switch that names what it acts on.
    acts_on: ClassVar[Mapping[str, ActsOn]] = {}

    def validate(self, context: RuleContext, metadata: RuleSpec) -> RuleResult:
        raise NotImplementedError

    def neutered_by(self, spec: RuleSpec) -> list[str]:
        """The settings in `spec`'s parameters under which a check of this kind cannot fail whatever the
        output holds (e.g. a threshold nothing scores below), as "name value"; empty: every check
        can still fail. Each kind declares its own (`rule_kind` refuses a kind without one); a
        gating rule with any counts as off (RuleSet.ungated_by)."""
        raise NotImplementedError

    def judge_columns(self, spec: RuleSpec, facts: ColumnFacts, at: npt.NDArray[np.intp] | slice) -> ColumnFindings | None:
        """The findings under `spec`'s parameters of the bindings at `at` (or of every session, for a kind
        judged per session) from the stored numbers; None for a kind whose findings do not move
        with a threshold (the replay stores them as they were found)."""
        return None

    def as_found(self, spec: RuleSpec) -> RuleSpec:
        """`spec` with its column_params set so that `validate` finds only what they do not move:
        the findings a "stored" kind's gate rows keep, `judge_columns` adding the rest."""
        return spec


K = TypeVar("K", bound=type[RuleKind])
RULES: dict[str, RuleKind] = {}


def rule_kind(cls: K) -> K:
    """Register a kind under its id. A wrong declaration is a programming error, raised at import."""
    for attr in ("id", "name", "description", "severity", "verdict_impact"):
        if not isinstance(getattr(cls, attr, None), str):
            raise TypeError(f"rule kind {cls.__name__} must declare {attr} as a string")
    if cls.severity not in get_args(Severity) or cls.verdict_impact not in get_args(VerdictImpact):
        raise TypeError(f"rule kind {cls.__name__}: unknown severity or verdict_impact")
    if cls.severity == "warning" and cls.verdict_impact != "warn_only":
        raise TypeError(f"rule kind {cls.__name__}: a warning severity needs verdict_impact warn_only")
    if "neutered_by" not in vars(cls):
        raise TypeError(f"rule kind {cls.__name__} must declare neutered_by: when its parameters leave it unable to fail")
    if not issubclass(cls.Params, RuleParams):
        raise TypeError(f"rule kind {cls.__name__}: Params must derive from RuleParams")
    _check_replay(cls)
    if cls.id in RULES:
        raise TypeError(f"rule kind id {cls.id!r} is registered twice ({type(RULES[cls.id]).__name__}, {cls.__name__})")
    RULES[cls.id] = cls()
    return cls


def _check_replay(cls: type[RuleKind]) -> None:
    """A kind says how the replay judges it, and the declaration holds together."""
    role = getattr(cls, "replay", None)
    if role not in get_args(ReplayRole):
        raise TypeError(f"rule kind {cls.__name__} must declare replay as one of {', '.join(get_args(ReplayRole))}: "
                        "how the history replay judges its rules")
    unknown = cls.column_params - cls.Params.model_fields.keys()
    if unknown:
        raise TypeError(f"rule kind {cls.__name__}: column_params names no parameter: {', '.join(sorted(unknown))}")
    compares = role == "columns" or (role == "stored" and cls.column_params)
    if compares and cls.judge_columns is RuleKind.judge_columns:
        raise TypeError(f"rule kind {cls.__name__}: replay {role!r} with column_params needs judge_columns")
    if role == "stored" and cls.column_params and cls.as_found is RuleKind.as_found:
        raise TypeError(f"rule kind {cls.__name__}: a stored kind with column_params needs as_found")
    if role == "stored" and sum(kind.replay == "stored" for kind in RULES.values()) >= MAX_STORED_KINDS:
        raise TypeError(f"rule kind {cls.__name__}: the gate rows keep at most {MAX_STORED_KINDS} stored kinds")


P = TypeVar("P", bound=RuleParams)


def params_of(spec: RuleSpec, model: type[P]) -> P:
    """A rule's parameters as its kind's model (the loader built them from that model)."""
    params = spec.params
    if not isinstance(params, model):
        raise TypeError(f"rule {spec.id} carries {type(params).__name__}, not {model.__qualname__}")
    return params


Level = Literal["fail", "warn"]
InvocationInfo = Callable[[int], "tuple[str, str] | None"]  # id -> (session_id, persisted tool name)
# Parameter sets remembered per rule and session: a slider being dragged should not grow memory.
REMEMBERED_PARAMS = 4


@dataclass
class RuleContext:
    """One session as the rules see it. A replay keeps it per session, so the facts derived from
    the session (never from a rule parameter) and each rule's findings per parameter set are
    computed once and reused while the user tunes other rules or moves a threshold."""

    session_id: str
    output: ExecutorOutput | None  # None: the output did not parse
    invocation: InvocationInfo
    digests: list[EvidenceDigest] | None
    features: Features
    _bindings: list[tuple[str, ExecutorBinding, TargetFeatures | None]] | None = field(default=None, repr=False)
    _facts: dict[Any, Any] = field(default_factory=dict, repr=False)
    _findings: dict[str, dict[str, tuple[str, tuple[Finding, ...]]]] = field(default_factory=dict, repr=False)
    last_result: tuple[list[RuleOutcome], GatekeeperResult] | None = field(default=None, repr=False)  # see evaluate

    @property
    def bindings(self) -> list[tuple[str, ExecutorBinding, TargetFeatures | None]]:
        """(target, binding, cached features) of every claim binding, walked once for all rules."""
        if self._bindings is None:
            features = self.features
            self._bindings = [
                (target, binding, features.get(target))
                for ci, bi, binding in (self.output.bindings() if self.output is not None else ())
                for target in (binding_target(ci, bi),)
            ]
        return self._bindings

    def fact(self, key: Any, compute: Callable[[RuleContext], Any]) -> Any:
        """A parameter-free fact about this session, computed on first use."""
        try:
            return self._facts[key]
        except KeyError:
            value = self._facts[key] = compute(self)
            return value

    def findings(self, spec: RuleSpec) -> tuple[str, tuple[Finding, ...]]:
        """(status, findings) of one rule under its parameters, remembered for the last few sets."""
        by_params = self._findings.get(spec.id)
        if by_params is None:
            by_params = self._findings[spec.id] = {}
        key = spec.params_key
        found = by_params.get(key)
        if found is None:
            result = RULES[spec.id].validate(self, spec)
            found = (result.status, tuple(result.findings)) if result.findings else _NO_FINDINGS
            if len(by_params) >= REMEMBERED_PARAMS:
                del by_params[next(iter(by_params))]
            by_params[key] = found
        return found


@dataclass
class Finding:
    target: str
    # A catalogued Message (pipeline/core/messages.py), rendered in the reader's language; plain English
    # text is accepted from a rule kind that has no codes yet.
    message: str | Message
    level: Level = "fail"

    @property
    def text(self) -> str:
        return self.message if isinstance(self.message, str) else render(self.message, "en")

    @property
    def msg(self) -> Message | None:
        return None if isinstance(self.message, str) else self.message


@dataclass
class RuleResult:
    rule_id: str
    findings: list[Finding] = field(default_factory=list)

    @property
    def status(self) -> str:
        if any(f.level == "fail" for f in self.findings):
            return "fail"
        return "warn" if self.findings else "pass"


_NO_FINDINGS: tuple[str, tuple[Finding, ...]] = ("pass", ())
# What a rule found in one session: (rule id, status, findings).
RuleOutcome = tuple[str, str, tuple[Finding, ...]]
