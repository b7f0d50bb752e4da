"""Columnar gatekeeper replay: gate_session and gate_binding (pipeline/replay/columns.py).

A threshold replay over a million sessions reads these narrow rows into arrays instead of every
session's JSON audit record. Existing sessions get their rows lazily, on the first replay that
reads them (computing them needs the rule code, which a migration must not import).
The two indexes serve the Sessions page's status and gatekeeper filters, newest first.

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "gate_session",
        sa.Column("seq", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("session_id", sa.Text(), sa.ForeignKey("diagnosis_session.id", ondelete="CASCADE"),
                  nullable=False, unique=True),
        sa.Column("lists_key", sa.Text(), nullable=False),
        sa.Column("lists_clean", sa.Boolean(), nullable=False),
        sa.Column("min_coverage", sa.Float()),
        sa.Column("min_quote", sa.Float()),
        sa.Column("clean_verdict", sa.Text(), nullable=False),
        sa.Column("clean_unbacked", sa.JSON(), nullable=False),
        sa.Column("old_status", sa.Text(), nullable=False),
        sa.Column("old_verdict", sa.Text(), nullable=False),
        sa.Column("old_rules", sa.Text(), nullable=False),
    )
    op.create_table(
        "gate_binding",
        sa.Column("seq", sa.Integer(), sa.ForeignKey("gate_session.seq", ondelete="CASCADE"), primary_key=True),
        sa.Column("claim", sa.Integer(), primary_key=True),
        sa.Column("binding", sa.Integer(), primary_key=True),
        sa.Column("out_score", sa.Float()),
        sa.Column("out_covered", sa.Float()),
        sa.Column("out_gap", sa.Integer()),
        sa.Column("quote_score", sa.Float()),
        sa.Column("summary_score", sa.Float()),
        sa.Column("invented", sa.Integer(), nullable=False),
        sa.Column("entity_score", sa.Float(), nullable=False),
    )
    op.create_index("ix_session_status_created", "diagnosis_session", ["status", "created_at"])
    op.create_index("ix_session_gatekeeper_created", "diagnosis_session", ["gatekeeper_status", "created_at"])


def downgrade() -> None:
    op.drop_index("ix_session_gatekeeper_created", "diagnosis_session")
    op.drop_index("ix_session_status_created", "diagnosis_session")
    op.drop_table("gate_binding")
    op.drop_table("gate_session")
