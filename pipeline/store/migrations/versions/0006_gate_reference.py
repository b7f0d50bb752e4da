"""Reference outcomes for the columnar replay (pipeline/gatekeeper/columns.py, same_as_reference).

gate_session rows gain the outcome under the rules they were written with, gate_reference holds
those rules' frame fingerprint and thresholds, and gate_binding rows gain the lowest entity
change point and their count. Rows written before have none: their sessions take the exact
per-session path until a rewrite gives them one.

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
    with op.batch_alter_table("gate_session") as batch:
        for name in ("ref_key", "ref_status", "ref_verdict", "ref_rules"):
            batch.add_column(sa.Column(name, sa.Text()))
    with op.batch_alter_table("gate_binding") as batch:
        batch.add_column(sa.Column("entity_low", sa.Float()))
        batch.add_column(sa.Column("entity_points", sa.Integer()))


def downgrade() -> None:
    with op.batch_alter_table("gate_binding") as batch:
        batch.drop_column("entity_points")
        batch.drop_column("entity_low")
    with op.batch_alter_table("gate_session") as batch:
        for name in ("ref_rules", "ref_verdict", "ref_key", "ref_status"):
            batch.drop_column(name)
    op.drop_table("gate_reference")
