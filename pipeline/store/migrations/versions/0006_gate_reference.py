"""Reference outcomes and claim standings for the columnar replay (pipeline/gatekeeper/columns.py).

gate_session rows gain the outcome under the rules they were written with (gate_reference holds
those rules' frame fingerprint and thresholds), whether their claims can be judged in arrays and
the verdict floor of their coverage and tool calls; gate_binding rows gain the lowest entity
change point, their count and the findings' levels; gate_claim holds each claim's standing in
the verdict matrix; sessions, claims and bindings gain the text rules' findings as bits. Rows written before have none: their sessions take the exact per-session
path until a rewrite gives them these.

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
    op.create_table(
        "gate_reference",
        sa.Column("key", sa.Text(), primary_key=True),
        sa.Column("frame_key", sa.Text(), nullable=False),
        sa.Column("thresholds", sa.JSON(), nullable=False),
    )
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
        for name in ("ref_key", "ref_status", "ref_verdict", "ref_rules", "evidence_floor"):
            batch.add_column(sa.Column(name, sa.Text()))
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
        for name in ("text_fail", "text_has", "claims_ok", "evidence_floor", "ref_rules", "ref_verdict", "ref_key", "ref_status"):
            batch.drop_column(name)
    op.drop_table("gate_claim")
    op.drop_table("gate_reference")
