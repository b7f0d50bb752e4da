"""A stored session read back into the contracts it was written from.

The store keeps stage outputs as JSON columns; everything that reads a session (views, the
`workbench show` report, the pages) works on one `SessionRecord` validated here, so a field
renamed in `pipeline.core.contracts` breaks a test rather than silently reading as empty.

Two parts are not contracts the pipeline enforced: the executor's structured output (raw LLM
JSON that the gatekeeper judged, schema violations included) and the gatekeeper's cached
per-binding features. The output is read tolerantly, as the pipeline read it at parse
(pipeline.core.contracts.ExecutorOutput): a claim with a missing field is a finding to show
beside its errors, not a reason to hide it. The features are validated against their one
definition (pipeline.core.feature_shapes), which every stored version matches.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from pipeline.core.contracts import (
    ComposerOutput,
    EvidenceDigest,
    ExecutorClaim,
    ExecutorHypothesis,
    LlmCallRecord,
    PlannerPlan,
    QuestionScope,
    RoundAudit,
    ToolArguments,
    ToolStatus,
    Verdict,
    VerifierOutput,
)
from pipeline.core.errors import NotFound, StoreError, quote
from pipeline.core.feature_shapes import Features
from pipeline.store import Store
from pipeline.store.rows import InvocationMetaColumns, LlmCallColumns, ReviewColumns, SessionColumns


class _Read(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True, protected_namespaces=())  # model_tool_name


# --- rows of the other tables ------------------------------------------------------------------


class InvocationMeta(_Read):
    """A tool_invocation row without its full output (that is read on demand, it may be megabytes)."""

    id: int
    round: int = 1
    tool_name: str
    model_tool_name: str
    arguments: ToolArguments = Field(default_factory=dict)
    status: ToolStatus
    error: str | None = None
    latency_ms: float = 0.0
    output_bytes: int = 0
    stored_cut_bytes: int = 0
    output_preview: str = ""


class ReviewRecord(_Read):
    session_id: str
    claim_id: str | None = None
    label: str
    note: str = ""
    reviewer: str
    created_at: datetime


class SessionRow(_Read):
    """A row of the session list: the list columns and the latest session-level label."""

    id: str
    created_at: datetime
    question: str
    status: str
    verdict: Verdict | None = None  # in force: the outcome under the rule version in force
    gatekeeper_status: Literal["pass", "warn", "fail"] | None = None
    failed_rules: list[str] = Field(default_factory=list)
    groundedness: float | None = None
    services: str = ""
    provider: str
    shape: str
    review_label: str | None = None
    provenance: Literal["verified", "unverified"] | None = None
    ungated: bool = False
    verdict_at_ask: Verdict | None = None
    rules_version: int | None = None  # the version that gave the verdict in force
    rules_version_at_ask: int | None = None  # None: stored before versions were recorded
    composer_findings: bool = False

    @field_validator("failed_rules", mode="before")
    @classmethod
    def _null_list(cls, v: Any) -> Any:
        return [] if v is None else v

    @property
    def marks(self) -> list[str]:
        return verdict_marks(ungated=self.ungated, provenance=self.provenance)

    @property
    def queued_for(self) -> list[str]:
        """Why a PASS sits in the review queue (queue.queue_query's reasons beyond the verdict):
        the warning rules by id (or "gatekeeper_warn" when none is listed) and "composer_findings"
        (an unverified import shows as a mark); empty for any other verdict."""
        if self.verdict != "PASS":
            return []
        why = []
        if self.gatekeeper_status in ("warn", "fail"):
            why = list(self.failed_rules) or ["gatekeeper_warn"]
        if self.composer_findings:
            why.append("composer_findings")
        return why


# --- the session -------------------------------------------------------------------------------


def verdict_marks(*, ungated: bool, provenance: str | None) -> list[str]:
    """What qualifies a verdict wherever it is shown: "ungated" (judged with the gatekeeper or an
    evidence rule off, RuleSet.ungated_by) and "unverified" (an import no trusted key signed)."""
    return [*(["ungated"] if ungated else []), *(["unverified"] if provenance == "unverified" else [])]


def verdict_text(verdict: str | None, marks: Sequence[str]) -> str:
    """A verdict with its marks, for one-line displays: "PASS (ungated, unverified)"."""
    return (verdict or "-") + (f" ({', '.join(marks)})" if marks else "")


class SignatureRecord(_Read):
    provenance: str | None = None
    reason: str | None = None
    key: str | None = None


class ClaimedBySource(_Read):
    """What an imported bundle said of itself (self_evaluation.claimed_by_source, pipeline/
    bundle_import.py): shown beside the re-verified result, never used (law 9). The verdict is
    free text: a source may claim anything."""

    verdict: str | None = None
    final_answer: str | None = None
    provider: str | None = None
    model: str | None = None
    session_id: str | None = None
    signature: SignatureRecord | None = None


class SessionRecord(_Read):
    id: str
    created_at: datetime
    question: str
    world: str | None = None
    shape: str
    provider: str
    model: str
    status: str
    stage: str
    error: str | None = None
    verdict: Verdict | None = None
    gatekeeper_status: Literal["pass", "warn", "fail"] | None = None
    failed_rules: list[str] = Field(default_factory=list)
    groundedness: float | None = None
    final_answer: str | None = None
    rounds: int = 1
    planner_plan: PlannerPlan | None = None
    evidence_digests: list[EvidenceDigest] = Field(default_factory=list)
    executor_raw_output: str | None = None
    verifier_output: VerifierOutput | None = None
    composer_output: ComposerOutput | None = None
    # self_evaluation.verifier_evaluation of the last round; earlier rounds kept apart.
    evaluation: RoundAudit | None = None
    earlier_rounds: list[RoundAudit] = Field(default_factory=list)
    question_scope: QuestionScope | None = None
    claimed_by_source: ClaimedBySource | None = None
    features: Features = Field(default_factory=dict)
    timings_ms: dict[str, float] = Field(default_factory=dict)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    invocations: list[InvocationMeta] = Field(default_factory=list)
    llm_calls: list[LlmCallRecord] = Field(default_factory=list)
    reviews: list[ReviewRecord] = Field(default_factory=list)
    provenance: Literal["verified", "unverified"] | None = None
    ungated: bool = False

    @field_validator("failed_rules", "evidence_digests", "earlier_rounds", mode="before")
    @classmethod
    def _null_list(cls, v: Any) -> Any:
        return [] if v is None else v

    @field_validator("timings_ms", mode="before")
    @classmethod
    def _null_dict(cls, v: Any) -> Any:
        return {} if v is None else v

    @classmethod
    def from_row(
        cls,
        row: SessionColumns,
        *,
        invocations: Sequence[InvocationMetaColumns] = (),
        llm_calls: Sequence[LlmCallColumns] = (),
        reviews: Sequence[ReviewColumns] = (),
    ) -> SessionRecord:
        """Validate a `diagnosis_session` row (as `Store.get_session` returns it) and its child rows."""
        se = row.get("self_evaluation") or {}
        ev = se.get("verifier_evaluation") if isinstance(se, dict) else None
        features = row.get("gatekeeper_features") or {}
        data = {
            **row,
            "evaluation": ev,
            "earlier_rounds": se.get("rounds") if isinstance(se, dict) else None,
            # Its own column once the schema has one; before that, inside audit.
            "question_scope": row.get("question_scope") or (se.get("question_scope") if isinstance(se, dict) else None),
            "claimed_by_source": se.get("claimed_by_source") if isinstance(se, dict) else None,
            "features": {k: v for k, v in features.items() if k.startswith(("claims[", "digests["))},
            "invocations": list(invocations),
            "llm_calls": list(llm_calls),
            "reviews": list(reviews),
        }
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise StoreError(
                f"session {row.get('id')}: stored {where} does not match the contract "
                f"({first['msg']}; got {quote(first.get('input'))}); {exc.error_count()} problem(s) in all"
            ) from exc

    # --- what readers ask of a session -----------------------------------------------------------

    @property
    def claims(self) -> list[ExecutorClaim]:
        """The executor's claims in their written positions (claims[i] of the gatekeeper's targets)."""
        output = self.evaluation.executor_structured_output if self.evaluation else None
        return output.claims if output is not None else []

    @property
    def hypotheses(self) -> list[ExecutorHypothesis]:
        output = self.evaluation.executor_structured_output if self.evaluation else None
        return output.hypotheses if output is not None else []

    @property
    def marks(self) -> list[str]:
        return verdict_marks(ungated=self.ungated, provenance=self.provenance)

    def claim_reviews(self, claim_id: str) -> list[ReviewRecord]:
        return [r for r in self.reviews if r.claim_id == claim_id]

    @property
    def session_reviews(self) -> list[ReviewRecord]:
        return [r for r in self.reviews if r.claim_id is None]


def read_session(store: Store, session_id: str, *, with_llm_calls: bool = True) -> SessionRecord:
    """The session with its invocations (no outputs), reviews and, unless asked not to, its LLM calls."""
    row = store.get_session(session_id)
    if row is None:
        raise NotFound(f"no session {session_id!r}: `workbench sessions` lists the stored ones")
    return SessionRecord.from_row(
        row,
        invocations=store.invocation_meta(session_id),
        llm_calls=store.llm_calls(session_id) if with_llm_calls else [],
        reviews=store.reviews(session_id),
    )
