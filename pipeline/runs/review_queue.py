"""The review queue: which stored sessions need a person, listed and charted in SQL.

Shared by the Sessions page, its exports and the Rules page's preview (which leaves eval runs
out). "Needs a person" is LOW_CONFID, REJECT, a failed or interrupted run, a PASS with findings
(gatekeeper warnings, claims kept from the answer, a composer guard fallback), and an import
no trusted key signed (provenance "unverified").

At a million sessions the page's first open is one grouped scan for the count and all three
charts and one walk of the created_at index for the rows; every condition reads a column
(composer findings included, migration 0007), none the JSON audit record.
"""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from itertools import islice
from typing import Any

from sqlalchemy import and_, func, literal, or_, select

from pipeline.store import SessionFilter, Store
from pipeline.store.listing import version_in_force
from pipeline.store.record import SessionRow
from pipeline.store.repo import AT_ASK, IN_FORCE, MOVED, Outcome
from pipeline.store.schema import (
    LISTING_GROUPS,
    DiagnosisSession,
    QueueTally,
    ReviewRow,
    RulesInForce,
    VerdictInForce,
)
from pipeline.store.tally import day_of

EVAL_LABEL = "eval_fixture"  # the review label pipeline/eval/runner.py gives every eval run


@dataclass(frozen=True)
class QueueFilter:
    """The Sessions page's filter: the store's SessionFilter plus what "needs a person" means."""

    base: SessionFilter = field(default_factory=SessionFilter)
    # LOW_CONFID, REJECT, failed runs, and PASS with findings (gatekeeper warnings, claims kept
    # from the answer, a composer guard fallback to the fixed template).
    needs_person: bool = True
    include_eval: bool = False
    reviewed: bool | None = False  # by a person; the eval label is no review


def queue_query(store: Store, q: QueueFilter, outcome: Outcome = IN_FORCE) -> Any:
    """The SELECT of the queue: store.filtered_query narrowed by the queue's own conditions, on
    the outcome in force (or at ask: queue_stats counts from there)."""
    s = DiagnosisSession
    query = store.filtered_query(replace(q.base, reviewed=None), outcome)
    if q.needs_person:
        query = query.where(_needs_person(outcome.verdict, outcome.gatekeeper_status, s.status, s.composer_findings,
                                          s.provenance))
    if not q.include_eval:
        query = query.where(s.id.not_in(select(ReviewRow.session_id).where(ReviewRow.label == EVAL_LABEL)))
    if q.reviewed is not None:
        people = select(ReviewRow.session_id).where(ReviewRow.claim_id.is_(None), ReviewRow.label != EVAL_LABEL)
        query = query.where(s.id.in_(people) if q.reviewed else s.id.not_in(people))
    return query


def _needs_person(verdict: Any, gatekeeper_status: Any, status: Any, composer_findings: Any, provenance: Any) -> Any:
    """What "needs a person" tests, over a session's columns or the tally's (where NULL is '')."""
    # Without statistics SQLite answers an OR whose every branch has an index with one index
    # per branch and sorts the union, for every page of rows
    # (docs/benchmarks.md#figures-behind-choices-in-the-code). A branch no index answers
    # (coalesce; NULL and '' both fail the test) leaves it the created_at index for the rows
    # and ix_session_listing for the counts and charts.
    return or_(
        func.coalesce(verdict, "").in_(("LOW_CONFID", "REJECT")),
        status.in_(("failed", "interrupted")),
        gatekeeper_status.in_(("warn", "fail")),
        and_(verdict == "PASS", gatekeeper_status == "pass", composer_findings),
        # An import no trusted key signed: its verdict is ours, its evidence the source's word.
        provenance == "unverified",
    )


_LIST_COLUMNS = ("id", "created_at", "question", "status", "groundedness", "services", "provider", "shape",
                 "provenance", "composer_findings")


