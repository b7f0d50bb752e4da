"""Every stage's data contract, named exactly as in docs/spec.md (the design records' names).

docs/spec.md defines the Executor V2 / Gatekeeper / Verifier V2 / Composer shapes and the
Collector -> Evidence Digest -> Diagnosis split. JSON field names here are binding: a reader
should find its rule in docs/spec.md by grepping a field name.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any, ClassVar, Literal, Required, TypeAlias, TypedDict, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    GetCoreSchemaHandler,
    JsonValue,
    PrivateAttr,
    StrictInt,
    StrictStr,
    ValidatorFunctionWrapHandler,
    model_serializer,
    model_validator,
)
from pydantic_core import CoreSchema, core_schema

from pipeline.core.messages import Message
from pipeline.text.redact import redact, redact_value

ANSWER_VERSION: Literal["executor_evidence_v2"] = "executor_evidence_v2"
TRACEABILITY_VERSION = "v2"
# Written beside the claims when a foreign agent's prose answer was read into this shape
# (pipeline/bundles/prose.py): the shape is then this reader's, not the agent's, so a statement
# nothing backs is an unbacked claim (no evidence bound), not a schema fault of the answer.
READ_FROM_PROSE = ("read_from", "prose")

Verdict = Literal["PASS", "LOW_CONFID", "REJECT"]
VERDICT_ORDER: dict[str, int] = {"PASS": 0, "LOW_CONFID": 1, "REJECT": 2}

ClaimVerification = Literal[
    "direct_observation",
    "reasonable_inference",
    "overstated",
    "unsupported",
    "external_unknown",
    "contradicted",
]
HypothesisVerification = Literal["reasonable_hypothesis", "unsupported_hypothesis", "overstated_as_fact"]
DigestVerification = Literal["faithful", "unfaithful"]
FactVerification = Literal["direct_evidence", "indirect_support", "no_evidence", "contradicted"]
VerdictImpact = Literal["warn_only", "low_confid_on_fail", "reject_on_fail"]
ToolStatus = Literal["ok", "no_data", "error"]
# A tool call's arguments as the model (or a plan) wrote them: a JSON object, read into the tool's
# own query model only when the tool runs (pipeline.tools.registry), so a refused or unknown call
# is kept as it was asked.
ToolArguments: TypeAlias = dict[str, JsonValue]
Shape = Literal["split", "single"]


QuestionForm = Literal["yes_no", "why", "what", "how_long", "since_when"]


class _Model(BaseModel):
    # LLM output carries stray keys often; the gatekeeper judges the raw dict, the models stay lenient.
    # model_tool_name is the seed's field; pydantic before 2.10 warned on a "model_" prefix.
    model_config = ConfigDict(extra="ignore", protected_namespaces=())


# --- Planner / Collector (docs/spec.md#split-chain) -------------------------------------------------------


class PlannedToolCall(_Model):
    tool_name: str
    arguments: ToolArguments = Field(default_factory=dict)
    purpose: str = ""


class PlannerPlan(_Model):
    skill: str
    language: Literal["zh", "en"] = "zh"
    services: list[str] = Field(default_factory=list)
    keywords: list[str] = Field(default_factory=list)
    steps: list[str] = Field(default_factory=list)
    tool_calls: list[PlannedToolCall] = Field(default_factory=list)


class CollectionSummary(_Model):
    collection_summary: str
    tool_invocation_ids: list[int] = Field(default_factory=list)


class ToolInvocation(_Model):
    """One row of `tool_invocation`; `output` is the full raw result text, never truncated."""

    id: int
    session_id: str
    round: int = 1
    tool_name: str
    model_tool_name: str
    arguments: ToolArguments = Field(default_factory=dict)
    status: ToolStatus = "ok"
    output: str = ""
    error: str | None = None
    latency_ms: float = 0.0


class ToolTraceSummaryItem(_Model):
    invocation_id: int
    tool_name: str
    status: ToolStatus
    output_summary: str


# --- Evidence Digest (docs/spec.md#split-chain) -----------------------------------------------------------


class EvidenceDigest(_Model):
    digest_id: str
    source_invocation_ids: list[int]
    # The records quoted, "<invocation id>#<record number>" (docs/spec.md#record-citations); optional.
    source_record_ids: list[str] | None = None
    tool: str
    domain: str = ""
    summary: str
    source_quote: str


# --- Executor V2 (docs/spec.md#executor-v2) ----------------------------------------------------------


class EvidenceBinding(_Model):
    source_type: str = "tool_trace"
    source_id: str | None = None
    tool_name: str
    source_invocation_ids: list[int]
    # The records the excerpt quotes, "<invocation id>#<record number>" (docs/spec.md#record-citations).
    source_record_ids: list[str] | None = None
    evidence_excerpt: str
    digest_id: str | None = None


def record_ids(raw: Any) -> tuple[dict[int, list[int]], list[str]]:
    """A source_record_ids value as {invocation id: record numbers}, and the entries that do not
    read as "<invocation id>#<record number>" (a bare "12#3"; "inv-12#3" as source_id writes it)."""
    cited: dict[int, list[int]] = {}
    unread: list[str] = []
    for entry in raw if isinstance(raw, list) else []:
        text = entry if isinstance(entry, str) else ""
        inv, sep, number = text.removeprefix("inv-").partition("#")
        if sep and inv.isdigit() and number.isdigit():
            numbers = cited.setdefault(int(inv), [])
            if int(number) not in numbers:
                numbers.append(int(number))
        else:
            unread.append(str(entry))
    return {inv: sorted(numbers) for inv, numbers in cited.items()}, unread


class Claim(_Model):
    claim_id: str
    claim_type: str
    claim_text: str
    support_level: Literal["direct", "indirect"]
    evidence_bindings: list[EvidenceBinding]


class Hypothesis(_Model):
    hypothesis_text: str
    basis: str = ""
    needed_evidence: list[str] = Field(default_factory=list)


class RecommendedAction(_Model):
    action_text: str
    reason: str = ""
    evidence_bindings: list[EvidenceBinding] = Field(default_factory=list)


class ExecutorOutputV2(_Model):
    answer_version: Literal["executor_evidence_v2"] = ANSWER_VERSION
    claims: list[Claim]
    hypotheses: list[Hypothesis] = Field(default_factory=list)
    recommended_actions: list[RecommendedAction] = Field(default_factory=list)
    missing_info: list[str] = Field(default_factory=list)


# --- The executor output as written (docs/spec.md#executor-v2, docs/spec.md#parse-status) ------------
#
# ExecutorOutputV2 above is the shape the executor is asked for (the JSON schema it is sent). What
# it writes is read into ExecutorOutput below, once, at parse: leniently, because a schema problem
# is the gatekeeper's finding (schema.executor_v2), not a parse failure. A field of the wrong type
# reads as absent, an element that is not an object reads as an element with every field absent,
# so list positions stay those of the JSON and a target such as claims[2].evidence_bindings[1]
# names the same element in the typed model and in what was written.


class _Lenient:
    """A field or list item that reads as its default when the written value does not validate:
    None, `default_factory()`, left out (`omit`), or for a list element of a _Written model
    (`element`) an element of its NotWritten subclass, with every field absent."""

    def __init__(self, default_factory: Callable[[], Any] | None = None, *, omit: bool = False,
                 element: bool = False) -> None:
        self.default_factory, self.omit, self.element = default_factory, omit, element

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        if self.omit:  # a list item: left out, the rest of the list kept
            return core_schema.with_default_schema(handler(source), on_error="omit")
        if self.element:
            return core_schema.with_default_schema(handler(source), default_factory=_not_written(source),
                                                   on_error="default")
        if self.default_factory is not None:
            return core_schema.with_default_schema(handler(source), default_factory=self.default_factory,
                                                   on_error="default")
        return core_schema.with_default_schema(handler(source), default=None, on_error="default")


# None when absent or not a string (an empty string is kept: whether it is text is a rule's judgement).
Text = Annotated[StrictStr | None, _Lenient()]
# The invocation ids among a written list (bools and strings left out: they are not ids).
Ids = Annotated[list[Annotated[StrictInt, _Lenient(omit=True)]], _Lenient(list)]
Strings = Annotated[list[Annotated[StrictStr, _Lenient(omit=True)]], _Lenient(list)]


class _Written(BaseModel):
    # strict: nothing is coerced ("12" is not an id, 5 is not a claim_text); lenient: see _Lenient.
    model_config = ConfigDict(extra="ignore", strict=True, frozen=True)
    # False for an element written as something else (a bare string, a number): it is read as an
    # element with every field absent, in its place, and it is no claim (or binding) at all. A class
    # attribute (False on each model's NotWritten subclass), not a private one: pydantic sets up
    # private attributes on every instance it validates, which made reading an output several times
    # slower than validating it.
    written_as_object: ClassVar[bool] = True


def _not_written(model: Any) -> Any:
    """The subclass of a _Written model for its elements written as something else: made once, and
    kept on the model as `NotWritten` (ExecutorClaim.NotWritten), where pickle finds it."""
    if "NotWritten" not in vars(model):
        model.NotWritten = type(model)("NotWritten", (model,), {
            "written_as_object": False, "__module__": model.__module__, "__qualname__": f"{model.__qualname__}.NotWritten"})
    return model.NotWritten


_W = TypeVar("_W", bound=_Written)
# A written list of models: not a list reads as empty, an element that is not an object as its
# model's NotWritten, in its place.
Elements: TypeAlias = Annotated[list[Annotated[_W, _Lenient(element=True)]], _Lenient(list)]


class ExecutorBinding(_Written):
    source_type: Text = None
    source_id: Text = None
    tool_name: Text = None
    source_invocation_ids: Ids = Field(default_factory=list)
    # As written (record_ids reads it and names the entries it cannot read).
    source_record_ids: Annotated[list[JsonValue] | None, _Lenient()] = None
    evidence_excerpt: Text = None
    digest_id: Text = None


class ExecutorClaim(_Written):
    claim_id: Text = None
    claim_type: Text = None
    claim_text: Text = None
    support_level: Text = None
    # None when absent or not a list: an empty list is the executor's own (and a finding of its own).
    evidence_bindings: Annotated[Elements[ExecutorBinding] | None, _Lenient()] = None

    @property
    def key(self) -> str:
        """The id claim checks and reviews name this claim by ("" when it has none)."""
        return self.claim_id or ""


class ExecutorHypothesis(_Written):
    hypothesis_text: Text = None
    basis: Text = None
    needed_evidence: Strings = Field(default_factory=list)


class ExecutorAction(_Written):
    action_text: Text = None
    reason: Text = None
    evidence_bindings: Elements[ExecutorBinding] = Field(default_factory=list)


class ExecutorOutput(_Written):
    """A parsed executor output (a JSON object), typed. `raw` is the object as written: the schema
    rule judges it, and it is what is stored (serialising this model gives `raw` back unchanged)."""

    answer_version: Text = None
    claims: Elements[ExecutorClaim] = Field(default_factory=list)
    hypotheses: Elements[ExecutorHypothesis] = Field(default_factory=list)
    recommended_actions: Elements[ExecutorAction] = Field(default_factory=list)
    missing_info: Strings = Field(default_factory=list)
    # A default (copied per instance), not default_factory=dict: pydantic inspects a factory's signature
    # on every instance it validates, which cost more than reading the output.
    _raw: dict[str, JsonValue] = PrivateAttr(default={})

    @model_validator(mode="wrap")
    @classmethod
    def _keep_raw(cls, data: Any, handler: ValidatorFunctionWrapHandler) -> ExecutorOutput:
        if isinstance(data, ExecutorOutput):
            return data
        out: ExecutorOutput = handler(data)
        out._raw = data
        return out

    @model_serializer(mode="plain")
    def _as_written(self) -> dict[str, JsonValue]:
        return self._raw

    @property
    def raw(self) -> dict[str, JsonValue]:
        return self._raw

    @classmethod
    def read(cls, data: dict[str, JsonValue] | None) -> ExecutorOutput | None:
        """The typed output of a parsed (or stored) JSON object; None for None."""
        return None if data is None else cls.model_validate(data)

    def with_raw(self, raw: dict[str, JsonValue]) -> ExecutorOutput:
        """The same typed reading over another rendering of the object (the normalized one)."""
        out = self.model_copy()
        out._raw = raw
        return out

    def claim_objects(self) -> list[ExecutorClaim]:
        """The claims written as objects: the ones there are to check and weigh (positions not kept)."""
        return [c for c in self.claims if c.written_as_object]

    def bindings(self) -> list[tuple[int, int, ExecutorBinding]]:
        """(claim index, binding index, binding) of every claim binding written as an object, in order."""
        return [(ci, bi, b) for ci, claim in enumerate(self.claims) for bi, b in enumerate(claim.evidence_bindings or ())
                if b.written_as_object]


class ParseStatus(_Model):
    """docs/spec.md#parse-status: JSON parse result only; schema validity is the gatekeeper's."""

    status: Literal["valid", "missing", "malformed"]
    detail: str = ""


