"""Each llm_call row says on what terms the endpoint answered: the JSON mode it accepted and why
the reply stopped.

A reply cut at the stage's output cap (`finish_reason` "length") is a different failure from a
malformed one, and which `response_format` an endpoint took (json_schema, json_object, or the
prompt alone) explains most of a local model's parse failures; both were only in error strings.
Existing rows keep NULL: their terms were not recorded.

Revision ID: 0012
Revises: 0011
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("llm_call") as batch:
        batch.add_column(sa.Column("json_mode", sa.Text()))
        batch.add_column(sa.Column("finish_reason", sa.Text()))


def downgrade() -> None:
    with op.batch_alter_table("llm_call") as batch:
        batch.drop_column("finish_reason")
        batch.drop_column("json_mode")
