"""Rows of the `job` table: eval runs and batch checks, with the result the asker reads back."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import update
from sqlalchemy.orm import Session

from pipeline.core.errors import NotFound
from pipeline.store import Store
from pipeline.store.schema import JobRow


def _now() -> datetime:
    return datetime.now(UTC)


def create_job(store: Store, kind: str, args: dict[str, Any], *, owned: bool) -> str:
    job_id = f"j-{uuid.uuid4().hex[:12]}"
    with Session(store.engine) as db, db.begin():
        db.add(JobRow(id=job_id, kind=kind, args=args, status="queued", heartbeat_at=_now() if owned else None))
    return job_id


def claim_job(store: Store, job_id: str) -> bool:
    """queued -> running (a retry after a transient failure is `failed` -> running)."""
    with Session(store.engine) as db, db.begin():
        claimed = db.execute(update(JobRow).where(JobRow.id == job_id, JobRow.status.in_(("queued", "failed")))
                             .values(status="running", heartbeat_at=_now(), error=None)
                             .returning(JobRow.id)).first()
    return claimed is not None


def finish_job(store: Store, job_id: str, *, result: dict[str, Any] | None = None, error: str | None = None) -> None:
    with Session(store.engine) as db, db.begin():
        db.execute(update(JobRow).where(JobRow.id == job_id).values(
            status="failed" if error else "completed", result=result, error=error, finished_at=_now()))


def get_job(store: Store, job_id: str) -> dict[str, Any]:
    with Session(store.engine) as db:
        row = db.get(JobRow, job_id)
        if row is None:
            raise NotFound(f"no job {job_id}")
        return {c.name: getattr(row, c.name) for c in JobRow.__table__.columns}