# --- Gatekeeper (docs/spec.md#gatekeeper-result) ------------------------------------------------------------


class GatekeeperError(_Model):
    rule_id: str
    target: str
    message: str
    # The message as code + parameters, rendered in the reader's language (`message` is its English
    # rendering, kept so sessions stored before codes still validate and read).
    msg: Message | None = None


class GatekeeperResult(_Model):
    status: Literal["pass", "warn", "fail"] = "pass"
    failed_rules: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    errors: list[GatekeeperError] = Field(default_factory=list)
    # Claims none of whose bindings is evidence: every binding only reaches the warn band or
    # quotes content the cited output lacks. Never shown as confirmed, never PASS.
    unbacked_claims: list[str] = Field(default_factory=list)


# --- Verifier V2 (docs/spec.md#verifier-payload) ----------------------------------------------


class RetryContext(_Model):
    round: int
    unsupported_claims: list[str] = Field(default_factory=list)
    missing_info: list[str] = Field(default_factory=list)


class EvidenceRef(_Model):
    trace_ref: str = ""
    tool_name: str
    source_invocation_ids: list[int] = Field(default_factory=list)
    note: str = ""


class ClaimCheck(_Model):
    claim_id: str
    verification: ClaimVerification
    detail: str = ""
    # Set when the verdict policy overrode the verifier: `detail` as code + parameters. A verifier's
    # own detail is its free text, in the question's language.
    msg: Message | None = None
    evidence_refs: list[EvidenceRef] = Field(default_factory=list)


