"""Leases on running sessions: a heartbeat while a process works on one, a reaper for the rest.

docs/architecture.md#store: a session whose worker died is `interrupted`, never `running` for ever. Whoever runs a
session (a `workbench ask`, the app's in-process pool, a `workbench worker`) keeps heartbeat_at
fresh from a background thread, so a long LLM call inside one stage does not look like death.
Any process may reap: a row whose heartbeat is older than the lease lost its worker.
"""

from __future__ import annotations

import threading
import uuid
from contextlib import AbstractContextManager
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import and_, case, func, or_, select, update
from sqlalchemy.orm import Session

from pipeline.core.contracts import Trigger
from pipeline.core.errors import NotFound, StoreError
from pipeline.store.repo import Store
from pipeline.store.schema import DiagnosisSession, JobRow, SessionEventRow
from pipeline.text.redact import mask_known

TERMINAL = ("completed", "failed", "interrupted")


def _now() -> datetime:
    return datetime.now(UTC)


def _writing(store: Store) -> AbstractContextManager[Session]:
    """A transaction that fails at once as a StoreError (a read-only file, a full disk, an outage):
    the lease never waits out an outage as a patient store does, since a missed beat or reaper
    round is simply the next one's."""
    return store.patient(0).writing()


def _reading(store: Store) -> AbstractContextManager[Session]:
    return store.patient(0).reading()


def enqueue_session(store: Store, *, question: str, world: str | None, shape: str, provider: str, model: str,
                    trigger: Trigger, trigger_key: str | None = None, rerun_of: str | None = None,
                    owned: bool) -> str:
    """A `queued` session row. `owned`: the submitting process will run it itself (the in-process
    pool), so it heartbeats the row and the reaper may take it if that process dies. A row queued
    for PostgreSQL workers has no heartbeat: procrastinate holds the job durably until one runs it."""
    sid = f"s-{uuid.uuid4().hex[:12]}"
    with _writing(store) as db:
        db.add(DiagnosisSession(id=sid, question=mask_known(question), world=world, shape=shape, provider=provider,
                                model=model, status="queued", stage="queued", trigger=trigger,
                                trigger_key=trigger_key, rerun_of=rerun_of,
                                heartbeat_at=_now() if owned else None))
    return sid


def claim_session(store: Store, session_id: str, **columns: Any) -> bool:
    """queued -> running, atomically: a job delivered twice runs once."""
    with _writing(store) as db:
        claimed = db.execute(update(DiagnosisSession)
                             .where(DiagnosisSession.id == session_id, DiagnosisSession.status == "queued")
                             .values(status="running", heartbeat_at=_now(), **columns)
                             .returning(DiagnosisSession.id)).first()
    return claimed is not None


def fail_unclaimed(store: Store, session_id: str, error: str) -> None:
    """A queued row whose run failed before it started (settings, backends): `failed`, with why."""
    with _writing(store) as db:
        db.execute(update(DiagnosisSession)
                   .where(DiagnosisSession.id == session_id, DiagnosisSession.status == "queued")
                   .values(status="failed", error=error))


def beat(store: Store, ids: list[str]) -> None:
    """Refresh the lease of these sessions and job rows (ids are unique across both tables)."""
    if not ids:
        return
    with _writing(store) as db:
        for model in (DiagnosisSession, JobRow):
            db.execute(update(model).where(model.id.in_(ids), model.status.in_(("queued", "running")))
                       .values(heartbeat_at=_now()))


def _last_sign(store: Store, beat_at: Any) -> Any:
    """When a row last showed its worker alive. Rows written before heartbeats existed have none:
    their last update stands in for it. No beat can be written while PostgreSQL is down, so a
    server (re)start counts as a beat: a live worker whose beats failed during an outage keeps its
    lease for one more lease after the server is back (docs/architecture.md#store)."""
    if store.engine.dialect.name == "postgresql":
        # A row that never beat (queued for procrastinate workers) stays without a sign.
        return case((beat_at.is_(None), None), else_=func.greatest(beat_at, func.pg_postmaster_start_time()))
    return beat_at


def reap(store: Store, lease_s: float) -> list[str]:
    """Mark every session whose lease lapsed `interrupted`, keeping the stage it reached."""
    cutoff = _now() - timedelta(seconds=lease_s)
    last_sign = _last_sign(store, func.coalesce(DiagnosisSession.heartbeat_at, DiagnosisSession.updated_at))
    lapsed = or_(
        and_(DiagnosisSession.status == "running", last_sign < cutoff),
        and_(DiagnosisSession.status == "queued", _last_sign(store, DiagnosisSession.heartbeat_at) < cutoff),
    )
    with _writing(store) as db:
        rows = db.execute(select(DiagnosisSession.id, DiagnosisSession.stage, last_sign)
                          .where(lapsed).with_for_update(skip_locked=True)).all()
        for sid, stage, seen in rows:
            db.execute(update(DiagnosisSession).where(DiagnosisSession.id == sid).values(
                status="interrupted",
                error=f"its worker stopped during stage {stage} (no heartbeat since {seen:%Y-%m-%d %H:%M:%S}); "
                      "run it again with `workbench rerun`"))
        db.execute(update(JobRow).where(JobRow.status.in_(("queued", "running")),
                                        _last_sign(store, JobRow.heartbeat_at) < cutoff)
                   .values(status="interrupted", error="its worker stopped", finished_at=_now()))
    return [r[0] for r in rows]


