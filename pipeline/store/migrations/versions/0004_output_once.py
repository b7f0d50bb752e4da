"""A tool output is stored once per session: `output_sha256` finds a repeat, `output_of` points at it.

The offline collector (and any agent repeating a call) stored the same 10 MB output twice in one
session. A repeated output now keeps its own invocation row (its id, arguments, latency: every
call stays evidence) with an empty `output` and `output_of` = the row holding the text; the
store's reads put the text back, so no reader sees the difference.

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("tool_invocation") as batch:
        batch.add_column(sa.Column("output_sha256", sa.Text()))
        batch.add_column(sa.Column("output_of", sa.Integer()))
        batch.create_index("ix_tool_invocation_output_once", ["session_id", "output_sha256"])


def downgrade() -> None:
    with op.batch_alter_table("tool_invocation") as batch:
        batch.drop_index("ix_tool_invocation_output_once")
        batch.drop_column("output_of")
        batch.drop_column("output_sha256")
