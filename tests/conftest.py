"""Shared fixtures: an isolated workbench home per test, stores on SQLite and PostgreSQL."""

from __future__ import annotations

import gc
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import require

from pipeline.core.config import ROOT, Settings, load_settings
from pipeline.store import Store


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
