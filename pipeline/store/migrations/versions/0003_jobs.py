"""Sessions as jobs: a heartbeat lease, the trigger that started a session, stage events, job rows.

Before this, a session ran inside the process that asked and a killed process left its row
`running` for ever; nothing but a person could start one. pipeline/jobs queues sessions
(status `queued`), keeps a lease on running ones (`heartbeat_at`) so the reaper can mark a dead
worker's session `interrupted`, records what started it (`trigger`, `trigger_key` for
Alertmanager groups) and which session it runs again (`rerun_of`). `session_event` lets a page
follow a run it did not start; `job` holds eval runs and batch checks.

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("diagnosis_session") as batch:
        batch.add_column(sa.Column("heartbeat_at", sa.DateTime(timezone=True)))
        batch.add_column(sa.Column("trigger", sa.JSON()))
        batch.add_column(sa.Column("trigger_key", sa.Text()))
        batch.add_column(sa.Column("rerun_of", sa.Text()))
        batch.create_index("ix_diagnosis_session_trigger_key", ["trigger_key"])
        batch.create_index("ix_diagnosis_session_rerun_of", ["rerun_of"])
    op.create_table(
        "session_event",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("session_id", sa.Text(), sa.ForeignKey("diagnosis_session.id", ondelete="CASCADE"), nullable=False),
        sa.Column("stage", sa.Text(), nullable=False),
        sa.Column("data", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_session_event_session_id", "session_event", ["session_id"])
    op.create_table(
        "job",
        sa.Column("id", sa.Text(), primary_key=True),
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("args", sa.JSON(), nullable=False),
        sa.Column("status", sa.Text(), nullable=False),
        sa.Column("result", sa.JSON()),
        sa.Column("error", sa.Text()),
        sa.Column("heartbeat_at", sa.DateTime(timezone=True)),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True)),
    )
    op.create_index("ix_job_status", "job", ["status"])


def downgrade() -> None:
    op.drop_index("ix_job_status", table_name="job")
    op.drop_table("job")
    op.drop_index("ix_session_event_session_id", table_name="session_event")
    op.drop_table("session_event")
    with op.batch_alter_table("diagnosis_session") as batch:
        batch.drop_index("ix_diagnosis_session_rerun_of")
        batch.drop_index("ix_diagnosis_session_trigger_key")
        for column in ("rerun_of", "trigger_key", "trigger", "heartbeat_at"):
            batch.drop_column(column)
