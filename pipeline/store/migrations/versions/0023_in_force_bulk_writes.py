"""Rows in force written in bulk without a check per row: `verdict_in_force.session_id` no
longer references `diagnosis_session` (a trigger deletes a session's row with it), and on
PostgreSQL the queue tally's triggers on `verdict_in_force` fire once per statement, over the
statement's transition tables, instead of once per row.

A re-judge that inserts a row for each of a million sessions spent 3.3 s of its write calling
the tally's row triggers, each of which returned at once (the re-judge holds them), and 3.9 s on
the foreign key, whose check looks each session up and locks its row (docs/benchmarks.md, issue
36). A statement's triggers are one call; the sessions are joined by the insert itself.

Without the key, the writers keep a row from outliving its session:
- the re-judge inserts only the rows of sessions its statement sees, and on PostgreSQL a delete
  of sessions first waits for a re-judge that is writing (it holds the rules_in_force row for its
  whole transaction), so the rows that re-judge wrote are seen and deleted with their sessions;
- judge_late locks its one session's key as the foreign key's check did.
SQLite keeps its row triggers (it has no others); its table is rebuilt without the key, which
drops every trigger of the tally (0019), made again after.

Revision ID: 0023
Revises: 0022
"""

from __future__ import annotations

import importlib

import sqlalchemy as sa
from alembic import op

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None

_tally = importlib.import_module("pipeline.store.migrations.versions.0019_queue_tally")

_ROW = "session_id, verdict, gatekeeper_status, CAST(failed_rules AS TEXT) AS failed_rules"
_NONE = ("session_id, CAST(NULL AS TEXT) AS verdict, CAST(NULL AS TEXT) AS gatekeeper_status, "
         "CAST(NULL AS TEXT) AS failed_rules")
# event -> its transition tables and the moves it makes from them: (table, its row or none, sign),
# as 0019's row triggers make them one row at a time.
_STATEMENT_MOVES = {
    "INSERT": ("NEW TABLE AS new_rows", [("new_rows", _NONE, -1), ("new_rows", _ROW, 1)]),
    "UPDATE": ("OLD TABLE AS old_rows NEW TABLE AS new_rows", [("old_rows", _ROW, -1), ("new_rows", _ROW, 1)]),
    "DELETE": ("OLD TABLE AS old_rows", [("old_rows", _ROW, -1), ("old_rows", _NONE, 1)]),
}
_GONE_WITH_SESSION = "in_force_gone_with_session"
_GONE = "DELETE FROM verdict_in_force WHERE session_id = OLD.id;"
_WAIT_FOR_REJUDGE = "in_force_wait_for_rejudge"


def _statement_move(moves: list[tuple[str, str, int]]) -> str:
    """Every session's count moved at once, summed per group first (one statement's upsert may
    not touch a tally row twice); a session no longer stored moves nothing, as in 0019."""
    rows = " UNION ALL ".join(f"SELECT {columns}, {sign} AS sign FROM {table}" for table, columns, sign in moves)
    keys = ", ".join(_tally.KEYS)
    return (f"INSERT INTO queue_tally ({keys}, sessions) SELECT {_tally._groups('postgresql')}, "
            f"CAST(sum(v.sign) AS INTEGER) FROM ({rows}) AS v JOIN diagnosis_session AS s ON s.id = v.session_id "
            f"GROUP BY {', '.join(str(k + 1) for k in range(len(_tally.KEYS)))} HAVING sum(v.sign) <> 0 "
            f"ON CONFLICT ({keys}) DO UPDATE SET sessions = queue_tally.sessions + excluded.sessions")


def _plpgsql_trigger(name: str, when: str, body: str) -> None:
    """A PostgreSQL trigger `name` firing `when` ("AFTER INSERT ON t ... FOR EACH STATEMENT"),
    running `body` in a function of its name."""
    op.execute(f"CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$\nBEGIN\n{body}\n"
               "    RETURN NULL;\nEND $$")
    op.execute(f"CREATE TRIGGER {name} {when} EXECUTE FUNCTION {name}()")


