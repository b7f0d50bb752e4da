"""The store API: every read and write of sessions, invocations, LLM calls, reviews and rules."""

from __future__ import annotations

import contextlib
import copy
import fcntl
import hashlib
import os
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import JSON, SQLColumnExpression, Text, cast, func, insert, literal, or_, select, text, update
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import IntegrityError, SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from pipeline.core.contracts import LlmCallRecord, ToolArguments, ToolInvocation
from pipeline.core.errors import StoreError
from pipeline.store.engine import database_fault, display_url, failure_reason, open_engine, sqlite_path
from pipeline.store.migrate import ensure_current
from pipeline.store.rows import (
    InvocationMetaColumns,
    ListedSession,
    LlmCallColumns,
    ReviewColumns,
    RuleVersionColumns,
    SessionColumns,
    shaped,
)
from pipeline.store.schema import (
    STORE_RESERVE,
    Base,
    DiagnosisSession,
    LlmCallRow,
    ReviewRow,
    RulesInForce,
    RuleVersionRow,
    ToolInvocationRow,
    VerdictInForce,
)
from pipeline.text.redact import mask_known

PREVIEW_CHARS = 2000
# Enough for a failed session's last row update and its log frames (a few pages).
RESERVE_BYTES = 1 << 20
# A store_reserve row takes 36 bytes of a page (its header, its bigint, its pointer): this many fill
# a little over RESERVE_BYTES.
_Shape = TypeVar("_Shape")
_RESERVE_ROWS = RESERVE_BYTES // 32
# Any fixed 64-bit number, the same in every process: the key of the lock of whoever fills the reserve.
_RESERVE_LOCK_KEY = 0x65766964_72737276


class StaleRuleVersion(StoreError):
    """Another tuner applied a rule version after the one this edit started from."""


class SessionIdTaken(StoreError):
    """A new session's id is already in the store (two imports of one bundle raced for it)."""


@dataclass
class SessionFilter:
    verdicts: list[str] = field(default_factory=list)
    gatekeeper_statuses: list[str] = field(default_factory=list)
    rule_id: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    service: str | None = None
    reviewed: bool | None = None
    text: str | None = None
    statuses: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Outcome:
    """The verdict, gatekeeper status and failed rules a query reads: at ask (the session's own
    columns), in force (its verdict_in_force row where it has one; migration 0011), or only the
    rows (MOVED: sessions without one are left out)."""

    verdict: SQLColumnExpression[str | None]
    gatekeeper_status: SQLColumnExpression[str | None]
    failed_rules: SQLColumnExpression[list[Any]]
    # failed_rules as text, from the listing index's own expression where the session's column is
    # read: SQLite takes it off the index, where the JSON column would fetch each session's row.
    failed_text: SQLColumnExpression[str]
    joined: bool  # reads verdict_in_force
    ungated: SQLColumnExpression[bool]


AT_ASK = Outcome(DiagnosisSession.verdict, DiagnosisSession.gatekeeper_status, DiagnosisSession.failed_rules,
                 cast(DiagnosisSession.failed_rules, Text), False, DiagnosisSession.ungated)
IN_FORCE = Outcome(func.coalesce(VerdictInForce.verdict, DiagnosisSession.verdict),
                   func.coalesce(VerdictInForce.gatekeeper_status, DiagnosisSession.gatekeeper_status),
                   func.coalesce(VerdictInForce.failed_rules, DiagnosisSession.failed_rules, type_=JSON),
                   func.coalesce(cast(VerdictInForce.failed_rules, Text), cast(DiagnosisSession.failed_rules, Text)),
                   True, func.coalesce(VerdictInForce.ungated, DiagnosisSession.ungated))
MOVED = Outcome(VerdictInForce.verdict, VerdictInForce.gatekeeper_status, VerdictInForce.failed_rules,
                cast(VerdictInForce.failed_rules, Text), True, VerdictInForce.ungated)
# `id || ''`: the join can only be driven from the session side, so SQLite scans sessions by an
# index (the listing index, for counts) and looks their rows up; driven from verdict_in_force it
# would look each session up by id and read its whole row with its audit record.
_IN_FORCE_JOIN = VerdictInForce.session_id == DiagnosisSession.id + literal("")


