"""Claim standings and finding bits for the columnar replay (pipeline/replay/columns.py, judge).

gate_claim holds each claim's standing in the verdict matrix under each gatekeeper outcome;
gate_session rows gain whether their claims can be judged in arrays, the verdict floor of their
coverage and tool calls, and the text rules' findings as bits; gate_binding rows gain the lowest
entity change point, their count, the entity findings' levels and the text rules' findings as
bits. Rows written before have none of these: backfill rewrites them on the next replay.

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # The columnar load and backfill find replayable sessions by status and id alone: without a
    # covering index SQLite reads each row of the table that holds the JSON audit record.
    op.create_index("ix_session_status_id", "diagnosis_session", ["status", "id"])
    op.create_table(
        "gate_claim",
        sa.Column("seq", sa.Integer(), sa.ForeignKey("gate_session.seq", ondelete="CASCADE"), primary_key=True),
        sa.Column("claim", sa.Integer(), primary_key=True),
        sa.Column("untouched", sa.Integer(), nullable=False),
        sa.Column("hit", sa.Integer(), nullable=False),
        sa.Column("entity_hit", sa.Integer(), nullable=False),
        sa.Column("direct_core", sa.Boolean(), nullable=False),
        sa.Column("text_hit", sa.Integer(), nullable=False),
    )
    with op.batch_alter_table("gate_session") as batch:
        batch.add_column(sa.Column("evidence_floor", sa.Text()))
        batch.add_column(sa.Column("claims_ok", sa.Boolean()))
        batch.add_column(sa.Column("text_has", sa.Integer()))
        batch.add_column(sa.Column("text_fail", sa.Integer()))
    with op.batch_alter_table("gate_binding") as batch:
        batch.add_column(sa.Column("entity_low", sa.Float()))
        batch.add_column(sa.Column("entity_points", sa.Integer()))
        batch.add_column(sa.Column("entity_fail", sa.Integer()))
        batch.add_column(sa.Column("text_flag", sa.Integer()))


def downgrade() -> None:
    with op.batch_alter_table("gate_binding") as batch:
        for name in ("text_flag", "entity_fail", "entity_points", "entity_low"):
            batch.drop_column(name)
    with op.batch_alter_table("gate_session") as batch:
        for name in ("text_fail", "text_has", "claims_ok", "evidence_floor"):
            batch.drop_column(name)
    op.drop_table("gate_claim")
    op.drop_index("ix_session_status_id", "diagnosis_session")
