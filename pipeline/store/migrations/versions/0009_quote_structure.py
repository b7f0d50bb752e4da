"""Quotes found by structure: gate_binding.out_gap becomes out_split.

A quote used to count as found when its words occurred in order within a gap of output; the
stored number was that widest gap. A quote is now found by structure (docs/spec.md#quote-fidelity):
one span of a record, or pieces split between adjacent records, and the stored number is the
weight of the lightest such piece (0: one span), which the rule's minPieceWeight reads. A gap
says nothing about a piece's weight, so the old values are cleared: NULL reads as 0, as the
per-session replay reads a stored feature record that has no `split`, so both replays keep
judging a session stored before this release by the facts it was stored with.

Applied rule versions name the rule's parameters; `maxPieceGap` becomes `minPieceWeight` at its
shipped value in each of them, so an applied version still loads.

Revision ID: 0009
Revises: 0008
"""

from __future__ import annotations

import re

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


_OLD, _NEW = "maxPieceGap: 320", "minPieceWeight: 16"


def _rename_param(old: re.Pattern[str], new: str) -> None:
    conn = op.get_bind()
    rows = conn.execute(sa.text("SELECT id, metadata_yaml FROM rule_version")).all()
    for row_id, text in rows:
        changed = old.sub(new, text)
        if changed != text:
            conn.execute(sa.text("UPDATE rule_version SET metadata_yaml = :y WHERE id = :i"), {"y": changed, "i": row_id})


def upgrade() -> None:
    with op.batch_alter_table("gate_binding") as batch:
        batch.alter_column("out_gap", new_column_name="out_split", existing_type=sa.Integer())
    op.execute("UPDATE gate_binding SET out_split = NULL")
    _rename_param(re.compile(r"maxPieceGap:[ \t]*\d+"), _NEW)


def downgrade() -> None:
    with op.batch_alter_table("gate_binding") as batch:
        batch.alter_column("out_split", new_column_name="out_gap", existing_type=sa.Integer())
    op.execute("UPDATE gate_binding SET out_gap = NULL")
    _rename_param(re.compile(r"minPieceWeight:[ \t]*\d+"), _OLD)