def queue_rows(store: Store, q: QueueFilter, *, limit: int = 50, offset: int = 0) -> list[SessionRow]:
    """One page of the queue, newest first, with each session's latest person's label. Not
    counted: the page takes the count from queue_stats, which scans the queue anyway."""
    # The query joins verdict_in_force already: its row's version names the version in force.
    sub = queue_query(store, q).add_columns(VerdictInForce.session_id.is_not(None).label("moved"),
                                            VerdictInForce.rules_version.label("row_version")).subquery()
    columns = [*(sub.c[c] for c in _LIST_COLUMNS), sub.c.verdict_in_force.label("verdict"),
               sub.c.gatekeeper_in_force.label("gatekeeper_status"), sub.c.failed_in_force.label("failed_rules"),
               sub.c.ungated_in_force.label("ungated"),
               sub.c.verdict.label("verdict_at_ask"), sub.c.rules_version.label("rules_version_at_ask"),
               sub.c.moved, sub.c.row_version]
    with store.connected() as conn:
        judged = conn.execute(select(RulesInForce.judged_version)).scalar()
        rows = conn.execute(select(*columns).order_by(sub.c.created_at.desc())
                            .limit(limit).offset(offset)).mappings().all()
        labels = dict(conn.execute(
            select(ReviewRow.session_id, ReviewRow.label)
            .where(ReviewRow.session_id.in_([r["id"] for r in rows]), ReviewRow.claim_id.is_(None))
            .order_by(ReviewRow.created_at)).all())
    return [SessionRow.model_validate(dict(r) | {
        "review_label": labels.get(r["id"]),
        "rules_version": version_in_force(r["verdict"], bool(r["moved"]), r["row_version"], r["rules_version_at_ask"],
                                          judged)}) for r in rows]


@dataclass
class QueueStats:
    total: int
    per_day: list[tuple[str, str, int]]  # (day, verdict or "none", sessions)
    failed_rules: dict[str, int]
    groundedness: list[tuple[float, int]]  # (bin start, sessions); bins of 0.1, 1.0 in the last


def queue_stats(store: Store, q: QueueFilter) -> QueueStats:
    """The queue's count and chart data from grouped counts: sessions share few distinct (day,
    verdict, failed-rule list, groundedness tenth) tuples, so the groups, not the sessions, leave
    the database, and each chart is a sum over them here.

    A filter on the tally's columns (the usual one: the queue, a verdict, a rule) reads the
    tally (migration 0021) and takes out the sessions people reviewed or eval runs labelled, a
    query over those alone. Any other (a day range, a service, a text, the reviewed) scans the
    outcome at ask off the listing index and moves the sessions whose outcome in force differs
    (verdict_in_force rows, after a re-judge) from their groups at ask to their groups in force by
    two queries over those sessions alone."""
    groups = _tallied_groups(store, q) if _tally_answers(q) else _scanned_groups(store, q)
    return _stats(groups)


def _tally_answers(q: QueueFilter) -> bool:
    f = q.base
    return q.reviewed is not True and not (f.since or f.until or f.service or f.text)


def _tallied_groups(store: Store, q: QueueFilter) -> Counter[tuple[Any, ...]]:
    t, f = QueueTally, q.base
    keys = (t.day, t.verdict, t.failed_rules, t.bucket)
    query = select(*keys, func.sum(t.sessions)).group_by(*keys)
    if q.needs_person:
        query = query.where(_needs_person(t.verdict, t.gatekeeper_status, t.status, t.composer_findings, t.provenance))
    for column, values in ((t.verdict, f.verdicts), (t.status, f.statuses), (t.gatekeeper_status, f.gatekeeper_statuses)):
        if values:
            query = query.where(column.in_(values))
    if f.rule_id:
        query = query.where(t.failed_rules.contains(f'"{f.rule_id}"'))
    groups: Counter[tuple[Any, ...]] = Counter()
    with store.connected() as conn:
        for day, verdict, rules_text, bucket, n in conn.execute(query):
            groups[(day, verdict or None, rules_text or None, None if bucket < 0 else bucket)] += int(n)
        left_out = [*([ReviewRow.claim_id.is_(None) & (ReviewRow.label != EVAL_LABEL)] if q.reviewed is False else []),
                    *([ReviewRow.label == EVAL_LABEL] if not q.include_eval else [])]
        if left_out:
            # The tally counts every session; the reviewed and the eval runs are few, read by id.
            sessions = select(ReviewRow.session_id).where(or_(*left_out))
            outcome_keys = (day_of(store.engine.dialect.name), IN_FORCE.verdict, IN_FORCE.failed_text,
                            LISTING_GROUPS[3])
            gone = (queue_query(store, replace(q, reviewed=None, include_eval=True))
                    .where(DiagnosisSession.id.in_(sessions)).with_only_columns(*outcome_keys, func.count())
                    .group_by(*outcome_keys))
            for *key, n in conn.execute(gone):
                groups[tuple(key)] -= n
    return groups


