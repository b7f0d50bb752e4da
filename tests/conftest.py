"""Shared fixtures: an isolated workbench home per test, stores on SQLite and PostgreSQL."""

from __future__ import annotations

import atexit
import gc
import os
import shutil
import sqlite3
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest
from helpers import require

from pipeline.core.config import ROOT, Settings, load_settings
from pipeline.store import Store, migrate


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """The fast lane (`-m "not slow"`) runs on every core (pytest-xdist), unless `-n` says otherwise.

    Its tests are in-process and isolated (a home, a database or a schema each), so they need no
    ordering; the full run stays in one process, where the server and browser tests own their ports.
    A file's tests go to one worker (unless `--dist` says otherwise): its module-scoped fixtures (a
    seeded history, the grounding corpus's table, parsed rules) are then built once, not per worker.
    """
    if (config.getoption("markexpr", "") == "not slow" and config.pluginmanager.hasplugin("xdist")
            and config.getoption("numprocesses", None) is None and "PYTEST_XDIST_WORKER" not in os.environ):
        config.option.numprocesses = "auto"
        if config.getoption("dist", "no") == "no":
            config.option.dist = "loadfile"


_MIGRATE = migrate.upgrade
_TEMPLATE: list[Path] = []  # this process's SQLite database at head, made by the real migrations


def _migrated_template() -> Path:
    if not _TEMPLATE:
        folder = tempfile.mkdtemp(prefix="wb-template-")
        atexit.register(shutil.rmtree, folder, True)
        path = Path(folder) / "head.db"
        engine = migrate.open_engine(f"sqlite:///{path}")
        try:
            _MIGRATE(engine)
        finally:
            engine.dispose()
        _TEMPLATE.append(path)
    return _TEMPLATE[0]


def _upgrade_from_template(engine):  # type: ignore[no-untyped-def]
    """A new, empty SQLite file gets the pages of one made by the real migrations in this process
    (SQLite's backup API); anything else migrates for real. Running every revision again for each
    test's fresh store was a quarter of the fast lane's CPU; the migrations themselves are
    tests/test_migrations.py's, which opts out."""
    path = engine.url.database
    if engine.dialect.name != "sqlite" or not path or path == ":memory:":
        return _MIGRATE(engine)
    try:
        # Closed here: a sqlite3 connection sits in a reference cycle (its statement cache) on
        # Python 3.11 and would keep the file open, its write-ahead log unmerged, until a GC pass.
        with closing(sqlite3.connect(path)) as target:
            if target.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]:
                return _MIGRATE(engine)
            with closing(sqlite3.connect(_migrated_template())) as source:
                source.backup(target)
    except sqlite3.Error:  # not a database, a read-only place...: the real path says so as users see it
        return _MIGRATE(engine)
    return migrate.head_revision()


@pytest.fixture(autouse=True)
def _fresh_sqlite_from_template(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    if request.node.get_closest_marker("real_migrations") is None:
        monkeypatch.setattr(migrate, "upgrade", _upgrade_from_template)


def pytest_collection_finish(session: pytest.Session) -> None:
    """What is alive once the tests are collected (modules, classes, the test functions) lives as
    long as the run: frozen, the collector's full passes no longer scan it after every test's
    garbage. Collections still run; nothing a test makes is frozen."""
    gc.collect()
    gc.freeze()


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKBENCH_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("WORKBENCH_CONFIG", str(tmp_path / "no-config.yaml"))
    for var in ("DATABASE_URL", "OPENAI_BASE_URL", "OPENAI_API_KEY", "OPENAI_MODEL", "WORKBENCH_PROVIDER",
                "WORKBENCH_MODEL", "PROMETHEUS_URL", "LOKI_URL", "WORKBENCH_LOG_DIR", "WORKBENCH_RUNBOOK_DIR",
                "PROMETHEUS_BEARER_TOKEN", "LOKI_BEARER_TOKEN", "WORKBENCH_NOTIFY_URL", "WORKBENCH_WEBHOOK_TOKEN"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def settings() -> Settings:
    return load_settings()


@pytest.fixture
def store(settings: Settings) -> Store:
    return Store(settings.db_url)


def postgres_url() -> str | None:
    return os.environ.get("DATABASE_URL_TEST")


@pytest.fixture(params=["sqlite", "postgresql"])
def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """The same store tests against SQLite and against a real PostgreSQL (fresh schema each time)."""
    if request.param == "sqlite":
        yield Store(f"sqlite:///{tmp_path / 'wb.db'}")
        return
    url = postgres_url()
    require(bool(url), "PostgreSQL (DATABASE_URL_TEST)")
    from sqlalchemy import create_engine, text

    schema = f"t_{uuid.uuid4().hex[:10]}"
    admin = create_engine(url)
    with admin.begin() as conn:
        conn.execute(text(f"CREATE SCHEMA {schema}"))
    store = Store(f"{url}?options=-csearch_path%3D{schema}")
    yield store
    store.engine.dispose()
    with admin.begin() as conn:
        conn.execute(text(f"DROP SCHEMA {schema} CASCADE"))
    admin.dispose()


@pytest.fixture
def repo_root() -> Path:
    return ROOT
