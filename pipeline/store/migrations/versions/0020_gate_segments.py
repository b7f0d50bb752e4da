"""`gate_segment`: a random stamp per 65,536 gate_session seqs, drawn anew by every change to
their gate rows, so the Parquet files of those rows (pipeline/replay/column_files.py) can be
checked against the store in one read of a few rows.

The files are a cache of the gate columns beside the store, which stays the source of truth. A
count, a sum or a largest seq would not do as the check: SQLite hands a deleted largest seq to
the next insert, so a session rewritten at the end of the history keeps all three. Triggers draw
the stamp whatever writes the rows (a finished session, the backfill, a bulk load, a delete);
gate_binding and gate_claim rows are inserted only with their session's gate_session row
(history.write_columns), so their inserts need no trigger of their own, which would cost one per
binding on a bulk load.

Revision ID: 0020
Revises: 0019
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None

SEGMENT = 65_536
# PostgreSQL: one stamp per transaction (its id, with the server's start so that a restored
# backup replaying ids draws others), kept by the transaction's later changes: a row updated
# per change would become a chain of versions each later change walks, quadratic in a bulk
# write. SQLite updates in place: a random number per change.
_RANDOM = {"sqlite": "random()",
           "postgresql": "hashtextextended(txid_current()::text || pg_postmaster_start_time()::text, 0)"}
# (table, event) -> the rows (NEW, OLD) whose segment a change draws a new stamp for.
_TRIGGERS = {("gate_session", "INSERT"): ("NEW",), ("gate_session", "UPDATE"): ("OLD", "NEW"),
             ("gate_session", "DELETE"): ("OLD",),
             ("gate_binding", "UPDATE"): ("OLD", "NEW"), ("gate_binding", "DELETE"): ("OLD",),
             ("gate_claim", "UPDATE"): ("OLD", "NEW"), ("gate_claim", "DELETE"): ("OLD",)}


def _stamp(dialect: str, row: str) -> str:
    return (f"INSERT INTO gate_segment (segment, stamp) VALUES ({row}.seq / {SEGMENT}, {_RANDOM[dialect]}) "
            "ON CONFLICT (segment) DO UPDATE SET stamp = excluded.stamp WHERE gate_segment.stamp <> excluded.stamp")


def upgrade() -> None:
    dialect = op.get_bind().dialect.name
    op.create_table(
        "gate_segment",
        sa.Column("segment", sa.BigInteger(), primary_key=True, autoincrement=False),
        sa.Column("stamp", sa.BigInteger(), nullable=False),
    )
    op.execute(f"INSERT INTO gate_segment (segment, stamp) SELECT segment, {_RANDOM[dialect]} "
               f"FROM (SELECT DISTINCT seq / {SEGMENT} AS segment FROM gate_session) AS segments")
    for (table, event), rows in _TRIGGERS.items():
        name = f"gate_segment_{table}_{event.lower()}"
        if dialect == "sqlite":
            body = "".join(f"{_stamp(dialect, row)};\n" for row in rows)
            op.execute(f"CREATE TRIGGER {name} AFTER {event} ON {table} FOR EACH ROW BEGIN\n{body}END")
        else:
            body = "".join(f"    {_stamp(dialect, row)};\n" for row in rows)
            op.execute(f"CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$\nBEGIN\n{body}"
                       "    RETURN NULL;\nEND $$")
            op.execute(f"CREATE TRIGGER {name} AFTER {event} ON {table} FOR EACH ROW EXECUTE FUNCTION {name}()")


def downgrade() -> None:
    dialect = op.get_bind().dialect.name
    for table, event in _TRIGGERS:
        name = f"gate_segment_{table}_{event.lower()}"
        op.execute(f"DROP TRIGGER IF EXISTS {name}" + ("" if dialect == "sqlite" else f" ON {table}"))
        if dialect != "sqlite":
            op.execute(f"DROP FUNCTION IF EXISTS {name}()")
    op.drop_table("gate_segment")