def _scanned_groups(store: Store, q: QueueFilter) -> Counter[tuple[Any, ...]]:
    # The index's own expressions (schema.LISTING_GROUPS): SQLite reads the groups off it in order.
    query = queue_query(store, q, AT_ASK).with_only_columns(*LISTING_GROUPS, func.count()).group_by(*LISTING_GROUPS)
    groups: Counter[tuple[Any, ...]] = Counter()
    with store.connected() as conn:
        groups.update({tuple(g[:-1]): g[-1] for g in conn.execute(query)})
        if conn.execute(select(VerdictInForce.session_id).limit(1)).first() is not None:
            for outcome, moved, sign in (
                    (AT_ASK, (DiagnosisSession.id + literal("")).in_(select(VerdictInForce.session_id)), -1),
                    (MOVED, VerdictInForce.session_id.is_not(None), 1)):
                # Both scan the listing index (`id || ''`: not each session's row looked up by id).
                keys = (LISTING_GROUPS[0], outcome.verdict, outcome.failed_text, LISTING_GROUPS[3])
                for *key, n in conn.execute(queue_query(store, q, outcome).where(moved)
                                            .with_only_columns(*keys, func.count()).group_by(*keys)):
                    groups[tuple(key)] += sign * n
    return groups


def _stats(groups: Counter[tuple[Any, ...]]) -> QueueStats:
    total = 0
    days: Counter[tuple[str, str]] = Counter()
    combos: Counter[str] = Counter()
    hist: Counter[float] = Counter()
    for (day, verdict, rules_text, bucket), n in sorted(groups.items(), key=lambda g: tuple(map(str, g[0]))):
        if n <= 0:
            continue
        total += n
        days[(str(day), verdict or "none")] += n
        if rules_text is not None:
            combos[rules_text] += n
        if bucket is not None:
            hist[min(int(bucket), 9) / 10] += n
    rules: Counter[str] = Counter()
    for text, n in sorted(combos.items()):  # in text order, as GROUP BY gave them: ties keep their order
        try:
            listed = json.loads(text) if text else []
        except ValueError:
            continue
        for rule_id in listed if isinstance(listed, list) else []:
            rules[str(rule_id)] += n
    return QueueStats(
        total=total,
        per_day=[(d, v, n) for (d, v), n in sorted(days.items())],
        failed_rules=dict(rules.most_common()),
        # Every tenth, the empty ones too: a gap in the histogram is a finding, not a missing bar.
        groundedness=[(b / 10, hist.get(b / 10, 0)) for b in range(10)] if hist else [],
    )


def iter_filtered(store: Store, q: QueueFilter, batch: int = 1000) -> Iterator[SessionRow]:
    """Every row of the queue (list columns only), page by page, for export."""
    offset = 0
    while True:
        rows = queue_rows(store, q, limit=batch, offset=offset)
        yield from rows
        if len(rows) < batch:
            return
        offset += batch


def eval_session_ids(store: Store) -> set[str]:
    """Sessions of eval runs (labelled by the eval runner): left out of rule previews by default."""
    with store.connected() as conn:
        return set(conn.execute(select(ReviewRow.session_id).where(ReviewRow.label == EVAL_LABEL)).scalars())



# --- exports (the Sessions page's downloads and `workbench sessions --format csv`) --------------

# `verdict` is the verdict in force, given by `rules_version`; the verdict at ask stands beside it.
CSV_FIELDS = ("id", "created_at", "question", "status", "verdict", "rules_version", "verdict_at_ask",
              "rules_version_at_ask", "ungated", "provenance", "gatekeeper_status", "failed_rules", "groundedness",
              "services", "provider", "shape", "review_label")
# A spreadsheet runs a cell that starts with one of these as a formula (=HYPERLINK(...) in a question).
_FORMULA_LEAD = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: Any) -> Any:
    """A text cell a spreadsheet shows as text: a formula-leading one gets a leading apostrophe."""
    if isinstance(value, str) and value.startswith(_FORMULA_LEAD):
        return "'" + value
    return value


def export_csv(store: Store, q: QueueFilter, *, limit: int | None = None) -> bytes:
    """The queue's sessions (every one, or the newest `limit`) as CSV, UTF-8 with a BOM so that
    spreadsheets read Chinese."""
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(CSV_FIELDS)
    for row in islice(iter_filtered(store, q), limit):
        values = {**row.model_dump(), "failed_rules": " ".join(row.failed_rules)}
        writer.writerow([csv_cell(values[f]) for f in CSV_FIELDS])
    return buf.getvalue().encode("utf-8-sig")
