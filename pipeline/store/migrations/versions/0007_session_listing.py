"""The Sessions page at a million sessions: `composer_findings` and a listing index.

`composer_findings` says whether a session's audit record holds findings of the composer stage
(docs/spec.md#audit-record): claims the composer-input filter kept from the answer
(`composer_filtered`) or a composer guard that fell back to the fixed template
(`composer_guard.used_template`). A PASS with such findings needs a person (pipeline/runs/review_queue.py);
the page found them by reading every session's JSON (once per server), now it reads this
column. The store sets it whenever `self_evaluation` is written;
here it is backfilled from the stored JSON with each backend's JSON functions. Only the rows
that have findings are rewritten: the column's default is false.

Both backends get an index holding every column the queue's conditions and charts read, so its
counts and charts scan the index instead of the table rows (the JSON audit record runs to ~15 KB
a session). SQLite's `ix_session_listing` leads with the chart groups (day, verdict, failed-rule
list, groundedness tenth) as the query computes them, so they come off it in order, unsorted.
PostgreSQL can index neither a json column nor date() of a timestamptz: `ix_session_listing_pg`
holds the plain columns with failed_rules as a payload, and the groups are hashed (an
index-only scan once vacuum has marked the heap's pages all-visible;
docs/benchmarks.md#figures-behind-choices-in-the-code).

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
_LISTING_PG = ["created_at", "verdict", "status", "gatekeeper_status", "composer_findings", "groundedness", "id"]


def upgrade() -> None:
    dialect = op.get_bind().dialect.name
    op.add_column("diagnosis_session",
                  sa.Column("composer_findings", sa.Boolean(), nullable=False, server_default=sa.false()))
    op.execute(sa.text(_FINDINGS[dialect]))
    if dialect == "sqlite":
        op.create_index("ix_session_listing", "diagnosis_session", [sa.text(e) for e in _LISTING])
    else:
        op.create_index("ix_session_listing_pg", "diagnosis_session", _LISTING_PG, postgresql_include=["failed_rules"])


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.drop_index("ix_session_listing", "diagnosis_session")
    else:
        op.drop_index("ix_session_listing_pg", "diagnosis_session")
    with op.batch_alter_table("diagnosis_session") as batch:
        batch.drop_column("composer_findings")
