"""Imported sessions' provenance and ungated verdicts.

`provenance` is NULL for a session run here and "verified" / "unverified" for an import
(pipeline/bundles/provenance.py): an unverified one needs a person whatever its re-verified verdict, so
the review queue's condition reads the column and both listing indexes carry it (rebuilt here).
Sessions imported before this revision had no signature to check: they become "unverified".

`ungated` marks a verdict given with the gatekeeper or an evidence rule switched off or
warn-only (RuleSet.ungated_by). Earlier sessions did not record their rules' switches; they
keep the default, false.

Revision ID: 0010
Revises: 0009
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

# As pipeline/store/schema.py renders them (see 0007 for why SQLite's leads with expressions).
_LISTING = ["date(created_at)", "verdict", "CAST(failed_rules AS TEXT)", "CAST(groundedness * 10 AS INTEGER)",
            "status", "gatekeeper_status", "composer_findings", "provenance", "created_at", "id"]
_LISTING_PG = ["created_at", "verdict", "status", "gatekeeper_status", "composer_findings", "provenance",
               "groundedness", "id"]
_LISTING_0007 = [e for e in _LISTING if e != "provenance"]
_LISTING_PG_0007 = [c for c in _LISTING_PG if c != "provenance"]


def _listing_index(columns: list[str], pg_columns: list[str]) -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.drop_index("ix_session_listing", "diagnosis_session")
        op.create_index("ix_session_listing", "diagnosis_session", [sa.text(e) for e in columns])
    else:
        op.drop_index("ix_session_listing_pg", "diagnosis_session")
        op.create_index("ix_session_listing_pg", "diagnosis_session", pg_columns, postgresql_include=["failed_rules"])


def upgrade() -> None:
    op.add_column("diagnosis_session", sa.Column("provenance", sa.Text(), nullable=True))
    op.add_column("diagnosis_session", sa.Column("ungated", sa.Boolean(), nullable=False, server_default=sa.false()))
    op.execute(sa.text("UPDATE diagnosis_session SET provenance = 'unverified' WHERE stage = 'imported'"))
    _listing_index(_LISTING, _LISTING_PG)


def downgrade() -> None:
    _listing_index(_LISTING_0007, _LISTING_PG_0007)
    with op.batch_alter_table("diagnosis_session") as batch:
        batch.drop_column("ungated")
        batch.drop_column("provenance")
