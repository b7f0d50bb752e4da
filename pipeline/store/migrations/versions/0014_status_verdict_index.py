"""Sessions by status and verdict from an index: the Prometheus scrape (pipeline/telemetry/metrics.py)
counts them every 15 s or so, and without an index holding both columns each count read every
session row (SQLite went through ix_session_status_id and fetched each row's verdict; PostgreSQL
scanned the heap; docs/benchmarks.md#figures-behind-choices-in-the-code).

Revision ID: 0014
Revises: 0013
"""

from __future__ import annotations

from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_session_status_verdict", "diagnosis_session", ["status", "verdict"])


def downgrade() -> None:
    op.drop_index("ix_session_status_verdict", table_name="diagnosis_session")
