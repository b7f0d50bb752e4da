"""Rows of the `job` table: eval runs and batch checks, with the result the asker reads back, how
far a running one has got, and whether a person asked it to stop (migration 0021)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Required, TypeAlias

from sqlalchemy import update

# pydantic validates a job's args against these where it starts; on Python 3.11 only
# typing_extensions' TypedDict carries what it needs for that.
from typing_extensions import TypedDict

from pipeline.core.errors import NotFound
from pipeline.store import Store
from pipeline.store.schema import JobRow

if TYPE_CHECKING:  # the eval and trace modules are imported where their jobs run
    from pipeline.bundles.trace_session import TraceArgs
    from pipeline.eval.history import EvalArgs, EvalJobResult


class CheckArgs(TypedDict):
    """A batch check's job args: the bundles as they were sent."""

    bundles: list[Any]


class CheckJobResult(TypedDict):
    """A batch check's job result: `workbench check --json`'s report of each bundle."""

    reports: list[dict[str, Any]]


class TraceJobResult(TypedDict, total=False):
    """An import_trace job's result: the session the trace is stored as; `duplicate` when it was
    already, else the verdict its import reached."""

    session_id: Required[str]
    duplicate: bool
    verdict: str


JobArgs: TypeAlias = "EvalArgs | CheckArgs | TraceArgs"
JobResult: TypeAlias = "EvalJobResult | CheckJobResult | TraceJobResult"


def _now() -> datetime:
    return datetime.now(UTC)


def create_job(store: Store, kind: str, args: JobArgs, *, owned: bool) -> str:
    job_id = f"j-{uuid.uuid4().hex[:12]}"
    with store.writing() as db:
        db.add(JobRow(id=job_id, kind=kind, args=args, status="queued", heartbeat_at=_now() if owned else None))
    return job_id


def claim_job(store: Store, job_id: str) -> bool:
    """queued -> running (a retry after a transient failure is `failed` -> running)."""
    with store.writing() as db:
        claimed = db.execute(update(JobRow).where(JobRow.id == job_id, JobRow.status.in_(("queued", "failed")),
                                                  JobRow.cancel_requested_at.is_(None))
                             .values(status="running", heartbeat_at=_now(), error=None)
                             .returning(JobRow.id)).first()
    return claimed is not None


def finish_job(store: Store, job_id: str, *, result: JobResult | None = None, error: str | None = None,
               cancelled: bool = False) -> None:
    """End the job; without a `result` it keeps what its progress reports wrote (a failed eval
    run keeps the sessions it made)."""
    stmt = update(JobRow).where(JobRow.id == job_id).values(
        status="failed" if error else "cancelled" if cancelled else "completed", error=error, finished_at=_now())
    if result is not None:
        stmt = stmt.values(result=result)
    with store.writing() as db:
        db.execute(stmt)


def report_progress(store: Store, job_id: str, *, done: int, total: int, result: EvalJobResult,
                    args: EvalArgs | None = None) -> bool:
    """Write how far the job has got and what it has so far (a reaped run keeps it); returns
    whether someone asked it to stop, read in the same transaction."""
    stmt = update(JobRow).where(JobRow.id == job_id).values(progress_done=done, progress_total=total, result=result)
    if args is not None:
        stmt = stmt.values(args=args)
    with store.writing() as db:
        asked = db.execute(stmt.returning(JobRow.cancel_requested_at)).scalar_one_or_none()
    return asked is not None


def request_cancel(store: Store, job_id: str) -> bool:
    """Ask a queued or running job to stop; False when it had already ended. A queued one never
    starts (claim_job refuses it); a running one stops at its next progress report."""
    with store.writing() as db:
        asked = db.execute(update(JobRow).where(JobRow.id == job_id, JobRow.status.in_(("queued", "running")))
                           .values(cancel_requested_at=_now()).returning(JobRow.id)).first()
        # Nobody will run a queued row asked to stop: it ends here, with nothing made.
        db.execute(update(JobRow).where(JobRow.id == job_id, JobRow.status == "queued")
                   .values(status="cancelled", finished_at=_now()))
    return asked is not None


def get_job(store: Store, job_id: str) -> JobRow:
    with store.reading() as db:
        row = db.get(JobRow, job_id)
    if row is None:
        raise NotFound(f"no job {job_id}")
    return row