class HypothesisCheck(_Model):
    hypothesis_index: int
    verification: HypothesisVerification
    detail: str = ""


class DigestCheck(_Model):
    digest_id: str
    verification: DigestVerification
    detail: str = ""


class VerifierOutput(_Model):
    verdict: Verdict
    groundedness_score: float = Field(ge=0.0, le=1.0)
    claim_checks: list[ClaimCheck] = Field(default_factory=list)
    hypothesis_checks: list[HypothesisCheck] = Field(default_factory=list)
    digest_checks: list[DigestCheck] = Field(default_factory=list)
    rationale: str = ""
    # Only in a retry round: whether the gaps named in retry_context were closed.
    retry_gaps_closed: bool | None = None


class FactChecked(_Model):
    """docs/spec.md#facts-checked compatibility record, always derived from claim_checks."""

    fact: str
    verification: FactVerification
    is_critical: bool
    evidence_refs: list[EvidenceRef] = Field(default_factory=list)


# --- Composer (docs/spec.md#composer) --------------------------------------------------------------


class ComposerClaim(_Model):
    claim_id: str
    claim_type: str
    claim_text: str


class ComposerHypothesis(_Model):
    hypothesis_text: str
    needed_evidence: list[str] = Field(default_factory=list)
    # A cause in a component the question did not name: the verified fact about an asked service
    # that links it there (pipeline.stages.answer_lead.on_topic).
    link: str = ""


