"""Tables of the audit store. SQLite by default, PostgreSQL from DATABASE_URL.

The schema changes only through a new revision in pipeline/store/migrations/versions/; the
test in tests/test_migrations.py fails while these models and the revisions disagree.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    Table,
    Text,
    cast,
    false,
    func,
    literal_column,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from pipeline.core.contracts import ToolArguments, Trigger
from pipeline.core.feature_shapes import Features


def utcnow() -> datetime:
    return datetime.now(UTC)


class Base(DeclarativeBase):
    # Every string is Text: a length that SQLite ignores and PostgreSQL enforces made the same
    # session fail on one backend only (a planner's 60-character tool name, a 41-character
    # imported id). Declare new string columns as plain `Mapped[str]`.
    type_annotation_map = {str: Text, dict[str, Any]: JSON, list[Any]: JSON}


class DiagnosisSession(Base):
    """One question and its whole audit chain; written at start, updated after every stage."""

    __tablename__ = "diagnosis_session"

    id: Mapped[str] = mapped_column(primary_key=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, index=True)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, onupdate=utcnow)
    question: Mapped[str] = mapped_column(Text)
    world: Mapped[str | None]
    shape: Mapped[str]
    provider: Mapped[str]
    model: Mapped[str]
    # [queued ->] running -> completed | failed | interrupted; `stage` is the last stage reached.
    status: Mapped[str] = mapped_column(default="running", index=True)
    stage: Mapped[str] = mapped_column(default="created")
    error: Mapped[str | None] = mapped_column(Text)
    verdict: Mapped[str | None] = mapped_column(index=True)
    gatekeeper_status: Mapped[str | None] = mapped_column(index=True)
    failed_rules: Mapped[list[str]] = mapped_column(JSON, default=list)
    groundedness: Mapped[float | None] = mapped_column(Float)
    services: Mapped[str] = mapped_column(default="")
    final_answer: Mapped[str | None] = mapped_column(Text)
    rounds: Mapped[int] = mapped_column(Integer, default=1)
    planner_plan: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    evidence_digests: Mapped[list[Any] | None] = mapped_column(JSON)
    executor_raw_output: Mapped[str | None] = mapped_column(Text)
    verifier_output: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    composer_output: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    # docs/spec.md#audit-record: {"verifier_evaluation": {...}}; earlier rounds kept under "rounds".
    self_evaluation: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    # Threshold-free gatekeeper features per binding: a rules change re-verdicts without recompute.
    gatekeeper_features: Mapped[Features | None] = mapped_column(JSON)
    timings_ms: Mapped[dict[str, float]] = mapped_column(JSON, default=dict)
    prompt_tokens: Mapped[int] = mapped_column(Integer, default=0)
    completion_tokens: Mapped[int] = mapped_column(Integer, default=0)
    cost_usd: Mapped[float] = mapped_column(Float, default=0.0)
    imported_id_map: Mapped[dict[str, int] | None] = mapped_column(JSON)
    # Jobs (pipeline/jobs): queued -> running -> completed | failed | interrupted. A running
    # session's worker refreshes heartbeat_at; one whose lease lapsed is marked interrupted.
    heartbeat_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    # What started it: {"kind": "manual"} or the Alertmanager group (pipeline/frontends/webhook.py).
    trigger: Mapped[Trigger | None] = mapped_column(JSON)
    # Dedup key of an alert group (group key + fingerprints): one session per group per window.
    trigger_key: Mapped[str | None] = mapped_column(Text, index=True)
    # The interrupted or failed session this one runs again.
    rerun_of: Mapped[str | None] = mapped_column(Text, index=True)
    # The audit record holds composer findings: claims the composer-input filter kept from the
    # answer (composer_filtered) or a composer guard fallback to the fixed template. Set by the
    # store whenever self_evaluation is written (repo.composer_findings); the review queue reads
    # it instead of every session's JSON (migration 0007).
    composer_findings: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    # An imported session's provenance (pipeline/bundles/provenance.py): "verified" when its bundle was
    # signed by a trusted key and unchanged since, else "unverified", which the review queue
    # holds for a person whatever the re-verified verdict; NULL for a session run here.
    provenance: Mapped[str | None] = mapped_column(Text)
    # Judged with the gatekeeper or an evidence rule off or warn-only (RuleSet.ungated_by): its
    # verdict says nothing about forged quotes, and every view of the verdict says "ungated".
    ungated: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    # The rule version that judged `verdict`, `gatekeeper_status` and `failed_rules` at ask (NULL:
    # stored before migration 0011, or rules never applied here). The outcome under the version
    # in force, where it differs, is the session's verdict_in_force row (migration 0011).
    rules_version: Mapped[int | None] = mapped_column(Integer)


class ToolInvocationRow(Base):
    """Invocation ids are global, not per session: a citation of another session's call is detectable."""

    __tablename__ = "tool_invocation"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    session_id: Mapped[str] = mapped_column(ForeignKey("diagnosis_session.id", ondelete="CASCADE"), index=True)
    round: Mapped[int] = mapped_column(Integer, default=1)
    tool_name: Mapped[str]
    model_tool_name: Mapped[str]
    arguments: Mapped[ToolArguments] = mapped_column(JSON, default=dict)
    status: Mapped[str]
    output: Mapped[str] = mapped_column(Text, default="")
    output_preview: Mapped[str] = mapped_column(Text, default="")
    output_bytes: Mapped[int] = mapped_column(Integer, default=0)
    # Set when the output was larger than budget.max_stored_output_bytes and cut before storing.
    stored_cut_bytes: Mapped[int] = mapped_column(Integer, default=0)
    # An output is stored once per session (migration 0004): a repeat has an empty `output` and
    # `output_of` = the id of the row holding the text; the store's reads restore it.
    output_sha256: Mapped[str | None] = mapped_column(Text)
    output_of: Mapped[int | None] = mapped_column(Integer)
    error: Mapped[str | None] = mapped_column(Text)
    retrieval_details: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    latency_ms: Mapped[float] = mapped_column(Float, default=0.0)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class LlmCallRow(Base):
    """Law 6: every LLM call, offline ones too, with what it was asked and what came back."""

    __tablename__ = "llm_call"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    session_id: Mapped[str] = mapped_column(ForeignKey("diagnosis_session.id", ondelete="CASCADE"), index=True)
    stage: Mapped[str]
    round: Mapped[int] = mapped_column(Integer, default=1)
    provider: Mapped[str]
    model: Mapped[str]
    prompt_file: Mapped[str] = mapped_column(default="")
    prompt_version: Mapped[str] = mapped_column(default="")
    messages: Mapped[list[Any]] = mapped_column(JSON, default=list)
    raw_response: Mapped[str] = mapped_column(Text, default="")
    parse_status: Mapped[str]
    attempt: Mapped[int] = mapped_column(Integer, default=1)
    prompt_tokens: Mapped[int] = mapped_column(Integer, default=0)
    completion_tokens: Mapped[int] = mapped_column(Integer, default=0)
    latency_ms: Mapped[float] = mapped_column(Float, default=0.0)
    error: Mapped[str | None] = mapped_column(Text)
    # How the reply was held to a shape: the response_format the endpoint took, or "tool_choice"
    # for a collector turn made to call a tool (NULL: neither, or before 0012); and why the reply
    # stopped ("length": cut at its output cap).
    json_mode: Mapped[str | None] = mapped_column(Text)
    finish_reason: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class ReviewRow(Base):
    """A reviewer's label on a session (claim_id NULL) or on one claim of it."""

    __tablename__ = "review"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    session_id: Mapped[str] = mapped_column(ForeignKey("diagnosis_session.id", ondelete="CASCADE"), index=True)
    claim_id: Mapped[str | None]
    label: Mapped[str]
    note: Mapped[str] = mapped_column(Text, default="")
    reviewer: Mapped[str]
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class RuleVersionRow(Base):
    """Applied gatekeeper rules, the version each started from in parent_id; which one is in
    force is RulesInForce's."""

    __tablename__ = "rule_version"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    author: Mapped[str]
    comment: Mapped[str] = mapped_column(Text, default="")
    index_yaml: Mapped[str] = mapped_column(Text)
    metadata_yaml: Mapped[str] = mapped_column(Text)
    parent_id: Mapped[int | None] = mapped_column(Integer)


