"""The review queue: which stored sessions need a person, listed and charted in SQL.

Shared by the Sessions page, its exports and the Rules page's preview (which leaves eval runs
out). "Needs a person" is LOW_CONFID, REJECT, a failed or interrupted run, and a PASS with
findings (gatekeeper warnings, claims kept from the answer, a composer guard fallback).
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from sqlalchemy import Integer, Text, cast, func, or_, select

from pipeline.record import SessionRow
from pipeline.store import SessionFilter, Store
from pipeline.store.schema import DiagnosisSession, ReviewRow

EVAL_LABEL = "eval_fixture"  # the review label pipeline/eval/runner.py gives every eval run


@dataclass(frozen=True)
class QueueFilter:
    """The Sessions page's filter: the store's SessionFilter plus what "needs a person" means."""

    base: SessionFilter = field(default_factory=SessionFilter)
    # LOW_CONFID, REJECT, failed runs, and PASS with findings (gatekeeper warnings, claims kept
    # from the answer, a composer guard fallback to the fixed template).
    needs_person: bool = True
    # Ids of PASS sessions with findings, from FindingsIndex: the only part of "needs a person"
    # that lives in the stored JSON rather than in indexed columns.
    pass_findings: frozenset[str] = frozenset()
    include_eval: bool = False
    reviewed: bool | None = False  # by a person; the eval label is no review


def queue_query(store: Store, q: QueueFilter) -> Any:
    """The SELECT of the queue: store.filtered_query narrowed by the queue's own conditions."""
    s = DiagnosisSession
    query = store.filtered_query(replace(q.base, reviewed=None))
    if q.needs_person:
        query = query.where(or_(
            s.verdict.in_(("LOW_CONFID", "REJECT")),
            s.status.in_(("failed", "interrupted")),
            s.gatekeeper_status.in_(("warn", "fail")),
            s.id.in_(q.pass_findings),
        ))
    if not q.include_eval:
        query = query.where(s.id.not_in(select(ReviewRow.session_id).where(ReviewRow.label == EVAL_LABEL)))
    if q.reviewed is not None:
        people = select(ReviewRow.session_id).where(ReviewRow.claim_id.is_(None), ReviewRow.label != EVAL_LABEL)
        query = query.where(s.id.in_(people) if q.reviewed else s.id.not_in(people))
    return query


_LIST_COLUMNS = ("id", "created_at", "question", "status", "verdict", "gatekeeper_status", "failed_rules",
                 "groundedness", "services", "provider", "shape")


def queue_page(store: Store, q: QueueFilter, *, limit: int = 50, offset: int = 0) -> tuple[list[SessionRow], int]:
    """One page of the queue, newest first, with each session's latest person's label."""
    sub = queue_query(store, q).subquery()
    with store.engine.connect() as conn:
        total = conn.execute(select(func.count()).select_from(sub)).scalar_one()
        rows = conn.execute(select(*[sub.c[c] for c in _LIST_COLUMNS]).order_by(sub.c.created_at.desc())
                            .limit(limit).offset(offset)).mappings().all()
        labels = dict(conn.execute(
            select(ReviewRow.session_id, ReviewRow.label)
            .where(ReviewRow.session_id.in_([r["id"] for r in rows]), ReviewRow.claim_id.is_(None))
            .order_by(ReviewRow.created_at)).all())
    return [SessionRow.model_validate(dict(r) | {"review_label": labels.get(r["id"])}) for r in rows], total


@dataclass
class QueueStats:
    total: int
    per_day: list[tuple[str, str, int]]  # (day, verdict or "none", sessions)
    failed_rules: dict[str, int]
    groundedness: list[tuple[float, int]]  # (bin start, sessions); bins of 0.1, 1.0 in the last


def queue_stats(store: Store, q: QueueFilter) -> QueueStats:
    """Chart data of the queue, aggregated in SQL so 10,000 rows never leave the database."""
    sub = queue_query(store, q).subquery()
    day = func.date(sub.c.created_at)
    rules_text = cast(sub.c.failed_rules, Text)
    with store.engine.connect() as conn:
        total = conn.execute(select(func.count()).select_from(sub)).scalar_one()
        per_day = conn.execute(
            select(day, sub.c.verdict, func.count()).group_by(day, sub.c.verdict).order_by(day)
        ).all()
        # Sessions share few distinct failed-rule lists: group them in SQL, count rules per group here.
        combos = conn.execute(
            select(rules_text, func.count()).where(sub.c.failed_rules.is_not(None)).group_by(rules_text)
        ).all()
        bucket = cast(sub.c.groundedness * 10, Integer)
        bins = conn.execute(
            select(bucket, func.count()).where(sub.c.groundedness.is_not(None)).group_by(bucket).order_by(bucket)
        ).all()
    rules: Counter[str] = Counter()
    for text, n in combos:
        try:
            listed = json.loads(text) if text else []
        except ValueError:
            continue
        for rule_id in listed if isinstance(listed, list) else []:
            rules[str(rule_id)] += n
    hist: Counter[float] = Counter()
    for b, n in bins:
        hist[min(int(b), 9) / 10] += n
    return QueueStats(
        total=total,
        per_day=[(str(d), v or "none", n) for d, v, n in per_day],
        failed_rules=dict(rules.most_common()),
        groundedness=sorted(hist.items()),
    )


def iter_filtered(store: Store, q: QueueFilter, batch: int = 1000) -> Iterator[SessionRow]:
    """Every row of the queue (list columns only), page by page, for export."""
    offset = 0
    while True:
        rows, _ = queue_page(store, q, limit=batch, offset=offset)
        yield from rows
        if len(rows) < batch:
            return
        offset += batch


def eval_session_ids(store: Store) -> set[str]:
    """Sessions of eval runs (labelled by the eval runner): left out of rule previews by default."""
    with store.engine.connect() as conn:
        return set(conn.execute(select(ReviewRow.session_id).where(ReviewRow.label == EVAL_LABEL)).scalars())


class FindingsIndex:
    """Ids of PASS sessions whose audit record holds findings: claims the composer-input filter
    kept from the answer, or a composer guard that fell back to the fixed template.

    Reading that out of every stored verifier evaluation costs seconds at 10,000 sessions (the
    JSON runs to ~20 KB a session), so it is read once and then only for sessions written
    since (updated_at), the way ReplayHistory tops up the replay inputs.
    """

    def __init__(self, store: Store) -> None:
        self.store = store
        self._ids: set[str] = set()
        self._since: datetime | None = None
        self._lock = threading.Lock()

    def refresh(self) -> frozenset[str]:
        s = DiagnosisSession
        ev = ("verifier_evaluation",)
        query = select(s.id, s.updated_at, s.verdict, s.gatekeeper_status,
                       s.self_evaluation[(*ev, "composer_guard")], s.self_evaluation[(*ev, "composer_filtered")])
        with self._lock:
            if self._since is not None:
                query = query.where(s.updated_at >= self._since)
            with self.store.engine.connect() as conn:
                for sid, updated, verdict, gate, guard, filtered in conn.execute(query):
                    found = verdict == "PASS" and gate == "pass" and (
                        bool(isinstance(guard, dict) and guard.get("used_template")) or bool(filtered))
                    (self._ids.add if found else self._ids.discard)(sid)
                    self._since = updated if self._since is None or updated > self._since else self._since
            return frozenset(self._ids)