class ComposerAction(_Model):
    action_text: str
    reason: str = ""


class AnswerLead(_Model):
    """The answer's first sentence, decided in code (law 8): the most likely cause with its
    support level, "no sign of a fault" in the asked services, or no data for them."""

    # cause: the cause; present: yes, the asked symptom shows (a fact about it); healthy: no sign of
    # the asked symptom (its figure); no_data: nothing to tell from; unknown: none of these.
    # proposition: the yes/no of a cause or state proposition (`answer`, `statement`); why_open: a
    # why whose cause the evidence does not establish ("Cannot tell why ...": the closest facts).
    # since: a how-long / since-when answered by the first dated record of the asked symptom
    # (`text` its words); since_open: one that no dated record answers (the closest facts).
    kind: Literal["cause", "present", "healthy", "no_data", "unknown", "proposition", "why_open", "since",
                  "since_open"]
    support: Literal["confirmed", "likely", "unknown"] = "unknown"
    services: list[str] = Field(default_factory=list)
    # The allowed claim or hypothesis it rests on, verbatim; for healthy the figures that show the
    # symptom normal; for no_data the coverage detail.
    text: str = ""
    # What was checked, e.g. ["#21", "#22"] (tool invocation ids).
    evidence: list[str] = Field(default_factory=list)
    form: QuestionForm = "what"
    # The asked symptoms the lead speaks of (pipeline.verdict.scope ids).
    symptoms: list[str] = Field(default_factory=list)
    # What the evidence does show instead, when the asked symptom does not show or has no data:
    # an allowed claim or hypothesis, verbatim.
    instead: str = ""
    instead_support: Literal["confirmed", "likely", "unknown"] = "unknown"
    # proposition: yes / no / cannot_tell, and what is stated ("cause", "not_cause", "healthy",
    # "faulty"; answer.stmt_* in the catalogue) about `subject` (the asked cause or service).
    answer: Literal["yes", "no", "cannot_tell", ""] = ""
    statement: str = ""
    subject: str = ""
    # How the evidence links a cause in another service to the asked one.
    link: str = ""
    # since: when the first and the latest record of the symptom were written ("16:20 UTC"), the
    # span between them ("about 42 minutes"), and where the first one is ("#3 of call #12").
    since: str = ""
    until: str = ""
    span: str = ""
    record: str = ""
    # since, from one happening to the next: the later one's record (`text` holds the earlier's).
    then: str = ""