def live(store: Store, ids: list[str], lease_s: float) -> set[str]:
    """Which of these sessions and job rows are queued or running with their lease still held."""
    cutoff = _now() - timedelta(seconds=lease_s)
    found: set[str] = set()
    with _reading(store) as db:
        for model in (DiagnosisSession, JobRow):
            found.update(db.execute(select(model.id).where(
                model.id.in_(ids), model.status.in_(("queued", "running")),
                _last_sign(store, model.heartbeat_at) >= cutoff)).scalars())
    return found


def ended(store: Store, ids: list[str]) -> set[str]:
    """Which of these sessions and job rows have ended with no rerun of theirs queued or running:
    a queue job still `doing` for one lost its worker's last write to the queue."""
    with _reading(store) as db:
        rerunning = select(DiagnosisSession.rerun_of).where(DiagnosisSession.rerun_of.in_(ids),
                                                             DiagnosisSession.status.in_(("queued", "running")))
        found = set(db.execute(select(DiagnosisSession.id).where(
            DiagnosisSession.id.in_(ids), DiagnosisSession.status.in_(TERMINAL),
            DiagnosisSession.id.not_in(rerunning))).scalars())
        found.update(db.execute(select(JobRow.id).where(
            JobRow.id.in_(ids), JobRow.status.not_in(("queued", "running")))).scalars())
    return found


def rerun_session(store: Store, session_id: str, *, owned: bool) -> str:
    """A new queued session asking the same question with the same trigger (and group key); the
    old row stays as it ended (its partial audit chain is evidence of what happened)."""
    with _writing(store) as db:
        return _rerun(db, _ended(db, session_id), owned=owned)


def retry_session(store: Store, session_id: str) -> str | None:
    """The queue's retry of a failed or interrupted session: its rerun, made at most once. A job
    retried twice (procrastinate's retry and the stalled-job reaper's after a database outage)
    finds the rerun the other made and returns None, so one alert group stays one session."""
    with _writing(store) as db:
        old = _ended(db, session_id)
        if db.execute(select(DiagnosisSession.id).where(DiagnosisSession.rerun_of == session_id)).first():
            return None
        return _rerun(db, old, owned=True)


def _ended(db: Session, session_id: str) -> DiagnosisSession:
    # The row lock serialises two retries of one job on PostgreSQL; SQLite has one writer.
    old = db.execute(select(DiagnosisSession).where(DiagnosisSession.id == session_id)
                     .with_for_update()).scalar_one_or_none()
    if old is None:
        raise NotFound(f"no session {session_id}")
    if old.status not in ("failed", "interrupted"):
        raise StoreError(f"session {session_id} is {old.status}: only a failed or interrupted session runs again")
    return old


def _rerun(db: Session, old: DiagnosisSession, *, owned: bool) -> str:
    sid = f"s-{uuid.uuid4().hex[:12]}"
    db.add(DiagnosisSession(id=sid, question=old.question, world=old.world, shape=old.shape, provider=old.provider,
                            model=old.model, status="queued", stage="queued", trigger=old.trigger or {"kind": "manual"},
                            trigger_key=old.trigger_key, rerun_of=old.id, heartbeat_at=_now() if owned else None))
    return sid


def add_event(store: Store, session_id: str, stage: str, data: dict[str, Any]) -> None:
    with _writing(store) as db:
        db.add(SessionEventRow(session_id=session_id, stage=stage, data=data))


def events(store: Store, session_id: str, after: int = 0) -> list[tuple[int, str, dict[str, Any]]]:
    """(event id, stage, data) of `session_id` after event id `after`, oldest first."""
    with _reading(store) as db:
        rows = db.execute(select(SessionEventRow.id, SessionEventRow.stage, SessionEventRow.data)
                          .where(SessionEventRow.session_id == session_id, SessionEventRow.id > after)
                          .order_by(SessionEventRow.id)).all()
    return [(r[0], r[1], r[2]) for r in rows]


class Heartbeat:
    """Refreshes heartbeat_at of the sessions and jobs it holds every `interval_s` from a daemon thread."""

    def __init__(self, store: Store, interval_s: float, session_ids: list[str] | None = None):
        self.store, self.interval_s = store, interval_s
        self._ids: set[str] = set(session_ids or [])
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="workbench-heartbeat", daemon=True)

    def hold(self, session_id: str) -> None:
        with self._lock:
            self._ids.add(session_id)

    def release(self, session_id: str) -> None:
        with self._lock:
            self._ids.discard(session_id)

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            with self._lock:
                ids = sorted(self._ids)
            try:
                beat(self.store, ids)
            except Exception:  # noqa: BLE001 - a missed beat must not kill the run; the lease absorbs a few
                continue

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=self.interval_s + 5)
