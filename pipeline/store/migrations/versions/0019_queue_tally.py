"""The review queue's counts in aggregate: `queue_tally`, sessions by day x verdict in force x
verdict at ask x the other columns the queue's conditions and charts read.

With every session holding a verdict in force, the Sessions page's counts and charts moved a
million rows between groups per open (5-6 s; 14-39 s during a re-judge, docs/benchmarks.md).
The tally holds the same groups, a few thousand rows, kept by the database itself: triggers on
`diagnosis_session` and `verdict_in_force` move a session's count from its old group to its
new one in the transaction that changes it, so every writer (a session stage by stage, an
import, the lease, a late judge) keeps it, and it cannot drift from the rows. The re-judge,
which writes up to a row per session, holds the triggers (`queue_tally_state.held`, set and
cleared inside its own transaction, so no other writer ever sees it set) and rebuilds the
tally with one grouped scan before it commits (pipeline/store/tally.py).

SQLite drops a table's triggers with the table: a later batch migration that rebuilds
`diagnosis_session` or `verdict_in_force` must create them again (`create_triggers`, as 0023 does).
On PostgreSQL `verdict_in_force`'s moves are made once per statement since 0023.

Revision ID: 0019
Revises: 0018
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None

KEYS = ("day", "verdict", "verdict_at_ask", "gatekeeper_status", "failed_rules", "bucket", "status",
        "composer_findings", "provenance")
_SESSION_COLUMNS = ("id", "created_at", "verdict", "gatekeeper_status", "failed_rules", "groundedness", "status",
                    "composer_findings", "provenance")
_WATCHED = ("created_at", "verdict", "gatekeeper_status", "failed_rules", "groundedness", "status",
            "composer_findings", "provenance")
# The day in UTC on both: a cached group must not depend on the time zone of the writer's session.
_DAY = {"sqlite": "coalesce(date(s.created_at), '')",
        "postgresql": "coalesce(to_char(s.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD'), '')"}


def _groups(dialect: str) -> str:
    """A session's group in the tally's key order, from `s` (its row) and `v` (its verdict in force):
    NULL read as '' or -1, since a key column that may be NULL never meets its conflict."""
    return (f"{_DAY[dialect]}, coalesce(v.verdict, s.verdict, ''), coalesce(s.verdict, ''), "
            "coalesce(v.gatekeeper_status, s.gatekeeper_status, ''), "
            "coalesce(CAST(v.failed_rules AS TEXT), CAST(s.failed_rules AS TEXT), ''), "
            "coalesce(CAST(s.groundedness * 10 AS INTEGER), -1), s.status, s.composer_findings, "
            "coalesce(s.provenance, '')")


def _move(dialect: str, session: str, in_force: str, sign: int) -> str:
    """One session's count, +1 or -1, into its group: `session` is the trigger's NEW or OLD
    session row, or "look up <id expression>"; `in_force` its verdict_in_force row (NEW, OLD),
    "none" (none) or "look up"."""
    if session.startswith("look up "):
        s_from, where = "diagnosis_session AS s", f"s.id = {session.removeprefix('look up ')}"
    else:
        s_from, where = "(SELECT " + ", ".join(f"{session}.{c} AS {c}" for c in _SESSION_COLUMNS) + ") AS s", "true"
    if in_force == "look up":
        v_join = "verdict_in_force AS v ON v.session_id = s.id"
    elif in_force == "none":
        v_join = ("(SELECT CAST(NULL AS TEXT) AS verdict, CAST(NULL AS TEXT) AS gatekeeper_status, "
                  "CAST(NULL AS TEXT) AS failed_rules) AS v ON true")
    else:
        v_join = (f"(SELECT {in_force}.verdict AS verdict, {in_force}.gatekeeper_status AS gatekeeper_status, "
                  f"CAST({in_force}.failed_rules AS TEXT) AS failed_rules) AS v ON true")
    return (f"INSERT INTO queue_tally ({', '.join(KEYS)}, sessions) SELECT {_groups(dialect)}, {sign} "
            f"FROM {s_from} LEFT JOIN {v_join} WHERE {where} "
            f"ON CONFLICT ({', '.join(KEYS)}) DO UPDATE SET sessions = queue_tally.sessions + excluded.sessions")


def _triggers(dialect: str) -> dict[tuple[str, str], list[str]]:
    """(table, event) -> the moves its trigger makes, in order; an event fires AFTER unless it says."""
    watched = f"UPDATE OF {', '.join(_WATCHED)}"
    return {
        ("diagnosis_session", "INSERT"): [_move(dialect, "NEW", "look up", 1)],
        ("diagnosis_session", watched): [_move(dialect, "OLD", "look up", -1), _move(dialect, "NEW", "look up", 1)],
        # Before: a session's verdict_in_force row goes with it, by cascade, before an AFTER
        # trigger of its own would look it up (SQLite), and that row's trigger finds no session.
        ("diagnosis_session", "BEFORE DELETE"): [_move(dialect, "OLD", "look up", -1)],
        ("verdict_in_force", "INSERT"): [_move(dialect, "look up NEW.session_id", "none", -1),
                                         _move(dialect, "look up NEW.session_id", "NEW", 1)],
        ("verdict_in_force", "UPDATE"): [_move(dialect, "look up NEW.session_id", "OLD", -1),
                                         _move(dialect, "look up NEW.session_id", "NEW", 1)],
        ("verdict_in_force", "DELETE"): [_move(dialect, "look up OLD.session_id", "OLD", -1),
                                         _move(dialect, "look up OLD.session_id", "none", 1)],
    }


def _name(table: str, event: str) -> str:
    return f"queue_tally_{'session' if table == 'diagnosis_session' else 'in_force'}_{_timed(event)[1].split()[0].lower()}"


def _timed(event: str) -> tuple[str, str]:
    return ("BEFORE", event.removeprefix("BEFORE ")) if event.startswith("BEFORE ") else ("AFTER", event)


def create_triggers(tables: tuple[str, ...] = ("diagnosis_session", "verdict_in_force")) -> None:
    dialect = op.get_bind().dialect.name
    for (table, event), moves in _triggers(dialect).items():
        if table not in tables:
            continue
        name, (timing, what) = _name(table, event), _timed(event)
        if dialect == "sqlite":
            body = "".join(f"{m};\n" for m in moves)
            op.execute(f"CREATE TRIGGER {name} {timing} {what} ON {table} FOR EACH ROW "
                       f"WHEN NOT (SELECT held FROM queue_tally_state WHERE id = 1) BEGIN\n{body}END")
        else:
            body = "".join(f"    {m};\n" for m in moves)
            done = "RETURN OLD;" if timing == "BEFORE" else "RETURN NULL;"  # a BEFORE trigger's NULL skips the row
            op.execute(f"CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$\nBEGIN\n"
                       f"    IF (SELECT held FROM queue_tally_state WHERE id = 1) THEN {done} END IF;\n"
                       f"{body}    {done}\nEND $$")
            op.execute(f"CREATE TRIGGER {name} {timing} {what} ON {table} FOR EACH ROW EXECUTE FUNCTION {name}()")


def drop_triggers(tables: tuple[str, ...] = ("diagnosis_session", "verdict_in_force")) -> None:
    dialect = op.get_bind().dialect.name
    for table, event in _triggers(dialect):
        if table not in tables:
            continue
        name = _name(table, event)
        op.execute(f"DROP TRIGGER IF EXISTS {name}" + ("" if dialect == "sqlite" else f" ON {table}"))
        if dialect != "sqlite":
            op.execute(f"DROP FUNCTION IF EXISTS {name}()")


def upgrade() -> None:
    op.create_table(
        "queue_tally",
        sa.Column("day", sa.Text(), nullable=False),
        sa.Column("verdict", sa.Text(), nullable=False),
        sa.Column("verdict_at_ask", sa.Text(), nullable=False),
        sa.Column("gatekeeper_status", sa.Text(), nullable=False),
        sa.Column("failed_rules", sa.Text(), nullable=False),
        sa.Column("bucket", sa.Integer(), nullable=False),
        sa.Column("status", sa.Text(), nullable=False),
        sa.Column("composer_findings", sa.Boolean(), nullable=False),
        sa.Column("provenance", sa.Text(), nullable=False),
        sa.Column("sessions", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint(*KEYS),
    )
    op.create_table(
        "queue_tally_state",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("held", sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.CheckConstraint("id = 1", name="ck_queue_tally_state_one_row"),
    )
    op.execute("INSERT INTO queue_tally_state (id, held) VALUES (1, false)")
    dialect = op.get_bind().dialect.name
    op.execute(f"INSERT INTO queue_tally ({', '.join(KEYS)}, sessions) SELECT {_groups(dialect)}, count(*) "
               "FROM diagnosis_session AS s LEFT JOIN verdict_in_force AS v ON v.session_id = s.id "
               f"GROUP BY {_groups(dialect)}")
    create_triggers()


def downgrade() -> None:
    drop_triggers()
    op.drop_table("queue_tally_state")
    op.drop_table("queue_tally")
