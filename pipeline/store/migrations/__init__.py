"""Alembic migrations of the store; `pipeline.store.migrate` runs them (there is no alembic.ini).

To change the schema: edit pipeline/store/schema.py, then add versions/NNNN_what.py whose
`down_revision` is the current head, written out by hand with `op` calls (batch_alter_table
for column changes, which SQLite needs). tests/test_migrations.py compares the models with the
upgraded database on SQLite and PostgreSQL and prints what a missing revision would have to do.
"""
