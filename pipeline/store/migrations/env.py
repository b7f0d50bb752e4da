"""Alembic environment: runs on the connection `pipeline.store.migrate` opened and locked.

The caller already holds the migration lock inside an open transaction, so every revision it
applies commits or rolls back together with the stamp (SQLite and PostgreSQL both have
transactional DDL). There is no offline (SQL script) mode: the store migrates itself.
"""

from __future__ import annotations

from alembic import context

from pipeline.store.schema import Base

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("run migrations through pipeline.store.migrate (`workbench db upgrade`), not the alembic CLI")

# render_as_batch: SQLite cannot ALTER a column's type, so revisions use batch_alter_table,
# which copies the table on SQLite and is a plain ALTER on PostgreSQL.
context.configure(connection=connection, target_metadata=Base.metadata, render_as_batch=True, compare_type=True)
with context.begin_transaction():
    context.run_migrations()
