"""The audit record is named for what it holds: column `self_evaluation` -> `audit`, and inside it
the last round's record `verifier_evaluation` -> `round_audit` (contracts.RoundAudit: the whole
round's audit, gatekeeper, composer and coverage included, not the verifier's evaluation).

The key is renamed in place with each backend's JSON functions, the rest of each record left as
it was: SQLite's json_extract hands objects and arrays to json_set as JSON and strings as strings;
PostgreSQL rebuilds the object from json_each in its key order (a json column, not jsonb, so
nothing is normalised). Records that are not JSON objects or lack the key are not touched.

Revision ID: 0016
Revises: 0015
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def _rename_key(old: str, new: str) -> str:
    if op.get_bind().dialect.name == "sqlite":
        return f"""
            UPDATE diagnosis_session
            SET audit = json_set(json_remove(audit, '$.{old}'), '$.{new}', json_extract(audit, '$.{old}'))
            WHERE CASE WHEN json_valid(audit) AND json_type(audit) = 'object'
                THEN json_type(audit, '$.{old}') IS NOT NULL ELSE 0 END
        """
    return f"""
        UPDATE diagnosis_session
        SET audit = (SELECT json_object_agg(CASE WHEN e.key = '{old}' THEN '{new}' ELSE e.key END, e.value)
                     FROM json_each(audit) AS e)
        WHERE json_typeof(audit) = 'object' AND (audit -> '{old}') IS NOT NULL
    """


def upgrade() -> None:
    op.execute(sa.text("ALTER TABLE diagnosis_session RENAME COLUMN self_evaluation TO audit"))
    op.execute(sa.text(_rename_key("verifier_evaluation", "round_audit")))


def downgrade() -> None:
    op.execute(sa.text(_rename_key("round_audit", "verifier_evaluation")))
    op.execute(sa.text("ALTER TABLE diagnosis_session RENAME COLUMN audit TO self_evaluation"))
