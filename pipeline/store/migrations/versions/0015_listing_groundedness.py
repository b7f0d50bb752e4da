"""SQLite's listing index carries groundedness itself, after the expressions it already holds.

The review queue's charts move each session whose verdict in force differs (a verdict_in_force
row, migration 0011) from its groups at ask to its groups in force, joining that table. In a
join SQLite does not take an indexed expression (the groundedness tenth) from the index: it read
each such session's row, audit record included
(docs/benchmarks.md#figures-behind-choices-in-the-code).
With the plain column in the index it computes the tenth from the index. PostgreSQL's listing
index holds the column already.

Revision ID: 0015
Revises: 0014
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

# As pipeline/store/schema.py renders them (see 0007 for why SQLite's leads with expressions).
_BEFORE = ["date(created_at)", "verdict", "CAST(failed_rules AS TEXT)", "CAST(groundedness * 10 AS INTEGER)",
           "status", "gatekeeper_status", "composer_findings", "provenance", "created_at", "id"]
_AFTER = [*_BEFORE, "groundedness"]


def _listing_index(columns: list[str]) -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.drop_index("ix_session_listing", "diagnosis_session")
        op.create_index("ix_session_listing", "diagnosis_session", [sa.text(e) for e in columns])


def upgrade() -> None:
    _listing_index(_AFTER)


def downgrade() -> None:
    _listing_index(_BEFORE)
