"""The Sessions page at a million sessions: `composer_findings`, and a listing index on SQLite.

`composer_findings` says whether a session's audit record holds findings of the composer stage
(docs/spec.md#audit-record): claims the composer-input filter kept from the answer
(`composer_filtered`) or a composer guard that fell back to the fixed template
(`composer_guard.used_template`). A PASS with such findings needs a person (pipeline/queue.py);
the page found them by reading every session's JSON (seconds at 10,000 sessions, once per
server), now it reads this column. The store sets it whenever `self_evaluation` is written;
here it is backfilled from the stored JSON with each backend's JSON functions. Only the rows
that have findings are rewritten: the column's default is false.

SQLite gets `ix_session_listing`: the queue's chart groups (day, verdict, failed-rule list,
groundedness tenth) as the query computes them, then every column its conditions read. Its
counts and charts are then one pass over the index in group order: no table row (the JSON audit
record runs to ~15 KB a session) and no sort. PostgreSQL cannot index a json column in a btree
nor date() of a timestamptz, and does not need to: a parallel sequential scan with hashed
groups serves the charts, the created_at index the first page.

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

# The same test as pipeline/store/repo.py composer_findings(), in each backend's JSON functions.
_FINDINGS = {
    "sqlite": """
        UPDATE diagnosis_session SET composer_findings = 1
        WHERE self_evaluation IS NOT NULL AND CASE WHEN json_valid(self_evaluation) THEN
            json_extract(self_evaluation, '$.verifier_evaluation.composer_guard.used_template') = 1
            OR json_array_length(self_evaluation, '$.verifier_evaluation.composer_filtered') > 0
        ELSE 0 END
    """,
    "postgresql": """
        UPDATE diagnosis_session SET composer_findings = true
        WHERE (self_evaluation #>> '{verifier_evaluation,composer_guard,used_template}') = 'true'
        OR CASE WHEN json_typeof(self_evaluation #> '{verifier_evaluation,composer_filtered}') = 'array'
            THEN json_array_length(self_evaluation #> '{verifier_evaluation,composer_filtered}') > 0
            ELSE false END
    """,
}
# As pipeline/store/schema.py LISTING_GROUPS renders them on SQLite: the planner uses the index
# only for these very expressions.
_LISTING = ["date(created_at)", "verdict", "CAST(failed_rules AS TEXT)", "CAST(groundedness * 10 AS INTEGER)",
            "status", "gatekeeper_status", "composer_findings", "created_at", "id"]


def upgrade() -> None:
    dialect = op.get_bind().dialect.name
    op.add_column("diagnosis_session",
                  sa.Column("composer_findings", sa.Boolean(), nullable=False, server_default=sa.false()))
    op.execute(sa.text(_FINDINGS[dialect]))
    if dialect == "sqlite":
        op.create_index("ix_session_listing", "diagnosis_session", [sa.text(e) for e in _LISTING])


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.drop_index("ix_session_listing", "diagnosis_session")
    with op.batch_alter_table("diagnosis_session") as batch:
        batch.drop_column("composer_findings")