class RulesInForce(Base):
    """The rule version in force, as one row (id 1), so that the database keeps it one: an apply
    moves `version` from the version it started from in a single conditional UPDATE, and of
    applies started from the same version only the first finds it there (migration 0008)."""

    __tablename__ = "rules_in_force"
    __table_args__ = (CheckConstraint("id = 1", name="ck_rules_in_force_one_row"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    version: Mapped[int] = mapped_column(Integer, default=0, server_default="0")  # 0: the shipped rules/
    # The version the stored sessions were last re-judged under (NULL: never), and the re-judge
    # under way: its version, phase, sessions done of total, last sign of life (migration 0009).
    judged_version: Mapped[int | None] = mapped_column(Integer)
    judging_version: Mapped[int | None] = mapped_column(Integer)
    judging_phase: Mapped[str | None] = mapped_column(Text)
    judging_done: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    judging_total: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    judging_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class VerdictInForce(Base):
    """A session's outcome under the rule version in force, where it differs from its outcome at
    ask (the diagnosis_session columns); written by the re-judge that follows an apply or a
    rollback (pipeline/runs/rulebook.py). A narrow table: a re-judge writes up to a row per session."""

    __tablename__ = "verdict_in_force"

    # No foreign key: its check locked each session's row, most of a million-row write on
    # PostgreSQL; a trigger deletes the row with its session, and the writers insert only rows of
    # stored sessions (migration 0023).
    session_id: Mapped[str] = mapped_column(Text, primary_key=True)
    verdict: Mapped[str] = mapped_column(Text)
    gatekeeper_status: Mapped[str] = mapped_column(Text)
    failed_rules: Mapped[list[str]] = mapped_column(JSON, default=list)
    # The version that judged the row; NULL: rules_in_force.judged_version, which the re-judge
    # moves as it writes, so rows whose outcome a new version keeps are left alone (migration 0017).
    rules_version: Mapped[int | None] = mapped_column(Integer)
    # Judged with the gatekeeper or an evidence rule off or warn-only (migration 0012).
    ungated: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())


class QueueTally(Base):
    """The review queue's counts in aggregate (migration 0019): how many sessions share a day (UTC),
    an outcome in force and at ask, and the columns the queue's conditions read. Kept by triggers
    on diagnosis_session and verdict_in_force, and rebuilt by the re-judge (pipeline/store/tally.py);
    a NULL is stored as '' (or -1 for the groundedness tenth), as a key that may be NULL never
    meets its conflict."""

    __tablename__ = "queue_tally"

    day: Mapped[str] = mapped_column(Text, primary_key=True)
    verdict: Mapped[str] = mapped_column(Text, primary_key=True)  # in force
    verdict_at_ask: Mapped[str] = mapped_column(Text, primary_key=True)
    gatekeeper_status: Mapped[str] = mapped_column(Text, primary_key=True)  # in force
    failed_rules: Mapped[str] = mapped_column(Text, primary_key=True)  # in force, the JSON list as text
    bucket: Mapped[int] = mapped_column(Integer, primary_key=True)  # groundedness tenth
    status: Mapped[str] = mapped_column(Text, primary_key=True)
    composer_findings: Mapped[bool] = mapped_column(Boolean, primary_key=True)
    provenance: Mapped[str] = mapped_column(Text, primary_key=True)
    sessions: Mapped[int] = mapped_column(Integer)


class QueueTallyState(Base):
    """One row: `held` stops the tally's triggers inside a transaction that rebuilds it anyway."""

    __tablename__ = "queue_tally_state"
    __table_args__ = (CheckConstraint("id = 1", name="ck_queue_tally_state_one_row"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    held: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())


class SessionEventRow(Base):
    """A session's stage events in order, so any page or replica follows a run it did not start."""

    __tablename__ = "session_event"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    session_id: Mapped[str] = mapped_column(ForeignKey("diagnosis_session.id", ondelete="CASCADE"), index=True)
    stage: Mapped[str] = mapped_column(Text)
    data: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


# Space held back on PostgreSQL (migration 0022): rows of nothing, truncated when a write finds the
# disk full (Store.release_reserve). PostgreSQL's only: SQLite keeps its reserve in a file.
STORE_RESERVE = Table("store_reserve", Base.metadata, Column("n", BigInteger), info={"dialect": "postgresql"})

class JobRow(Base):
    """An eval run or batch check run as a job; its result stays here for the page that asked.
    (A diagnosis job's record is its diagnosis_session row.)"""

    __tablename__ = "job"

    id: Mapped[str] = mapped_column(Text, primary_key=True)
    kind: Mapped[str] = mapped_column(Text)
    args: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    status: Mapped[str] = mapped_column(Text, default="queued", index=True)
    result: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    error: Mapped[str | None] = mapped_column(Text)
    heartbeat_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    # Migration 0021: how far a running eval has got, and a person's request that it stop.
    progress_done: Mapped[int | None] = mapped_column(Integer)
    progress_total: Mapped[int | None] = mapped_column(Integer)
    cancel_requested_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class GateSessionColumns(Base):
    """One replayable session in the columnar replay (pipeline/replay/columns.py): what a
    threshold replay needs of it besides its bindings, as numbers and small codes. `seq` is the
    dense integer that gate_binding rows point at, so arrays never hold session id strings."""

    __tablename__ = "gate_session"

    seq: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    session_id: Mapped[str] = mapped_column(ForeignKey("diagnosis_session.id", ondelete="CASCADE"), unique=True)
    # Fingerprint of the non-threshold rule parameters `lists_clean` was judged under.
    lists_key: Mapped[str] = mapped_column(Text)
    lists_clean: Mapped[bool] = mapped_column(Boolean)  # schema, invocation_ref, phrases, digest refs found nothing
    min_coverage: Mapped[float | None] = mapped_column(Float)  # lowest claim keyword coverage
    min_quote: Mapped[float | None] = mapped_column(Float)  # lowest digest source_quote similarity
    # The projected verdict when the gatekeeper finds nothing: rule-independent (no rule impacts).
    clean_verdict: Mapped[str] = mapped_column(Text)
    clean_unbacked: Mapped[list[str]] = mapped_column(JSON, default=list)
    old_status: Mapped[str] = mapped_column(Text)
    old_verdict: Mapped[str] = mapped_column(Text)
    old_rules: Mapped[str] = mapped_column(Text, default="")  # failed + warned rule ids, comma-joined
    # Whether gate_claim rows describe every claim (valid output, each claim an object with its
    # own claim_id), so the arrays can judge it under any thresholds; and the verdict its
    # coverage and failed tool calls allow at best.
    claims_ok: Mapped[bool | None] = mapped_column(Boolean)
    evidence_floor: Mapped[str | None] = mapped_column(Text)
    # The findings of the kinds whose replay is "stored" (schema, invocation_ref, phrases, digest
    # refs) as bits in columns.stored_kinds order: any finding, a fail-level one.
    text_has: Mapped[int | None] = mapped_column(Integer)
    text_fail: Mapped[int | None] = mapped_column(Integer)


class GateSegment(Base):
    """A random stamp per 65,536 gate_session seqs, drawn anew by triggers at every change to their
    gate rows: what the Parquet files of those rows are checked by (migration 0020)."""

    __tablename__ = "gate_segment"

    segment: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    stamp: Mapped[int] = mapped_column(BigInteger)


class GateClaim(Base):
    """One claim's standing in the verdict matrix under each gatekeeper outcome for it
    (pipeline.verdict.policy.ClaimStanding), as verdict codes 0 PASS, 1 LOW_CONFID, 2 REJECT."""

    __tablename__ = "gate_claim"

    seq: Mapped[int] = mapped_column(ForeignKey("gate_session.seq", ondelete="CASCADE"), primary_key=True)
    claim: Mapped[int] = mapped_column(Integer, primary_key=True)
    untouched: Mapped[int] = mapped_column(Integer)
    hit: Mapped[int] = mapped_column(Integer)
    entity_hit: Mapped[int] = mapped_column(Integer)
    direct_core: Mapped[bool] = mapped_column(Boolean)
    text_hit: Mapped[int] = mapped_column(Integer, default=0)  # text rules with a finding in this claim


class GateBinding(Base):
    """Threshold-free numbers of one evidence binding (a few dozen bytes), read into arrays."""

    __tablename__ = "gate_binding"

    seq: Mapped[int] = mapped_column(ForeignKey("gate_session.seq", ondelete="CASCADE"), primary_key=True)
    claim: Mapped[int] = mapped_column(Integer, primary_key=True)
    binding: Mapped[int] = mapped_column(Integer, primary_key=True)
    out_score: Mapped[float | None] = mapped_column(Float)  # best cited output; NULL: nothing measured
    out_covered: Mapped[float | None] = mapped_column(Float)
    # The lightest piece of a quote found split between adjacent records (0: one span).
    out_split: Mapped[int | None] = mapped_column(Integer)
    quote_score: Mapped[float | None] = mapped_column(Float)  # vs the cited digest's source_quote
    summary_score: Mapped[float | None] = mapped_column(Float)
    invented: Mapped[int] = mapped_column(Integer, default=0)  # invented pieces before length filters
    # Highest score at which an entity/meaning finding is gated (2.0: found at any minLocatedScore).
    entity_score: Mapped[float] = mapped_column(Float, default=-1.0)
    entity_low: Mapped[float | None] = mapped_column(Float)  # the lowest such score (NULL: not recorded)
    entity_points: Mapped[int | None] = mapped_column(Integer)  # how many scores change its findings
    # Whether the findings hold a fail-level one: bit 0 from the highest score down, bit 1 from the lowest.
    entity_fail: Mapped[int | None] = mapped_column(Integer)
    text_flag: Mapped[int | None] = mapped_column(Integer)  # text rules with a finding on or inside this binding


Index("ix_session_review_queue", DiagnosisSession.verdict, DiagnosisSession.created_at)
Index("ix_tool_invocation_output_once", ToolInvocationRow.session_id, ToolInvocationRow.output_sha256)
Index("ix_session_status_created", DiagnosisSession.status, DiagnosisSession.created_at)
Index("ix_session_gatekeeper_created", DiagnosisSession.gatekeeper_status, DiagnosisSession.created_at)
Index("ix_session_status_id", DiagnosisSession.status, DiagnosisSession.id)  # covering for the columnar load
Index("ix_session_status_verdict", DiagnosisSession.status, DiagnosisSession.verdict)  # the metrics' counts (0014)
# The review queue's counts and charts (pipeline/runs/review_queue.py) in one pass over an index holding
# every column its conditions and groups read, never over the table rows, whose JSON audit
# record runs to ~15 KB a session (migration 0007). SQLite's leads with the chart groups in the
# form the query groups by, so it reads the groups in order (no sort of a million rows); SQLite
# cannot reflect an expression index, so a batch migration that rebuilds diagnosis_session must
# create it again (tests/test_views.py checks the plan). PostgreSQL can index neither json nor
# date() of a timestamptz: its index carries the plain columns, failed_rules as a payload, and
# hashes the groups from an index-only scan.
LISTING_GROUPS = (func.date(DiagnosisSession.created_at), DiagnosisSession.verdict,
                  cast(DiagnosisSession.failed_rules, Text),
                  cast(DiagnosisSession.groundedness * literal_column("10"), Integer))
Index("ix_session_listing", *LISTING_GROUPS, DiagnosisSession.status, DiagnosisSession.gatekeeper_status,
      DiagnosisSession.composer_findings, DiagnosisSession.provenance, DiagnosisSession.created_at,
      DiagnosisSession.id, DiagnosisSession.groundedness).ddl_if(dialect="sqlite")
Index("ix_session_listing_pg", DiagnosisSession.created_at, DiagnosisSession.verdict, DiagnosisSession.status,
      DiagnosisSession.gatekeeper_status, DiagnosisSession.composer_findings, DiagnosisSession.provenance,
      DiagnosisSession.groundedness, DiagnosisSession.id, postgresql_include=["failed_rules"]).ddl_if(dialect="postgresql")
