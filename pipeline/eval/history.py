"""Eval runs kept: who ran the suite, when, with which rules, each fixture's result and the score.

A run is a row of the `job` table (kind "eval", migration 0003), the same row a queued eval job
writes: `args` say who, from where and which rules, `result` holds the per-fixture results, written
fixture by fixture (migration 0021: progress, a request to stop). So a run from the Eval page,
from `workbench eval` and from a worker all land in one history, and no new table is needed. A run
that was cancelled, whose worker died or that failed is listed too, with the sessions it made.
Runs queued before who/rules were recorded read back with those fields empty.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import select

# pydantic validates a job's args against these where it starts; on Python 3.11 only
# typing_extensions' TypedDict carries what it needs for that.
from typing_extensions import TypedDict

from pipeline.core.config import Settings
from pipeline.core.contracts import Verdict
from pipeline.eval.runner import EvalResult, StoredResult
from pipeline.gatekeeper import RuleSet
from pipeline.runs.rulebook import rules_in_force
from pipeline.store import Store
from pipeline.store.schema import JobRow

ENDED = ("completed", "cancelled", "interrupted", "failed")


class CandidateTexts(TypedDict):
    """Rule texts a run uses instead of the rules in force (the Rules page's unsaved edit)."""

    index: str
    metadata: str


class EvalArgs(TypedDict, total=False):
    """An eval run's job args: who ran it, where it was asked ("page", "cli", "job"), the rules
    to run instead of those in force (`candidate` texts or a `rules_dir`), and, once it starts, the
    label of the rules it ran (`rules_label`)."""

    who: str
    origin: str
    candidate: CandidateTexts
    rules_dir: str
    rules: str


class EvalJobResult(TypedDict):
    """An eval run's job result: each fixture's result, written as it is made."""

    results: list[StoredResult]


@dataclass(frozen=True)
class EvalRun:
    id: str
    who: str
    rules: str  # "v3", "rules/ directory", or "candidate 1a2b3c4d5e": what a tuner compares by
    started_at: datetime
    results: tuple[StoredResult, ...]
    status: str = "completed"  # or cancelled / interrupted / failed (its results are the fixtures it ran)
    origin: str = ""  # where it was asked: "page", "cli", "job"; names an unnamed run
    total: int | None = None  # the suite's size when it ran, known once the job started

    @property
    def complete(self) -> bool:
        return self.status == "completed"

    @property
    def passed(self) -> int:
        return sum(bool(r.get("passed")) for r in self.results)

    @property
    def score(self) -> str:
        """A plain ratio: "24 / 26" says more than 92 %."""
        return f"{self.passed} / {len(self.results)}"


@dataclass(frozen=True)
class FixtureChange:
    name: str
    before: StoredResult | None  # None: the fixture did not exist in that run
    after: StoredResult | None

    @property
    def changed(self) -> bool:
        return _outcome(self.before) != _outcome(self.after)


SHIPPED = "rules/ directory"  # the label of runs under the shipped rules, no version applied yet


def rules_label(rules: RuleSet, version: int | None, *, candidate: bool) -> str:
    """How a run names its rules. An unsaved candidate has no id, so its content hash stands in:
    two runs with the same candidate show the same label."""
    if candidate:
        digest = hashlib.sha256(repr(rules.rules).encode("utf-8")).hexdigest()[:10]
        return f"candidate {digest}"
    return f"v{version}" if version is not None else SHIPPED


def suite_rules(settings: Settings, store: Store, *, candidate: RuleSet | None) -> tuple[RuleSet, str]:
    """The rules a run uses and its label: the candidate when there is one, else the rules in force."""
    if candidate is not None:
        return candidate, rules_label(candidate, None, candidate=True)
    rules, version = rules_in_force(settings, store)
    return rules, rules_label(rules, version, candidate=False)


def record_run(
    store: Store, *, who: str, rules: str, results: Sequence[EvalResult], started_at: datetime | None = None,
    origin: str = "cli",
) -> str:
    run_id = f"j-{uuid.uuid4().hex[:12]}"
    now = datetime.now(UTC)
    with store.writing() as db:
        db.add(
            JobRow(
                id=run_id,
                kind="eval",
                args={"who": who, "rules": rules, "origin": origin},
                status="completed",
                result={"results": [r.as_dict() for r in results]},
                created_at=started_at or now,
                finished_at=now,
            )
        )
    return run_id


def _utc(when: datetime) -> datetime:
    # SQLite hands timestamps back without a zone; they were written in UTC.
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)


