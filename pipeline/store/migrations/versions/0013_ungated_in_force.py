"""Whether a session's verdict in force was judged ungated.

A re-judge under a rules version with the gatekeeper or an evidence rule off or warn-only
(RuleSet.ungated_by) can turn a REJECT at ask into a PASS in force; that PASS must say
"ungated" wherever it is shown, as a verdict at ask judged so does (`diagnosis_session.ungated`,
migration 0010). Rows written before this revision keep the default, false.

Revision ID: 0013
Revises: 0012
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("verdict_in_force", sa.Column("ungated", sa.Boolean(), nullable=False, server_default=sa.false()))


def downgrade() -> None:
    with op.batch_alter_table("verdict_in_force") as batch:
        batch.drop_column("ungated")
