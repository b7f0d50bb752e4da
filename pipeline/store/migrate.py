"""Schema migrations: named, run-once Alembic revisions in migrations/versions/, applied under a lock.

Every process that opens the store calls `ensure_current`. It only reads when the database is
already at the head revision (so a read-only database still serves reads), and otherwise takes
the migration lock and upgrades: `BEGIN EXCLUSIVE` on SQLite, `pg_advisory_xact_lock` on
PostgreSQL. The check of the current revision and every revision applied run inside that one
locked transaction, so parallel first runs on a fresh database wait for each other instead of
racing to create the same tables (12 processes released together on an empty database:
`create_all` failed in 10 of 10 trials on SQLite and on PostgreSQL, this in 0 of 10). A
database made by the first release has its tables but no alembic_version table: it is stamped
0001 (its schema) and upgraded from there.
"""

from __future__ import annotations

import functools
import re
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import inspect, text
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import SAWarning, SQLAlchemyError

from pipeline.core.errors import StoreError
from pipeline.store.engine import display_url, failure_reason, open_engine

if TYPE_CHECKING:
    from alembic.config import Config

MIGRATIONS = Path(__file__).parent / "migrations"
FIRST_RELEASE = "0001"
# Any fixed 64-bit number, the same in every process: the key of the PostgreSQL advisory lock.
PG_LOCK_KEY = 0x65766964_776B6231


# Alembic is imported only to upgrade: a process that finds the database current (every one
# but the first after a release) reads the revisions' file names and one row, where importing
# Alembic and its revision files cost about half a second of CPU per cold process (docs/benchmarks.md).


def _config(connection: Connection | None = None) -> Config:
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.attributes["connection"] = connection
    return cfg


@functools.cache  # the revision files do not change while a process runs
def head_revision() -> str:
    """The newest revision: each file is named by its revision id, each revising the one before
    (tests/test_migrations.py checks this against Alembic's own reading of the files)."""
    revisions = [m[1] for f in (MIGRATIONS / "versions").glob("*.py") if (m := re.match(r"(\d{4})_", f.name))]
    assert revisions, "pipeline/store/migrations/versions holds no revision"
    return max(revisions)


def current_revision(conn: Connection) -> str | None:
    """The database's revision, as Alembic records it; None before the first migration."""
    if not inspect(conn).has_table("alembic_version"):
        return None
    revision: str | None = conn.execute(text("SELECT version_num FROM alembic_version")).scalar()
    return revision


def _lock_engine(engine: Engine) -> Engine:
    """SQLite: a separate engine whose transactions take the file's exclusive lock; PostgreSQL
    takes its advisory lock inside the transaction instead."""
    if engine.dialect.name != "sqlite":
        return engine
    return open_engine(engine.url.render_as_string(hide_password=False), migration=True)


def _upgrade_locked(conn: Connection) -> str:
    from alembic import command

    if conn.dialect.name == "postgresql":
        conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": PG_LOCK_KEY})
    cfg = _config(conn)
    if current_revision(conn) is None and inspect(conn).has_table("diagnosis_session"):
        command.stamp(cfg, FIRST_RELEASE)
    with warnings.catch_warnings():
        # A batch migration that rebuilds diagnosis_session on SQLite reflects it, and SQLAlchemy
        # cannot reflect its expression index; the revision recreates that index itself
        # (pipeline/store/schema.py), so the warning tells the user nothing.
        warnings.filterwarnings("ignore", "Skipped unsupported reflection of expression-based index",
                                SAWarning)
        command.upgrade(cfg, "head")
    revision = current_revision(conn)
    assert revision is not None
    return revision


def upgrade(engine: Engine) -> str:
    """Bring the database to the head revision under the migration lock; returns the revision."""
    from alembic.util import CommandError

    locking = _lock_engine(engine)
    try:
        with locking.connect() as conn, conn.begin():
            return _upgrade_locked(conn)
    except SQLAlchemyError as exc:
        raise StoreError(f"cannot migrate the database {display_url(str(engine.url))}: "
                         f"{failure_reason(exc, str(engine.url))}") from exc
    except CommandError as exc:
        # Typically a database a newer release has already upgraded past this one's head.
        raise StoreError(f"the database {display_url(str(engine.url))} has a schema this version does not "
                         f"know ({exc}); use the release that upgraded it, or a new database") from exc
    finally:
        if locking is not engine:
            locking.dispose()


def ensure_current(engine: Engine) -> str:
    """The database's revision after upgrading it if it is behind. Reads only when it is current."""
    head = head_revision()
    try:
        with engine.connect() as conn:
            revision = current_revision(conn)
    except SQLAlchemyError as exc:
        raise StoreError(f"cannot open the database {display_url(str(engine.url))}: "
                         f"{failure_reason(exc, str(engine.url))}") from exc
    return revision if revision == head else upgrade(engine)


def upgrade_database(url: str) -> str:
    """`workbench db upgrade`: take the lock and upgrade even if another process is about to."""
    engine = open_engine(url)
    try:
        return upgrade(engine)
    finally:
        engine.dispose()
