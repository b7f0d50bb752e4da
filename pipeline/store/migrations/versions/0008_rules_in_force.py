"""One rule version in force, kept so by the database: the single-row `rules_in_force` pointer.

Before, each rule_version row carried an `active` flag and an apply cleared the old flag and set
a new one. Two applies started from the same version could both land: on PostgreSQL with no
version yet (SELECT ... FOR UPDATE over no row locks nothing), on SQLite when the loser tried
again; two versions were then active and every read of the rules in force failed. Now an apply
moves the one pointer from the version it started from to the new one in a single UPDATE whose
WHERE names the old version: the database serialises the updates of that row, and every apply
after the first finds it moved and is refused. Version 0 is the shipped rules/ directory.

A store that the old race left with two active versions keeps the newest of them.

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "rules_in_force",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("version", sa.Integer(), nullable=False, server_default="0"),
        sa.CheckConstraint("id = 1", name="ck_rules_in_force_one_row"),
    )
    op.execute("INSERT INTO rules_in_force (id, version) "
               "SELECT 1, coalesce(max(id), 0) FROM rule_version WHERE active = true")
    op.drop_index("ix_rule_version_active", "rule_version")
    with op.batch_alter_table("rule_version") as batch:
        batch.drop_column("active")


def downgrade() -> None:
    with op.batch_alter_table("rule_version") as batch:
        batch.add_column(sa.Column("active", sa.Boolean(), nullable=False, server_default=sa.false()))
    op.execute("UPDATE rule_version SET active = true WHERE id = (SELECT version FROM rules_in_force WHERE id = 1)")
    op.create_index("ix_rule_version_active", "rule_version", ["active"])
    op.drop_table("rules_in_force")
