"""Rows of the `job` table: eval runs and batch checks, with the result the asker reads back, how
far a running one has got, and whether a person asked it to stop (migration 0021)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import update

from pipeline.core.errors import NotFound
from pipeline.store import Store
from pipeline.store.schema import JobRow


def _now() -> datetime:
    return datetime.now(UTC)


def create_job(store: Store, kind: str, args: dict[str, Any], *, owned: bool) -> str:
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


def finish_job(store: Store, job_id: str, *, result: dict[str, Any] | None = None, error: str | None = None,
               cancelled: bool = False) -> None:
    """End the job; without a `result` it keeps what its progress reports wrote (a failed eval
    run keeps the sessions it made)."""
    values: dict[str, Any] = {"status": "failed" if error else "cancelled" if cancelled else "completed",
                              "error": error, "finished_at": _now()}
    if result is not None:
        values["result"] = result
    with store.writing() as db:
        db.execute(update(JobRow).where(JobRow.id == job_id).values(**values))


def report_progress(store: Store, job_id: str, *, done: int, total: int, result: dict[str, Any],
                    args: dict[str, Any] | None = None) -> bool:
    """Write how far the job has got and what it has so far (a reaped run keeps it); returns
    whether someone asked it to stop, read in the same transaction."""
    values: dict[str, Any] = {"progress_done": done, "progress_total": total, "result": result}
    if args is not None:
        values["args"] = args
    with store.writing() as db:
        asked = db.execute(update(JobRow).where(JobRow.id == job_id).values(**values)
                           .returning(JobRow.cancel_requested_at)).scalar_one_or_none()
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


def get_job(store: Store, job_id: str) -> dict[str, Any]:
    with store.reading() as db:
        row = db.get(JobRow, job_id)
        if row is None:
            raise NotFound(f"no job {job_id}")
        return {c.name: getattr(row, c.name) for c in JobRow.__table__.columns}
