"""The review queue's tally (migration 0019): rebuilt whole by a transaction that holds its triggers.

The triggers move one session's count per row written; a re-judge writes up to a row per
session, each of whose moves would look its session row up, so it holds them and regroups
every session once instead (one grouped scan, as the page did per open before the tally).
Any write of many sessions in one transaction must do the same (`bulk_write`): on PostgreSQL each move of a
tally row within a transaction adds a version of it that every later move walks, so a
transaction of 100,000 moves over a few dozen rows is quadratic (a bulk seed took 438 s).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Integer, cast, delete, func, insert, literal, select, text, update
from sqlalchemy.engine import Connection

from pipeline.store.repo import IN_FORCE
from pipeline.store.schema import DiagnosisSession, QueueTally, QueueTallyState, VerdictInForce


def day_of(dialect: str) -> Any:
    """The UTC day as the triggers write it."""
    s = DiagnosisSession
    if dialect == "postgresql":
        return func.coalesce(func.to_char(func.timezone("UTC", s.created_at), "YYYY-MM-DD"), "")
    return func.coalesce(func.date(s.created_at), "")


def session_groups(dialect: str) -> tuple[Any, ...]:
    """Each session's tally key, in QueueTally's column order, from its row and verdict in force."""
    s = DiagnosisSession
    return (day_of(dialect), func.coalesce(IN_FORCE.verdict, ""), func.coalesce(s.verdict, ""),
            func.coalesce(IN_FORCE.gatekeeper_status, ""), func.coalesce(IN_FORCE.failed_text, ""),
            func.coalesce(cast(s.groundedness * literal(10), Integer), -1), s.status, s.composer_findings,
            func.coalesce(s.provenance, ""))


def grouped_sessions(dialect: str) -> Any:
    """The sessions grouped as the tally groups them: what it must equal."""
    keys = session_groups(dialect)
    return (select(*keys, func.count()).select_from(DiagnosisSession)
            .outerjoin(VerdictInForce, VerdictInForce.session_id == DiagnosisSession.id + literal(""))
            .group_by(*keys))


@contextmanager
def bulk_write(conn: Connection) -> Iterator[None]:
    """A write of many sessions in `conn`'s transaction: the triggers held for the block and the
    tally regrouped once after it. The only way to hold them, so no bulk path can hold them and
    forget the regroup; a block that raises leaves both to the transaction's rollback."""
    conn.execute(update(QueueTallyState).where(QueueTallyState.id == 1).values(held=True))
    yield
    _rebuild(conn)


def _rebuild(conn: Connection) -> None:
    """The tally regrouped from the rows, in `conn`'s transaction; the triggers run again after."""
    dialect = conn.dialect.name
    if dialect == "postgresql":
        # A writer whose trigger moves a count between our scan and our commit would be lost:
        # writers to the tally wait for this transaction (readers do not).
        conn.execute(text("LOCK TABLE queue_tally IN EXCLUSIVE MODE"))
    conn.execute(delete(QueueTally))
    columns = [c.name for c in QueueTally.__table__.columns]
    conn.execute(insert(QueueTally).from_select(columns, grouped_sessions(dialect)))
    conn.execute(update(QueueTallyState).where(QueueTallyState.id == 1).values(held=False))


def tally_rows(conn: Connection) -> dict[tuple[Any, ...], int]:
    """The tally's non-empty groups."""
    keys = [c for c in QueueTally.__table__.columns if c.name != "sessions"]
    return {tuple(r[:-1]): r[-1] for r in conn.execute(select(*keys, QueueTally.sessions)
                                                       .where(QueueTally.sessions != 0))}

