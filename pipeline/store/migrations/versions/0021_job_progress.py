"""Eval runs as jobs that a page follows and stops: `job.progress_done` / `job.progress_total`
(fixtures run of the suite's), and `job.cancel_requested_at` (a person asked it to stop; the run
stops after the fixture in hand and is recorded `cancelled` with the sessions it made).

Before this the Eval page ran the suite in its own script run: any click threw the run away and
left its sessions stored with no run to belong to.

Revision ID: 0021
Revises: 0020
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("job") as batch:
        batch.add_column(sa.Column("progress_done", sa.Integer()))
        batch.add_column(sa.Column("progress_total", sa.Integer()))
        batch.add_column(sa.Column("cancel_requested_at", sa.DateTime(timezone=True)))


def downgrade() -> None:
    with op.batch_alter_table("job") as batch:
        batch.drop_column("cancel_requested_at")
        batch.drop_column("progress_total")
        batch.drop_column("progress_done")