def _row_dict(row: Base) -> dict[str, object]:
    return {c.name: getattr(row, c.name) for c in row.__table__.columns}


def _output_hash(output: str) -> str | None:
    return hashlib.sha256(output.encode("utf-8", "surrogatepass")).hexdigest() if output else None


def new_session_id() -> str:
    """A session id of the workbench's own: every session run here or imported gets one."""
    return f"s-{uuid.uuid4().hex[:12]}"


def composer_findings(audit: Any) -> bool:
    """Whether an audit record holds composer findings: claims the composer-input filter kept from
    the answer, or a composer guard that fell back to the fixed template. Stored beside the record
    (diagnosis_session.composer_findings) so the review queue never reads the JSON; migration 0007
    backfills it with the same test in SQL."""
    ev = audit.get("verifier_evaluation") if isinstance(audit, dict) else None
    if not isinstance(ev, dict):
        return False
    guard = ev.get("composer_guard")
    return bool(isinstance(guard, dict) and guard.get("used_template")) or bool(ev.get("composer_filtered"))


def _invocation_row(*, output: str, output_of: int | None = None, **columns: Any) -> ToolInvocationRow:
    """A row for `output`; with `output_of` (a row of the same session holding the same text) the
    text is not stored again (migration 0004)."""
    return ToolInvocationRow(output="" if output_of else output, output_of=output_of,
                             output_sha256=_output_hash(output), output_preview=output[:PREVIEW_CHARS],
                             output_bytes=len(output.encode("utf-8")), **columns)


def _invocation(row: ToolInvocationRow, output: str | None = None) -> ToolInvocation:
    """`output` is the text of the row named by row.output_of, when it is set."""
    return ToolInvocation(
        id=row.id,
        session_id=row.session_id,
        round=row.round,
        tool_name=row.tool_name,
        model_tool_name=row.model_tool_name,
        arguments=row.arguments or {},
        status=row.status,  # type: ignore[arg-type]
        output=row.output if output is None else output,
        error=row.error,
        latency_ms=row.latency_ms,
    )


