"""The seed's names back in the stored audit record: column `audit` -> `self_evaluation`, and
inside it `round_audit` -> `verifier_evaluation`, so that the path the seed fixes,
diagnosis_session.self_evaluation.verifier_evaluation.gatekeeper_result, is the path stored and
exported (revision 0016 had renamed both for what they hold; Python names may say that, the
contract keeps the seed's).

Only the key is renamed, with each backend's JSON functions, the rest of each record as it was
(see revision 0016 for how each backend keeps it).

Revision ID: 0018
Revises: 0017
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def _rename_key(column: str, old: str, new: str) -> str:
    if op.get_bind().dialect.name == "sqlite":
        return f"""
            UPDATE diagnosis_session
            SET {column} = json_set(json_remove({column}, '$.{old}'), '$.{new}', json_extract({column}, '$.{old}'))
            WHERE CASE WHEN json_valid({column}) AND json_type({column}) = 'object'
                THEN json_type({column}, '$.{old}') IS NOT NULL ELSE 0 END
        """
    return f"""
        UPDATE diagnosis_session
        SET {column} = (SELECT json_object_agg(CASE WHEN e.key = '{old}' THEN '{new}' ELSE e.key END, e.value)
                        FROM json_each({column}) AS e)
        WHERE json_typeof({column}) = 'object' AND ({column} -> '{old}') IS NOT NULL
    """


def upgrade() -> None:
    op.execute(sa.text("ALTER TABLE diagnosis_session RENAME COLUMN audit TO self_evaluation"))
    op.execute(sa.text(_rename_key("self_evaluation", "round_audit", "verifier_evaluation")))


def downgrade() -> None:
    op.execute(sa.text(_rename_key("self_evaluation", "verifier_evaluation", "round_audit")))
    op.execute(sa.text("ALTER TABLE diagnosis_session RENAME COLUMN self_evaluation TO audit"))
