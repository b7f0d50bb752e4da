"""Every string column becomes Text: PostgreSQL stores what SQLite stores.

The first release declared varchar(n) columns that models and bundles fill (a planner's tool
name, an imported session id, a claim id, a model name). SQLite ignores the length, PostgreSQL
refuses the row, so one session failed on one backend only. Text has no length on either.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

# table -> (column, first-release length, nullable)
WIDENED: dict[str, list[tuple[str, int, bool]]] = {
    "diagnosis_session": [
        ("id", 40, False), ("world", 80, True), ("shape", 10, False), ("provider", 40, False),
        ("model", 120, False), ("status", 20, False), ("stage", 30, False), ("verdict", 12, True),
        ("gatekeeper_status", 8, True), ("services", 400, False),
    ],
    "tool_invocation": [
        ("session_id", 40, False), ("tool_name", 40, False), ("model_tool_name", 40, False), ("status", 10, False),
    ],
    "llm_call": [
        ("session_id", 40, False), ("stage", 20, False), ("provider", 40, False), ("model", 120, False),
        ("prompt_file", 200, False), ("prompt_version", 40, False), ("parse_status", 10, False),
    ],
    "review": [("session_id", 40, False), ("claim_id", 80, True), ("label", 40, False), ("reviewer", 120, False)],
    "rule_version": [("author", 120, False)],
}


def _alter(to_text: bool) -> None:
    for table, columns in WIDENED.items():
        # On SQLite this copies the table (foreign keys are off on the migration connection,
        # so dropping the old diagnosis_session cascades nothing); on PostgreSQL it is an ALTER.
        with op.batch_alter_table(table) as batch:
            for name, length, nullable in columns:
                old, new = (sa.String(length), sa.Text()) if to_text else (sa.Text(), sa.String(length))
                batch.alter_column(name, existing_type=old, type_=new, existing_nullable=nullable)


def upgrade() -> None:
    _alter(to_text=True)


def downgrade() -> None:
    _alter(to_text=False)
