"""Reads for jobs and triggers: the session list of `workbench sessions`, alert-group dedup."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import func, select

from pipeline.store.repo import IN_FORCE, Store
from pipeline.store.rows import SessionListing, SessionOutcome, shaped
from pipeline.store.schema import DiagnosisSession, RulesInForce, VerdictInForce

LIST_COLUMNS = ("id", "question", "trigger", "status", "stage", "provenance", "created_at", "rerun_of", "error")


def version_in_force(verdict: str | None, moved: bool, row_version: int | None, at_ask: int | None,
                     judged: int | None) -> int | None:
    """The rule version that gave a session's verdict in force: for a session with a
    verdict_in_force row (`moved`), the row's version, or where it names none the version the
    stored sessions were last re-judged under; else the later of the version it was asked under
    and that one (a session asked after that re-judge was judged by the newer version); None for
    a session without a verdict, or stored before versions were recorded and never re-judged."""
    if verdict is None:
        return None
    if moved:
        return row_version if row_version is not None else judged
    known = [v for v in (at_ask, judged) if v is not None]
    return max(known) if known else None


def session_count(store: Store, *, verdict: str | None = None, status: str | None = None) -> int:
    """How many sessions `session_list` would list without a limit."""
    s = DiagnosisSession
    q = select(func.count()).select_from(s).outerjoin(VerdictInForce, VerdictInForce.session_id == s.id)
    if verdict:
        q = q.where(IN_FORCE.verdict == verdict)
    if status:
        q = q.where(s.status == status)
    with store.reading() as db:
        return int(db.execute(q).scalar() or 0)


def session_list(store: Store, *, verdict: str | None = None, status: str | None = None,
                 limit: int = 20) -> list[SessionListing]:
    """Newest first: what started each session, where it is, how it ended: `verdict` in force,
    `verdict_at_ask`, `rules_version`, the version that gave the verdict in force, and
    `rules_version_at_ask`."""
    s = DiagnosisSession
    q = _listing(*[getattr(s, c) for c in LIST_COLUMNS], IN_FORCE.ungated.label("ungated"),
                 s.ungated.label("ungated_at_ask"))
    if verdict:
        q = q.where(IN_FORCE.verdict == verdict)
    if status:
        q = q.where(s.status == status)
    return [shaped(SessionListing, r) for r in _versions(store, q.order_by(s.created_at.desc()).limit(limit))]


def session_outcome(store: Store, session_id: str) -> SessionOutcome | None:
    """One session's verdict in force and at ask with the rule version of each (keys as in
    session_list); None when no such session is stored."""
    rows = _versions(store, _listing().where(DiagnosisSession.id == session_id))
    return shaped(SessionOutcome, rows[0]) if rows else None


def _listing(*columns: Any) -> Any:
    s = DiagnosisSession
    return (select(*columns, IN_FORCE.verdict.label("verdict"), s.verdict.label("verdict_at_ask"),
                   s.rules_version.label("rules_version_at_ask"),
                   VerdictInForce.session_id.is_not(None).label("moved"),
                   VerdictInForce.rules_version.label("row_version"))
            .outerjoin(VerdictInForce, VerdictInForce.session_id == s.id))


def _versions(store: Store, q: Any) -> list[dict[str, object]]:
    """The rows of `q` with the version that gave the verdict in force in place of what it is
    reckoned from."""
    with store.reading() as db:
        judged = db.execute(select(RulesInForce.judged_version)).scalar()
        rows = db.execute(q).mappings().all()
    out = []
    for r in rows:
        row = {k: v for k, v in r.items() if k not in ("moved", "row_version")}
        row["rules_version"] = version_in_force(r["verdict"], bool(r["moved"]), r["row_version"],
                                                r["rules_version_at_ask"], judged)
        out.append(row)
    return out


def recent_trigger(store: Store, trigger_key: str, since: datetime) -> str | None:
    """The session an identical alert group started after `since`, if any."""
    with store.reading() as db:
        return db.execute(
            select(DiagnosisSession.id)
            .where(DiagnosisSession.trigger_key == trigger_key, DiagnosisSession.created_at >= since,
                   # One that failed or lost its worker does not swallow the resend: that runs anew.
                   DiagnosisSession.status.not_in(("failed", "interrupted")))
            .order_by(DiagnosisSession.created_at.desc()).limit(1)
        ).scalar_one_or_none()