def _run(row: JobRow) -> EvalRun:
    args, result = row.args or {}, row.result or {}
    return EvalRun(
        id=row.id,
        who=str(args.get("who") or ""),
        rules=str(args.get("rules") or ("candidate" if args.get("rules_dir") else "")),
        started_at=_utc(row.created_at),
        results=tuple(result.get("results") or ()),
        status=row.status,
        origin=str(args.get("origin") or ""),
        total=row.progress_total,
    )


def list_runs(store: Store, limit: int = 50) -> list[EvalRun]:
    """Ended eval runs (completed, cancelled, interrupted, failed), newest first."""
    with store.reading() as db:
        rows = db.scalars(
            select(JobRow)
            .where(JobRow.kind == "eval", JobRow.status.in_(ENDED))
            .order_by(JobRow.created_at.desc())
            .limit(limit)
        ).all()
        return [_run(r) for r in rows]


@dataclass(frozen=True)
class ActiveRun:
    """An eval run queued or under way, as a page that did not start it follows it."""

    id: str
    who: str
    origin: str
    started_at: datetime
    done: int
    total: int | None  # None until a worker has started it
    current: str  # the last fixture finished, "" before the first
    stopping: bool  # someone asked it to stop; it ends after the fixture in hand


def active_runs(store: Store) -> list[ActiveRun]:
    """Eval runs queued or running, oldest first."""
    with store.reading() as db:
        rows = db.scalars(
            select(JobRow)
            .where(JobRow.kind == "eval", JobRow.status.in_(("queued", "running")))
            .order_by(JobRow.created_at)
        ).all()
        out = []
        for row in rows:
            args, done = row.args or {}, (row.result or {}).get("results") or []
            out.append(ActiveRun(id=row.id, who=str(args.get("who") or ""), origin=str(args.get("origin") or ""),
                                 started_at=_utc(row.created_at), done=row.progress_done or 0,
                                 total=row.progress_total, current=str(done[-1].get("name") or "") if done else "",
                                 stopping=row.cancel_requested_at is not None))
        return out


def _outcome(result: StoredResult | None) -> tuple[bool, Verdict | None, tuple[str, ...]] | None:
    return (
        None
        if result is None
        else (bool(result.get("passed")), result.get("verdict"), tuple(result.get("failures") or ()))
    )


def compare(before: EvalRun, after: EvalRun) -> list[FixtureChange]:
    """Every fixture of either run, those whose result changed first (then by name)."""
    a = {r["name"]: r for r in before.results}
    b = {r["name"]: r for r in after.results}
    changes = [FixtureChange(name, a.get(name), b.get(name)) for name in sorted(a.keys() | b.keys())]
    return sorted(changes, key=lambda c: not c.changed)


def format_history(runs: Sequence[EvalRun]) -> str:
    lines = [f"{'run':<14}  {'when (UTC)':<16}  {'score':>7}  {'rules':<22}  who"]
    for run in runs:
        ended = "" if run.complete else f"  ({run.status})"
        lines.append(
            f"{run.id:<14}  {run.started_at:%Y-%m-%d %H:%M}  {run.score:>7}  {run.rules or '-':<22}  "
            f"{run.who or '-'}{ended}"
        )
    if not runs:
        lines.append("no eval runs stored yet; `workbench eval` runs the suite and keeps the result")
    return "\n".join(lines)
