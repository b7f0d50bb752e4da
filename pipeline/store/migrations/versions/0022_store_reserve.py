"""`store_reserve` on PostgreSQL: space held back in the database's own tablespace, given up
(TRUNCATE, which a full disk still allows) when a write finds the disk full, so the failing
session can still record why on its row. On an already full disk the new session's row could fit
in a page where its failure's update then found no room: the row stayed `running`. Filled and
emptied by pipeline/store/repo.py (Store); SQLite keeps its reserve in a file beside the database.

Revision ID: 0022
Revises: 0021
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.create_table("store_reserve", sa.Column("n", sa.BigInteger()))


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.drop_table("store_reserve")