class ComposerInput(_Model):
    original_query: str
    verdict: Verdict
    # allowed_claims are ranked by relevance to the question; the first `key_claim_ids` are the
    # key facts, the rest "other observations".
    allowed_claims: list[ComposerClaim] = Field(default_factory=list)
    allowed_hypotheses: list[ComposerHypothesis] = Field(default_factory=list)
    missing_info: list[str] = Field(default_factory=list)
    recommended_actions: list[ComposerAction] = Field(default_factory=list)
    rationale: str = ""
    answer_lead: AnswerLead | None = None
    key_claim_ids: list[str] = Field(default_factory=list)
    question_scope: QuestionScope | None = None
    # Facts, causes and steps about components outside the question's scope that the evidence does
    # not link to an asked service: shown apart ("elsewhere in the evidence"), never in the lead.
    elsewhere: list[str] = Field(default_factory=list)


class FilteredItem(_Model):
    """What the composer-input filter kept away from the composer, and why (for the Trace page)."""

    source: str  # e.g. "claims[2]" or "hypotheses[0]"
    text: str
    reason: str
    msg: Message | None = None  # `reason` as code + parameters (see GatekeeperError.msg)
    moved_to: Literal["dropped", "allowed_hypotheses", "missing_info"] = "dropped"


class ComposerOutput(_Model):
    # The first sentence: it answers the question (see AnswerLead).
    answer_summary: str
    recommended_actions: list[ComposerAction] = Field(default_factory=list)
    user_facing_answer: str
    # The answer's sections, each optional so an older composer output still validates.
    key_facts: list[str] = Field(default_factory=list)
    other_observations: list[str] = Field(default_factory=list)
    possible_causes: list[str] = Field(default_factory=list)
    evidence_gaps: list[str] = Field(default_factory=list)


class ComposerGuardViolation(_Model):
    kind: str  # number | percentage | duration | error_code | service | identifier | root_cause | malformed
    token: str
    field: str = ""


class ComposerGuardResult(_Model):
    status: Literal["pass", "fail", "skipped"]
    violations: list[ComposerGuardViolation] = Field(default_factory=list)
    used_template: bool = False
    detail: str = ""
    msg: Message | None = None  # `detail` as code + parameters (see GatekeeperError.msg)


# --- Question scope and coverage (law 8) -------------------------------------------------

CoverageStatus = Literal["answered", "healthy", "no_data", "not_queried"]


class EvidenceTime(_Model):
    """The latest record the evidence backends hold for some services: the day a clock time
    without a date is read on ("since 10:00" over data from another day)."""

    at: datetime
    service: str = ""  # the service whose record it is
    kind: Literal["log", "alert"] = "log"


class TimeWindow(_Model):
    start: datetime | None = None
    end: datetime | None = None
    text: str = ""  # the phrase of the question it came from ("最近30分钟", "since 10:00")
    # Set when the phrase named a clock time without a date and was read on this record's day.
    anchor: EvidenceTime | None = None


