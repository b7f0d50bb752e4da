"""Persistence: SQLAlchemy 2 store for sessions and their whole audit chain."""

from pipeline.store.repo import SessionFilter, StaleRuleVersion, Store

__all__ = ["SessionFilter", "StaleRuleVersion", "Store"]