def _create_statement_triggers() -> None:
    for event, (tables, moves) in _STATEMENT_MOVES.items():
        _plpgsql_trigger(_tally._name("verdict_in_force", event),
                         f"AFTER {event} ON verdict_in_force REFERENCING {tables} FOR EACH STATEMENT",
                         "    IF (SELECT held FROM queue_tally_state WHERE id = 1) THEN RETURN NULL; END IF;\n"
                         f"    {_statement_move(moves)};")


def _drop_statement_triggers() -> None:
    for event in _STATEMENT_MOVES:
        name = _tally._name("verdict_in_force", event)
        op.execute(f"DROP TRIGGER {name} ON verdict_in_force")
        op.execute(f"DROP FUNCTION {name}()")


def _in_force(keyed: bool) -> sa.Table:
    """verdict_in_force as the batch rebuild on SQLite makes it, with or without the key."""
    session = (sa.Column("session_id", sa.Text(), sa.ForeignKey("diagnosis_session.id", ondelete="CASCADE"),
                         primary_key=True) if keyed else sa.Column("session_id", sa.Text(), primary_key=True))
    return sa.Table("verdict_in_force", sa.MetaData(), session,
                    sa.Column("verdict", sa.Text(), nullable=False),
                    sa.Column("gatekeeper_status", sa.Text(), nullable=False),
                    sa.Column("failed_rules", sa.JSON(), nullable=False),
                    sa.Column("rules_version", sa.Integer()),
                    sa.Column("ungated", sa.Boolean(), nullable=False, server_default=sa.false()))


def _rebuild_sqlite(keyed: bool) -> None:
    _tally.drop_triggers()  # a rename fails on any trigger that names the table while it is gone
    with op.batch_alter_table("verdict_in_force", recreate="always", copy_from=_in_force(keyed)):
        pass
    _tally.create_triggers()


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        _rebuild_sqlite(keyed=False)
        op.execute(f"CREATE TRIGGER {_GONE_WITH_SESSION} AFTER DELETE ON diagnosis_session FOR EACH ROW BEGIN\n"
                   f"{_GONE}\nEND")
        return
    op.drop_constraint("verdict_in_force_session_id_fkey", "verdict_in_force", type_="foreignkey")
    _tally.drop_triggers(("verdict_in_force",))
    _create_statement_triggers()
    # Before the statement touches a row: a wait with a session's row already locked could
    # deadlock with the re-judge's regroup of the tally.
    _plpgsql_trigger(_WAIT_FOR_REJUDGE, "BEFORE DELETE ON diagnosis_session FOR EACH STATEMENT",
                     "    PERFORM 1 FROM rules_in_force WHERE id = 1 FOR SHARE;")
    _plpgsql_trigger(_GONE_WITH_SESSION, "AFTER DELETE ON diagnosis_session FOR EACH ROW", f"    {_GONE}")


def downgrade() -> None:
    orphans = "DELETE FROM verdict_in_force WHERE session_id NOT IN (SELECT id FROM diagnosis_session)"
    if op.get_bind().dialect.name == "sqlite":
        op.execute(f"DROP TRIGGER {_GONE_WITH_SESSION}")
        op.execute(orphans)
        _rebuild_sqlite(keyed=True)
        return
    for name in (_GONE_WITH_SESSION, _WAIT_FOR_REJUDGE):
        op.execute(f"DROP TRIGGER {name} ON diagnosis_session")
        op.execute(f"DROP FUNCTION {name}()")
    _drop_statement_triggers()
    _tally.create_triggers(("verdict_in_force",))
    op.execute(orphans)
    op.create_foreign_key("verdict_in_force_session_id_fkey", "verdict_in_force", "diagnosis_session",
                          ["session_id"], ["id"], ondelete="CASCADE")