class Proposition(_Model):
    """What a yes/no question asks to be true (pipeline.verdict.form): "is X the cause of Y" (cause),
    "is X normal / down" (state), "is X leaking memory" (symptom). A negated question ("isn't X
    normal?") asks the same proposition; `negated` records that it was put that way."""

    kind: Literal["cause", "state", "symptom", "value"]
    # cause: the suspected cause, a service, a change ("the v2.4.1 deploy") or a thing that is neither
    # ("dns", "the replica lag"); state, symptom: the service.
    subject: str = ""
    subject_kind: Literal["service", "change", "thing"] = "service"
    # value: the setting or version the question says the subject has ("v2.4.0", "15s"), as an
    # entity value, and the key it is said of ("upstream_timeout"; "" for a version).
    value: str = ""
    key: str = ""
    # value said of words, not of a key ("inv's heap is capped at 8g", "gc pauses r like 10s+"): what
    # the figure measures, and how it bounds the records' figures ("" exact, about, at_least, at_most).
    measure: list[str] = Field(default_factory=list)
    bound: Literal["", "about", "at_least", "at_most"] = ""
    # value: it asks whether the figure still holds ("still sitting at 86%?"): the latest record's.
    latest: bool = False
    # cause: the question's words for the suspect ("the promotion-service warmup"); a record of the
    # subject that feeds the cause's component holds one of them beside the service's name.
    phrase: str = ""
    # cause: the service whose symptom is asked about ("" when the question names none).
    target: str = ""
    # cause with no target: it asks whether the subject is the cause itself ("is X the culprit?",
    # "是不是 X 的问题"), not whether it is part of the incident ("is X part of this outage?").
    culprit: bool = False
    # state: which state the question asks to confirm.
    expects: Literal["healthy", "faulty"] = "faulty"
    # state: it asks whether the service is unavailable ("is X down?"), which a degraded service
    # (slow queries, memory near full) is not.
    outage: bool = False
    negated: bool = False
    # symptom: it asks whether the symptom ever happened ("has X restarted?", "X 是不是重启过？"),
    # which one record answers, rather than whether X is in that state now.
    event: bool = False
    # cause put as a remedy ("把这台摘掉结账就好了吧", "if we drain gw-2 will checkout be fine?"): a suspect
    # cleared answers it no; a suspect shown the cause does not say the remedy would work.
    remedy: bool = False
    # cause by a thing: the words naming it, the services' names aside ("aborted", "report", "conn").
    words: list[str] = Field(default_factory=list)
    # cause stated not to be it, asked to agree ("so it can't be the warmup, right?", "不是 X 导致的吧"): the
    # answer's yes agrees that the suspect is not the cause.
    denied: bool = False


