"""The verdict in force beside the verdict at ask (design Law 11).

A session's own columns (`verdict`, `gatekeeper_status`, `failed_rules`) stay what the rules of
its ask decided, and `rules_version` now names that version (NULL: stored before this revision,
or judged by rules that were never applied here, such as an eval run's candidate). Applying or
rolling back rules re-judges the stored sessions (pipeline/runs/rulebook.py): a session whose outcome
under the version in force differs from its outcome at ask gets a `verdict_in_force` row.
Rows, not updated session columns: a session row carries its ~15 KB audit record, and SQLite
rewrites the whole record to change one column, where a row of a narrow table is a few bytes
(docs/benchmarks.md#figures-behind-choices-in-the-code). Sessions without a row keep their
verdict at ask, judged again under `rules_in_force.judged_version` or asked under a later version.

`rules_in_force` also says how far the re-judge under the version in force has come, for every
page and replica to show.

Revision ID: 0011
Revises: 0010
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("diagnosis_session", sa.Column("rules_version", sa.Integer()))
    op.create_table(
        "verdict_in_force",
        sa.Column("session_id", sa.Text(), sa.ForeignKey("diagnosis_session.id", ondelete="CASCADE"),
                  primary_key=True),
        sa.Column("verdict", sa.Text(), nullable=False),
        sa.Column("gatekeeper_status", sa.Text(), nullable=False),
        sa.Column("failed_rules", sa.JSON(), nullable=False),
        sa.Column("rules_version", sa.Integer(), nullable=False),
    )
    with op.batch_alter_table("rules_in_force") as batch:
        batch.add_column(sa.Column("judged_version", sa.Integer()))
        batch.add_column(sa.Column("judging_version", sa.Integer()))
        batch.add_column(sa.Column("judging_phase", sa.Text()))
        batch.add_column(sa.Column("judging_done", sa.Integer(), nullable=False, server_default="0"))
        batch.add_column(sa.Column("judging_total", sa.Integer(), nullable=False, server_default="0"))
        batch.add_column(sa.Column("judging_at", sa.DateTime(timezone=True)))


def downgrade() -> None:
    with op.batch_alter_table("rules_in_force") as batch:
        for column in ("judging_at", "judging_total", "judging_done", "judging_phase", "judging_version",
                       "judged_version"):
            batch.drop_column(column)
    op.drop_table("verdict_in_force")
    with op.batch_alter_table("diagnosis_session") as batch:
        batch.drop_column("rules_version")
