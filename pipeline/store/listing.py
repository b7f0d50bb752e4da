"""Reads for jobs and triggers: the session list of `workbench sessions`, alert-group dedup."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from pipeline.store.repo import Store
from pipeline.store.schema import DiagnosisSession

LIST_COLUMNS = ("id", "question", "trigger", "status", "stage", "verdict", "ungated", "provenance", "created_at",
                "rerun_of", "error")


def session_list(store: Store, *, verdict: str | None = None, status: str | None = None,
                 limit: int = 20) -> list[dict[str, Any]]:
    """Newest first: what started each session, where it is, how it ended."""
    q = select(*[getattr(DiagnosisSession, c) for c in LIST_COLUMNS])
    if verdict:
        q = q.where(DiagnosisSession.verdict == verdict)
    if status:
        q = q.where(DiagnosisSession.status == status)
    with Session(store.engine) as db:
        rows = db.execute(q.order_by(DiagnosisSession.created_at.desc()).limit(limit)).mappings().all()
    return [dict(r) for r in rows]


def recent_trigger(store: Store, trigger_key: str, since: datetime) -> str | None:
    """The session an identical alert group started after `since`, if any."""
    with Session(store.engine) as db:
        return db.execute(
            select(DiagnosisSession.id)
            .where(DiagnosisSession.trigger_key == trigger_key, DiagnosisSession.created_at >= since,
                   # One that failed or lost its worker does not swallow the resend: that runs anew.
                   DiagnosisSession.status.not_in(("failed", "interrupted")))
            .order_by(DiagnosisSession.created_at.desc()).limit(1)
        ).scalar_one_or_none()
