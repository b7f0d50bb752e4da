"""Alembic migrations of the store; `pipeline.store.migrate` runs them (no alembic.ini)."""
