"""A verdict_in_force row without a version of its own: judged under `rules_in_force.judged_version`.

The re-judge after an apply or a rollback wrote every row it kept, if only to change its
`rules_version`: after a threshold move nearly every row holds the outcome it held, and
rewriting a million of them was most of the re-judge's write (docs/benchmarks.md). The
re-judge now leaves `rules_version` NULL, so the pointer it moves in the same transaction
names the version of all of them, and writes only the rows whose outcome changes. A session
judged late (rulebook.judge_late) still names its version on its row. Existing rows keep theirs.

Revision ID: 0017
Revises: 0016
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("verdict_in_force") as batch:
        batch.alter_column("rules_version", existing_type=sa.Integer(), nullable=True)


def downgrade() -> None:
    op.execute("UPDATE verdict_in_force SET rules_version = (SELECT judged_version FROM rules_in_force WHERE id = 1) "
               "WHERE rules_version IS NULL")
    with op.batch_alter_table("verdict_in_force") as batch:
        batch.alter_column("rules_version", existing_type=sa.Integer(), nullable=False)