class QuestionScope(_Model):
    """What the question asks about, read from its text in code before any stage runs."""

    services: list[str] = Field(default_factory=list)
    # The subset of `services` that some configured backend or the catalogue knows.
    known_services: list[str] = Field(default_factory=list)
    # Every symptom id the question names, suspected causes included ("timeout, deploy"): what
    # the tools search for.
    symptom: str = ""
    # The symptoms asked of each service (pipeline.verdict.scope.SYMPTOMS ids, "any" for a service asked
    # nothing in particular); key "" when the question names no service.
    symptoms: dict[str, list[str]] = Field(default_factory=dict)
    form: QuestionForm = "what"
    time_window: TimeWindow | None = None
    language: Literal["zh", "en"] = "zh"
    # A yes/no question's proposition; None for why/what and for scopes stored before it was read.
    proposition: Proposition | None = None
    # A why about a person's decision ("why did somebody flip the flag?"): the evidence shows what
    # was done and when, never why someone chose to.
    intent: bool = False
    # Who did something ("which person or job turned on order-history-export?", "谁改的风控规则"): the
    # record of the doing answers only when it names who did it.
    actor: bool = False
    # A why or since-when about one happening the symptom table has no word for ("why did the risk
    # rules jump from 212 to 1843?", "为什么跑全量库存同步", "NullPointerException at X - first seen
    # when?"): its own words, which a record of it must hold.
    event: list[str] = Field(default_factory=list)
    # How long from one happening to the next ("风控规则推上去之后隔了多久开始超时", "warmup start -> redis
    # maxed out: how many mins?"): the earlier one's words; `event` holds the later one's, and the
    # symptom it names, if any, is `symptom`. A yes/no setting the symptom's start before or after a
    # happening ("支付超时是不是风控规则更新前就有了", "did the check failures only start after the
    # restart?"): that happening's words, and `order` which side it says; "sequence": a yes/no saying
    # this one came first and `event` after it ("PoolExhausted went off first, then SlowQueries?").
    since_event: list[str] = Field(default_factory=list)
    order: Literal["", "before", "after", "sequence"] = ""
    # A since-when of a change taking effect ("when did the 5 s timeout kick in?", "几点开始生效的"):
    # dated by the change's own record, not by the first symptom after it.
    took_effect: bool = False
    # A when of one happening that is no onset ("what time did order 123 flip to PAID?", "全量同步几点又续上的"):
    # dated by the record holding its words (`event`), not by the first record of a symptom.
    moment: bool = False
    # That when asks the latest time ("when was the last OOM?", "最近一次 OOM 是几点"): the latest record of it.
    latest: bool = False
    # That when asks when a reading was highest ("what time did the cpu top out", "CPU 最高是几点"): the
    # record of its series holding the highest figure.
    peak: bool = False
    # The ids a yes/no question asks of ("did order 87 get ERR_TIMEOUT too?"): the records naming
    # them answer it, not the symptom's records of other orders.
    identifiers: list[str] = Field(default_factory=list)
    # The instances a yes/no asks of its symptom ("is inv-84cd-1 doing full GCs too?", "那 -1 上也在超时吗"
    # after pay-7d9f-2): their own records answer it, not their siblings'.
    boxes: list[str] = Field(default_factory=list)
    # A why that grants its symptom stayed within bounds ("within SLO but still, why so slow?") or
    # quotes the figure it finds slow ("怎么慢到 1.8s 了"): a record saying so shows the thing asked about.
    within_bounds: bool = False
    # The status a yes/no asks its ids still hold ("is order 123 still PAY_UNKNOWN?", "订单 123 还是
    # PAY_UNKNOWN 吧"): the latest record naming them says, a later one may have moved them on.
    status: str = ""
    # An alert asked whether it still fires or has resolved ("RedisMemoryHigh 恢复了没", "is CartLatencyHigh
    # still firing?"): its name and the state asked of it; its own record answers.
    alert: str = ""
    alert_state: Literal["firing", "resolved", ""] = ""
    # The time of day a yes/no says its symptom stopped at ("evictions stopped once the warmup finished
    # at 19:44, right?", "19:44 之后就没再超时了吧"): a record of it after then says no.
    stopped_at: str = ""
    # Its words for what stopped ("evictions", "淘汰"), which a record of it after then holds.
    stopped_words: list[str] = Field(default_factory=list)
    # A yes/no asking whether its symptom happened once ("was that 504 just a blip?", "是偶发的吧"): the
    # count of its records answers, not its presence.
    # A yes/no saying every request, user or order suffers ("every single /api/pay call failing?", "所有用户都
    #下不了单吧"): failures shown do not show all fail; a success of the same path says no.
    universal: bool = False
    # A why of something said to have stopped ("订单超时关单任务怎么不跑了", "why did the export job stop
    # running"): its last record is what the records say of it, not the incident's cause.
    halted: bool = False
    one_off: bool = False
    # A yes/no asking whether two happenings share one cause ("是一根藤上的瓜吗", "same root, the warmup?"):
    # no record ties two happenings to one cause, so it stays open whatever either shows.
    shared_cause: bool = False
    # The one instance or service a yes/no says alone shows its symptom ("only checkout-68f0-1 throws
    # the NPE, right?", "只在 gw-5c8b-1 上生效了吧"): a record of it elsewhere says no.
    only: str = ""


class ServiceCoverage(_Model):
    """Per asked (service, symptom): did the evidence answer it? Decided in code, never by the LLM."""

    service: str  # "" when the question names no service: the symptom anywhere
    status: CoverageStatus
    symptom: str = "any"
    # Log lines, alerts and series of this service that its invocations returned.
    records: int = 0
    # What shows the symptom normal or present, verbatim from a record ("jvm_heap_used_percent 54.0").
    figure: str = ""
    claim_ids: list[str] = Field(default_factory=list)
    invocation_ids: list[int] = Field(default_factory=list)
    detail: str = ""
    msg: Message | None = None  # `detail` as code + parameters (see GatekeeperError.msg)


class DatedRecord(_Model):
    """One dated record of a tool output: where it is (invocation id, record number), whose it is,
    when it was written and its words verbatim."""

    invocation_id: int
    number: int
    service: str = ""
    at: datetime
    text: str = ""