def _file_identity(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


class Store:
    """Opening a Store brings its schema to the head revision (pipeline/store/migrate.py).
    Every database failure surfaces as a StoreError naming the database, never a driver error."""

    def __init__(self, url: str):
        self.url = url
        self.engine: Engine = open_engine(url)
        self.revision = ensure_current(self.engine)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        # An open SQLite connection keeps writing to a database file deleted or replaced under
        # it, so a session would finish "stored" nowhere; writes compare the file to this.
        self._file = sqlite_path(str(self.engine.url))
        self._identity = _file_identity(self._file) if self._file else None
        self._retries, self._wait_s, self._until_s = 0, 2.0, 0.0
        self._reserve = self._file.with_name(self._file.name + "-reserve") if self._file else None
        self._keep_reserve()

    def _keep_reserve(self) -> None:
        """Space held back beside a SQLite file (in a table on PostgreSQL), given up when the disk
        is full so that a session can still record why it failed (else its row stayed `running`
        until reaped as a stopped worker); made again by the next open that finds room, or finds
        it short."""
        if self.engine.dialect.name == "postgresql":
            self._keep_table_reserve()
        if self._reserve is None:
            return
        try:
            if self._reserve.stat().st_size >= RESERVE_BYTES:
                return
        except FileNotFoundError:
            pass
        except OSError:
            return
        # One process at a time writes it (a lock on the directory, let go when the process ends,
        # killed included; the others go on without waiting), whole, under its own name, then
        # renamed into place: a store opened by several processes at once on a nearly full disk
        # takes 1 MB, not 1 MB each, and nobody sees, counts on or gives up a part-written reserve.
        try:
            folder = os.open(self._reserve.parent, os.O_RDONLY)
        except OSError:
            return
        part = self._reserve.with_name(f"{self._reserve.name}.{os.getpid()}")
        try:
            fcntl.flock(folder, fcntl.LOCK_EX | fcntl.LOCK_NB)
            with open(part, "wb") as fh:
                fh.write(bytes(RESERVE_BYTES))  # written, not truncated: a sparse file holds no space
            os.replace(part, self._reserve)
        except OSError:
            pass  # another process is making it, no room, or a read-only directory: no reserve from here
        finally:
            with contextlib.suppress(OSError):
                part.unlink(missing_ok=True)
            os.close(folder)  # lets go of the lock

    def _keep_table_reserve(self) -> None:
        """PostgreSQL's reserve: store_reserve (migration 0022), in the tablespace of the tables it
        stands in for, filled by one process at a time (the others go on without waiting)."""
        size = func.pg_relation_size(STORE_RESERVE.name)
        try:
            with self.engine.begin() as conn:
                if conn.execute(select(size)).scalar_one() >= RESERVE_BYTES or not conn.execute(
                        select(func.pg_try_advisory_xact_lock(_RESERVE_LOCK_KEY))).scalar_one():
                    return
                if conn.execute(select(size)).scalar_one() >= RESERVE_BYTES:
                    return  # filled by another process since the first look
                # Into a new file (TRUNCATE), which a fill that finds no room takes with it when it
                # rolls back: no part of a reserve is left holding space nobody counts on.
                conn.execute(text(f"TRUNCATE {STORE_RESERVE.name}"))
                conn.execute(insert(STORE_RESERVE).from_select(
                    ["n"], select(func.generate_series(1, _RESERVE_ROWS))))
        except SQLAlchemyError:
            pass  # no room, a user who may not write, a standby: no reserve from here

    def release_reserve(self) -> bool:
        """Free the reserved space for a last write on a full disk; False when there was none."""
        if self.engine.dialect.name == "postgresql":
            try:
                with self.engine.begin() as conn:
                    if not conn.execute(select(func.pg_relation_size(STORE_RESERVE.name))).scalar_one():
                        return False
                    # Its file is cut to nothing at commit; TRUNCATE itself grows no table of ours.
                    conn.execute(text(f"TRUNCATE {STORE_RESERVE.name}"))
            except SQLAlchemyError:
                return False
            return True
        if self._reserve is None:
            return False
        try:
            self._reserve.unlink()
        except OSError:
            return False
        return True

    def patient(self, retries: int, *, wait_s: float = 2.0, until_s: float = 0.0) -> Store:
        """This store, waiting out a database that is unreachable or busy: a transaction that cannot
        start is tried again `retries` times, `wait_s`, 2x, 4x ... apart (at most 30 s), or for
        `until_s` seconds when that is longer. A full disk is never waited for."""
        other = copy.copy(self)
        other._retries, other._wait_s, other._until_s = retries, wait_s, until_s
        return other

    def _begin(self) -> Session:
        """A session in a transaction with its connection checked out, waiting as `patient` says."""
        started, attempt = time.monotonic(), 0
        while True:
            db = self._sessions()
            try:
                db.connection()
                return db
            except SQLAlchemyError as exc:
                db.close()
                waited = time.monotonic() - started
                if database_fault(exc) not in ("unreachable", "busy") or (
                        attempt >= self._retries and waited >= self._until_s):
                    raise
                time.sleep(min(30.0, self._wait_s * 2 ** min(attempt, 10)))
                attempt += 1

    def _failure(self, doing: str, exc: SQLAlchemyError) -> StoreError:
        return StoreError(f"cannot {doing} the database {display_url(self.url)}: {failure_reason(exc, self.url)}")

    @contextmanager
    def reading(self) -> Iterator[Session]:
        try:
            with self._begin() as db:
                yield db
        except SQLAlchemyError as exc:
            raise self._failure("read", exc) from exc

    @contextmanager
    def writing(self) -> Iterator[Session]:
        """One transaction; committed when the block ends."""
        if self._file is not None and _file_identity(self._file) != self._identity:
            raise StoreError(f"the database file {self._file} was deleted or replaced while in use; "
                             "nothing more is written to it")
        try:
            with self._begin() as db:
                yield db
                db.commit()
        except SQLAlchemyError as exc:
            raise self._failure("write to", exc) from exc

    @contextmanager
    def connected(self, *, write: bool = False) -> Iterator[Connection]:
        """A Core connection in one transaction, committed at the end when `write`: for code that
        speaks SQL rather than the ORM, with its failures StoreErrors as `reading`/`writing` give."""
        with self.writing() if write else self.reading() as db:
            yield db.connection()

    # --- sessions ---------------------------------------------------------------------

    def create_session(self, *, question: str, world: str | None, shape: str, provider: str, model: str,
                       session_id: str | None = None, created_at: datetime | None = None) -> str:
        sid = session_id or new_session_id()
        with self.writing() as db:
            row = DiagnosisSession(id=sid, question=mask_known(question), world=world, shape=shape, provider=provider,
                                   model=model, status="running", stage="created")
            if created_at is not None:
                row.created_at = created_at
            db.add(row)
        return sid

    def update_session(self, session_id: str, **values: Any) -> None:
        """StoreError when the row is gone: a session must not finish as if it were stored."""
        if "self_evaluation" in values:
            values["composer_findings"] = composer_findings(values["self_evaluation"])
        with self.writing() as db:
            stmt = update(DiagnosisSession).where(DiagnosisSession.id == session_id).values(**values)
            if db.connection().execute(stmt).rowcount == 0:
                raise StoreError(f"session {session_id} is no longer in the database {display_url(self.url)}")

    def quarantine(self, session_id: str, reason: str) -> None:
        """Take a session whose stored record breaks a reader out of replay and re-judge (which
        read completed sessions only) and into the review queue, saying why."""
        self.update_session(session_id, status="failed", error=f"quarantined: {reason}")

    def get_session(self, session_id: str) -> SessionColumns | None:
        with self.reading() as db:
            row = db.get(DiagnosisSession, session_id)
            return shaped(SessionColumns, _row_dict(row)) if row else None

    def filtered_query(self, f: SessionFilter, outcome: Outcome = AT_ASK) -> Any:
        """The SELECT of sessions matching `f`: the one definition lists, charts and exports share.
        A joined outcome matches that outcome and adds it as verdict_in_force, gatekeeper_in_force,
        failed_in_force and ungated_in_force."""
        q = select(DiagnosisSession)
        if outcome.joined:
            q = q.outerjoin(VerdictInForce, _IN_FORCE_JOIN).add_columns(
                outcome.verdict.label("verdict_in_force"), outcome.gatekeeper_status.label("gatekeeper_in_force"),
                outcome.failed_rules.label("failed_in_force"), outcome.ungated.label("ungated_in_force"))
        if f.verdicts:
            q = q.where(outcome.verdict.in_(f.verdicts))
        if f.statuses:
            q = q.where(DiagnosisSession.status.in_(f.statuses))
        if f.gatekeeper_statuses:
            q = q.where(outcome.gatekeeper_status.in_(f.gatekeeper_statuses))
        if f.since:
            q = q.where(DiagnosisSession.created_at >= f.since)
        if f.until:
            q = q.where(DiagnosisSession.created_at <= f.until)
        if f.service:
            q = q.where(DiagnosisSession.services.contains(f.service))
        if f.text:
            q = q.where(or_(DiagnosisSession.question.contains(f.text), DiagnosisSession.id.contains(f.text)))
        if f.rule_id:
            # failed_rules is a JSON list; a text match on its serialised form works on SQLite and PostgreSQL.
            q = q.where(outcome.failed_text.contains(f'"{f.rule_id}"'))
        if f.reviewed is not None:
            reviewed = select(ReviewRow.session_id).where(ReviewRow.claim_id.is_(None))
            q = q.where(DiagnosisSession.id.in_(reviewed) if f.reviewed else DiagnosisSession.id.not_in(reviewed))
        return q

    def list_sessions(self, f: SessionFilter | None = None, *, limit: int = 50, offset: int = 0
                      ) -> tuple[list[ListedSession], int]:
        f = f or SessionFilter()
        base = self.filtered_query(f)
        cols = [DiagnosisSession.id, DiagnosisSession.created_at, DiagnosisSession.question,
                DiagnosisSession.status, DiagnosisSession.verdict, DiagnosisSession.gatekeeper_status,
                DiagnosisSession.failed_rules, DiagnosisSession.groundedness, DiagnosisSession.services,
                DiagnosisSession.provider, DiagnosisSession.shape, DiagnosisSession.ungated,
                DiagnosisSession.provenance]
        with self.reading() as db:
            total = db.execute(select(func.count()).select_from(base.subquery())).scalar_one()
            sub = base.subquery()
            rows = db.execute(
                select(*[sub.c[c.key] for c in cols]).order_by(sub.c.created_at.desc()).limit(limit).offset(offset)
            ).mappings().all()
            ids = [r["id"] for r in rows]
            labels = dict(
                db.execute(
                    select(ReviewRow.session_id, ReviewRow.label)
                    .where(ReviewRow.session_id.in_(ids), ReviewRow.claim_id.is_(None))
                    .order_by(ReviewRow.created_at)
                ).all()
            )
        return [shaped(ListedSession, {**r, "review_label": labels.get(r["id"])}) for r in rows], total

    def session_ids(self) -> list[str]:
        with self.reading() as db:
            return list(db.execute(select(DiagnosisSession.id).order_by(DiagnosisSession.created_at)).scalars())

    # --- tool invocations --------------------------------------------------------------

    def add_invocation(self, *, session_id: str, round: int, tool_name: str, model_tool_name: str,
                       arguments: ToolArguments, status: str, output: str, error: str | None,
                       latency_ms: float, stored_cut_bytes: int = 0) -> ToolInvocation:
        first = self._first_with_output(session_id, output)
        with self.writing() as db:
            row = _invocation_row(
                session_id=session_id, round=round, tool_name=tool_name, model_tool_name=model_tool_name,
                arguments=arguments, status=status, output=output, stored_cut_bytes=stored_cut_bytes, error=error,
                latency_ms=latency_ms, output_of=first,
            )
            db.add(row)
            db.flush()
            return _invocation(row, output)

    def _first_with_output(self, session_id: str, output: str) -> int | None:
        """The row of this session already holding `output`. Read outside the write transaction:
        on SQLite a read-then-write transaction fails at once when another writer got in between."""
        digest = _output_hash(output)
        if digest is None:
            return None
        with self.reading() as db:
            return db.execute(
                select(ToolInvocationRow.id).where(ToolInvocationRow.session_id == session_id,
                                                   ToolInvocationRow.output_sha256 == digest,
                                                   ToolInvocationRow.output_of.is_(None)).limit(1)
            ).scalar()

    def add_whole_session(self, *, session: dict[str, Any], invocations: list[dict[str, Any]],
                          llm_calls: list[LlmCallRecord], finish: Callable[[list[int]], dict[str, Any]]) -> None:
        """A whole session in one transaction (an import): stored entirely or not at all.
        `finish` gets the new invocation ids, in order, and returns the session's other columns."""
        with self.writing() as db:
            row = DiagnosisSession(**session)
            db.add(row)
            try:
                db.flush()
            except IntegrityError as exc:
                raise SessionIdTaken(f"session id {session['id']} is already taken") from exc
            rows = [_invocation_row(session_id=row.id, **inv) for inv in invocations]
            db.add_all(rows)
            db.flush()
            first: dict[str, ToolInvocationRow] = {}
            for inv_row in rows:  # each output once per session, as add_invocation does
                if inv_row.output_sha256 is None:
                    continue
                held = first.setdefault(inv_row.output_sha256, inv_row)
                if held is not inv_row:
                    inv_row.output, inv_row.output_of = "", held.id
            for key, value in finish([r.id for r in rows]).items():
                setattr(row, key, value)
            row.composer_findings = composer_findings(row.self_evaluation)
            db.add_all([LlmCallRow(session_id=row.id, **rec.model_dump()) for rec in llm_calls])

    def invocation(self, invocation_id: int) -> ToolInvocation | None:
        with self.reading() as db:
            row = db.get(ToolInvocationRow, invocation_id)
            if row is None:
                return None
            source = db.get(ToolInvocationRow, row.output_of) if row.output_of else None
            return _invocation(row, source.output if source else None)

    def invocations(self, session_id: str) -> list[ToolInvocation]:
        with self.reading() as db:
            rows = db.execute(
                select(ToolInvocationRow).where(ToolInvocationRow.session_id == session_id)
                .order_by(ToolInvocationRow.id)
            ).scalars().all()
            texts = {r.id: r.output for r in rows}
            return [_invocation(r, texts.get(r.output_of, "") if r.output_of else None) for r in rows]

    def invocation_meta(self, session_id: str) -> list[InvocationMetaColumns]:
        """Invocation rows without the full output (for lists and the Trace page's index)."""
        with self.reading() as db:
            rows = db.execute(
                select(ToolInvocationRow.id, ToolInvocationRow.round, ToolInvocationRow.tool_name,
                       ToolInvocationRow.model_tool_name, ToolInvocationRow.arguments, ToolInvocationRow.status,
                       ToolInvocationRow.error, ToolInvocationRow.latency_ms, ToolInvocationRow.output_bytes,
                       ToolInvocationRow.stored_cut_bytes, ToolInvocationRow.output_preview)
                .where(ToolInvocationRow.session_id == session_id).order_by(ToolInvocationRow.id)
            ).mappings().all()
            return [shaped(InvocationMetaColumns, dict(r)) for r in rows]

    # --- LLM calls ----------------------------------------------------------------------

    def add_llm_call(self, session_id: str, rec: LlmCallRecord) -> None:
        with self.writing() as db:
            db.add(LlmCallRow(session_id=session_id, **rec.model_dump()))

    def llm_calls(self, session_id: str) -> list[LlmCallColumns]:
        return self._of_session(LlmCallColumns, LlmCallRow, LlmCallRow.id, session_id)

    def _of_session(self, shape: type[_Shape], table: type[LlmCallRow | ReviewRow], order: SQLColumnExpression[Any],
                    session_id: str) -> list[_Shape]:
        """One session's rows of a per-session table, in `order`, as their shape."""
        with self.reading() as db:
            rows = db.execute(select(table).where(table.session_id == session_id).order_by(order)).scalars().all()
            return [shaped(shape, _row_dict(r)) for r in rows]

    # --- reviews ------------------------------------------------------------------------

    def add_review(self, *, session_id: str, label: str, reviewer: str, note: str = "",
                   claim_id: str | None = None) -> None:
        if not reviewer.strip():
            raise ValueError("a review needs the reviewer's name")
        with self.writing() as db:
            # A token pasted into a note is kept nowhere in clear (law 9).
            db.add(ReviewRow(session_id=session_id, claim_id=claim_id, label=mask_known(label), note=mask_known(note),
                             reviewer=reviewer))

    def reviews(self, session_id: str) -> list[ReviewColumns]:
        return self._of_session(ReviewColumns, ReviewRow, ReviewRow.created_at, session_id)

    # --- rule versions ------------------------------------------------------------------

    def rules_version(self) -> int:
        """The id of the rule version in force; 0: the shipped rules/ directory."""
        with self.reading() as db:
            return int(db.execute(select(RulesInForce.version)).scalar_one())

    def active_rule_version(self) -> RuleVersionColumns | None:
        """The applied version in force, None while the shipped rules are."""
        with self.reading() as db:
            row = db.execute(select(RuleVersionRow).join(RulesInForce, RulesInForce.version == RuleVersionRow.id)
                             ).scalar_one_or_none()
            return shaped(RuleVersionColumns, _row_dict(row) | {"active": True}) if row else None

    def rule_versions(self) -> list[RuleVersionColumns]:
        """Applied versions newest first, each with whether it is the one in force."""
        with self.reading() as db:
            in_force = db.execute(select(RulesInForce.version)).scalar_one()
            rows = db.execute(select(RuleVersionRow).order_by(RuleVersionRow.id.desc())).scalars().all()
            return [shaped(RuleVersionColumns, _row_dict(r) | {"active": r.id == in_force}) for r in rows]

    def apply_rule_version(self, *, index_yaml: str, metadata_yaml: str, author: str, comment: str,
                           based_on: int | None) -> int:
        """Store a version and put it in force, provided the one in force is still `based_on`
        (None or 0: the shipped rules); else StaleRuleVersion names the version applied meanwhile."""
        based = based_on or 0
        with self.writing() as db:
            # The insert comes first: on SQLite it takes the write lock before anything is read,
            # so the pointer read below is the latest one.
            row = RuleVersionRow(index_yaml=index_yaml, metadata_yaml=metadata_yaml, author=author,
                                 comment=comment, parent_id=based or None)
            db.add(row)
            db.flush()
            moved = db.connection().execute(update(RulesInForce).where(RulesInForce.id == 1, RulesInForce.version == based)
                               .values(version=row.id)).rowcount
            if moved != 1:
                now = db.execute(select(RulesInForce.version)).scalar_one()
                raise StaleRuleVersion(
                    f"version {now} was applied meanwhile (you started from version {based}); "
                    "reload, review the difference and apply again")
            return row.id