class FormCoverage(_Model):
    """Did the evidence answer the question in its form (law 8, law 12)? Decided in code.

    why: a cause for the asked symptom in the asked service (a verified root-cause claim, or a
    hypothesis the verifier judged reasonable whose basis quotes verified evidence), about that
    service or about one the evidence links to it; a symptom shown absent answers it too. yes_no:
    evidence for or against the proposition. what: every asked pair answered or shown healthy."""

    form: QuestionForm = "what"
    status: Literal["answered", "not_answered"] = "answered"
    # yes_no: the proposition's truth as the evidence shows it.
    answer: Literal["yes", "no", "cannot_tell", ""] = ""
    # The coverage row (service, symptom) that decided it.
    service: str = ""
    symptom: str = "any"
    # The cause the answer may name, verbatim, and how sure: confirmed claim or likely hypothesis.
    cause: str = ""
    cause_support: Literal["confirmed", "likely", "unknown"] = "unknown"
    claim_id: str = ""
    hypothesis_index: int | None = None
    # How the evidence links a cause in another service to the asked one (a verified fact quoted).
    link: str = ""
    # how_long / since_when: the first dated record of the asked symptom in the asked service, and
    # when the latest one was last seen (both in the evidence's own zone).
    first: DatedRecord | None = None
    until: datetime | None = None
    detail: str = ""
    msg: Message | None = None  # `detail` as code + parameters (see GatekeeperError.msg)


# --- Audit (docs/spec.md#audit-record) -----------------------------------------------------------------


class RoundAudit(_Model):
    verdict: Verdict
    groundedness_score: float
    critical_fact_count: int = 0
    claim_checks: list[ClaimCheck] = Field(default_factory=list)
    facts_checked: list[FactChecked] = Field(default_factory=list)
    hypothesis_checks: list[HypothesisCheck] = Field(default_factory=list)
    digest_checks: list[DigestCheck] = Field(default_factory=list)
    rationale: str = ""
    round: int = 1
    traceability_version: str = TRACEABILITY_VERSION
    executor_output_parse_status: ParseStatus
    # Stored as the executor wrote it (normalized), read typed.
    executor_structured_output: ExecutorOutput | None = None
    tool_trace_summary: list[ToolTraceSummaryItem] = Field(default_factory=list)
    gatekeeper_result: GatekeeperResult
    # The verifier's own verdict and the reasons the code-side guard made it stricter.
    verifier_verdict: Verdict | None = None
    verdict_guard_reasons: list[str] = Field(default_factory=list)
    # The same reasons as code + parameters, for the reader's language (empty in older sessions).
    verdict_reasons: list[Message] = Field(default_factory=list)
    composer_input: ComposerInput | None = None
    composer_filtered: list[FilteredItem] = Field(default_factory=list)
    composer_output: ComposerOutput | None = None
    composer_guard: ComposerGuardResult | None = None
    retry_context: RetryContext | None = None
    # Law 8: per asked service, answered / healthy / no_data / not_queried (decided in code).
    question_coverage: list[ServiceCoverage] = Field(default_factory=list)
    question_form_coverage: FormCoverage | None = None


class LlmCallRecord(_Model):
    """Law 6: every LLM call (offline ones included) is recorded with what it was asked."""

    stage: str
    round: int = 1
    provider: str
    model: str
    prompt_file: str = ""
    prompt_version: str = ""
    messages: list[dict[str, Any]] = Field(default_factory=list)
    raw_response: str = ""
    parse_status: Literal["valid", "missing", "malformed", "n/a"] = "valid"
    attempt: int = 1
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0
    error: str | None = None
    # json_schema | json_object | prompt for a JSON reply (the collector's calls asked as JSON
    # too); tool_choice for a collector turn made to call a tool; None otherwise and offline.
    json_mode: str | None = None
    # The endpoint's (stop, length, tool_calls), or "prose": a reply made to call a tool that
    # wrote text instead, read no further.
    finish_reason: str | None = None

    def redacted(self) -> LlmCallRecord:
        """The record with its messages, reply and error redacted, as it is stored."""
        return self.model_copy(update={"messages": redact_value(self.messages), "raw_response": redact(self.raw_response),
                                       "error": redact(self.error) if self.error else self.error})


# --- what brought a session (its `trigger` column) ------------------------------------------------


class TriggerAlert(TypedDict):
    """One firing alert of the Alertmanager group a session was asked for."""

    fingerprint: str
    alertname: str | None
    service: str | None
    severity: str | None
    description: str | None
    startsAt: str | None


class Trigger(TypedDict, total=False):
    """Who asked: a person ("manual"), an Alertmanager group (its receiver, key, first start and
    alerts) or a foreign OpenTelemetry trace (its service and trace id)."""

    kind: Required[Literal["manual", "alertmanager", "otlp_trace"]]
    receiver: str
    group_key: str
    starts_at: str | None
    alerts: list[TriggerAlert]
    service_name: str
    trace_id: str
