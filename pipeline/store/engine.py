"""Opening the database: one engine per URL, the same text rules on SQLite and PostgreSQL.

Everything backend-specific about a connection lives here, so the rest of the store writes
plain SQLAlchemy: the driver check (a clear StoreError instead of ModuleNotFoundError), the
SQLite file's directory and pragmas, and text neither backend keeps. PostgreSQL refuses a NUL
character in text (and in json it cannot extract as text) while SQLite stores it, so a NUL from a
model or a bundle failed a session on one backend only; a lone surrogate (a JSON "\\ud800" escape
in a model's reply or a bundle) no driver can encode at all. Here each is replaced with U+FFFD on
every write, on both backends, which keeps the rest of the text and shows where it was.
"""

from __future__ import annotations

import errno
import json
import math
import os
import re
import sqlite3
from pathlib import Path
from typing import Any, Literal, TypedDict

from sqlalchemy import create_engine, event
from sqlalchemy.engine import Connection, Engine, make_url
from sqlalchemy.exc import ArgumentError, InterfaceError, OperationalError
from sqlalchemy.pool import NullPool, Pool

from pipeline.core.errors import StoreError
from pipeline.text.bounds import encodable, unstorable

NUL, REPLACEMENT = "\x00", "\ufffd"
# In JSON text a NUL is the escape \u0000, preceded by an odd number of backslashes (an even
# run is an escaped backslash followed by the literal characters "u0000", which is kept).
_JSON_NUL = re.compile(r"(?<!\\)((?:\\\\)*)\\u0000")
# Seconds a SQLite connection waits for another process's write lock before failing.
SQLITE_BUSY_TIMEOUT = 60


DatabaseFault = Literal["disk_full", "busy", "unreachable"]
# How each backend says its disk is full: SQLite's SQLITE_FULL, PostgreSQL's disk_full (53100) and
# "could not extend file", the operating system's ENOSPC. A new PostgreSQL connection that cannot
# write its relation cache file is refused with only "could not write init file" (no errno).
_DISK_FULL = re.compile(r"database or disk is full|no space left on device|could not extend file|disk full"
                        r"|could not write init file")
# Below this many free bytes a SQLite I/O error is a full disk: a page and its log frame no longer fit.
_LOW_SPACE = 64 * 1024
_BUSY = re.compile(r"database is locked|database table is locked")


def database_fault(exc: BaseException | None) -> DatabaseFault | None:
    """What a database failure is, following the exception's causes: a full disk (waiting will not
    help), a busy SQLite file (another writer kept its lock past the busy timeout) or a database
    that cannot be reached (a dropped connection, a server restarting); None for anything else."""
    seen = exc
    while seen is not None:
        text = str(seen).lower()
        if (isinstance(seen, OSError) and seen.errno == errno.ENOSPC) or _DISK_FULL.search(text) \
                or getattr(seen, "sqlstate", None) == "53100":
            return "disk_full"
        seen = seen.__cause__ or getattr(seen, "orig", None)
    seen = exc
    while seen is not None:
        if isinstance(seen, (OperationalError, InterfaceError)):
            return "busy" if _BUSY.search(str(seen).lower()) else "unreachable"
        seen = seen.__cause__
    return None


def failure_reason(exc: BaseException, url: str) -> str:
    """What a driver error says, "disk full" first where the disk is: PostgreSQL says only what it
    could not do ("could not extend file ..."), and SQLite, naming no errno, says "disk I/O error"
    (it could not grow its -shm index or its log) when the file system has no space left."""
    reason = str(getattr(exc, "orig", None) or exc)
    if database_fault(exc) == "disk_full" and "full" not in reason.lower():
        return f"disk full ({reason})"
    path = sqlite_path(url)
    if path is None or "disk i/o error" not in reason.lower():
        return reason
    try:
        fs = os.statvfs(path.parent)
    except OSError:
        return reason
    # What this process may still write: root may use the blocks reserved for it.
    free = (fs.f_bfree if os.geteuid() == 0 else fs.f_bavail) * fs.f_frsize
    return f"disk full ({reason}; {free} bytes left on {path.parent})" if free < _LOW_SPACE else reason


def clean_text(value: str) -> str:
    return encodable(value.replace(NUL, REPLACEMENT) if NUL in value else value)


def _clean_param(value: Any) -> Any:
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        return {_clean_param(k): _clean_param(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_clean_param(v) for v in value)
    return value


def _json_dumps(value: Any) -> str:
    """Every JSON column's text. A number JSON does not have (NaN, an infinity) is refused here,
    on both backends alike: SQLite would store it and then fail every JSON function over the
    row, PostgreSQL refuses it. What comes from outside is refused before (bounds.loads_bounded)."""
    try:
        text = json.dumps(value, allow_nan=False)
        if "\\ud" in text:  # escaped surrogates: a pair (kept) or a lone one (replaced)
            text = json.dumps(_clean_param(value), allow_nan=False)
    except ValueError as exc:
        raise StoreError(f"refused to store {unstorable(value) or exc}") from exc
    return _JSON_NUL.sub(r"\1\\ufffd", text) if "\\u0000" in text else text


def _json_loads(text: str) -> Any:
    """A JSON column read back. A number no store keeps, in a row written before the writer
    refused them or by hand (PostgreSQL keeps 1e999 in json), reads as null: one such row must
    not fail every reader of the store (pipeline/replay/inputs.py quarantines it)."""
    return json.loads(text, parse_constant=lambda _name: None,
                      parse_float=lambda t: value if math.isfinite(value := float(t)) else None)


def _clean_statement_params(_conn: Any, _cursor: Any, statement: str, parameters: Any, _context: Any,
                            _executemany: bool) -> tuple[str, Any]:
    return statement, _clean_param(parameters)


def display_url(url: str) -> str:
    """The URL for messages: never the password."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return "<unparseable database URL>"


def normalize_url(url: str) -> str:
    """postgres:// and postgresql:// mean the psycopg (3) driver, the one the [postgres] extra installs."""
    for prefix in ("postgres://", "postgresql://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url.removeprefix(prefix)
    return url


def sqlite_path(url: str) -> Path | None:
    """The file behind a SQLite URL, or None for memory databases and URI filenames."""
    database = make_url(url).database
    if not url.startswith("sqlite") or not database or database == ":memory:" or database.startswith("file:"):
        return None
    return Path(database)


def read_only_url(url: str) -> str | None:
    """The read-only URL of a SQLite file this process may not write, so show, export and the
    UI's reads still work; None when the file is writable (or not a file)."""
    path = sqlite_path(url)
    if path is None or not path.exists():
        return None
    directory_writable = os.access(path.parent, os.W_OK)
    if directory_writable and os.access(path, os.W_OK):
        return None
    # A WAL database needs its -shm file beside it; where the directory is read-only too, only
    # immutable=1 (no shared memory, no locks) lets SQLite read it at all. But immutable reads the
    # main file alone: the last commits of a writer that stopped without closing wait in its -wal
    # file, which mode=ro still reads through the -shm the writer left.
    wal = path.with_name(path.name + "-wal")
    pending = wal.exists() and wal.stat().st_size > 0
    flags = "mode=ro" if directory_writable or pending else "mode=ro&immutable=1"
    return f"sqlite:///file:{path.resolve()}?{flags}&uri=true"


def _sqlite_pragmas(dbapi_conn: sqlite3.Connection, _record: Any) -> None:
    # WAL lets the workbench read while a session writes; NORMAL sync keeps the many small
    # stage-by-stage commits cheap (a crash may lose the last commit, never corrupt the file).
    try:
        dbapi_conn.execute("PRAGMA journal_mode=WAL")
        dbapi_conn.execute("PRAGMA synchronous=NORMAL")
    except sqlite3.OperationalError:
        pass  # a read-only database keeps the modes it has; reads still work


def _sqlite_foreign_keys(dbapi_conn: sqlite3.Connection, _record: Any) -> None:
    dbapi_conn.execute("PRAGMA foreign_keys=ON")


def _sqlite_no_driver_transactions(dbapi_conn: sqlite3.Connection, _record: Any) -> None:
    # pysqlite would open its own deferred transaction; with isolation_level None the BEGIN
    # EXCLUSIVE below is the only one, so the lock is held from the first read of the revision.
    dbapi_conn.isolation_level = None


def _sqlite_begin_exclusive(conn: Connection) -> None:
    conn.exec_driver_sql("BEGIN EXCLUSIVE")


class _EngineOptions(TypedDict, total=False):
    """What `open_engine` passes create_engine beyond the JSON codec, by backend."""

    connect_args: dict[str, int]
    poolclass: type[Pool]
    pool_pre_ping: bool


def open_engine(url: str, *, migration: bool = False) -> Engine:
    """An engine for `url`, its SQLite directory created; StoreError when that is impossible.

    `migration=True` on SQLite: a pool-less engine whose transactions begin EXCLUSIVE (the
    migration lock) and whose connections keep foreign keys off, so a revision that copies
    diagnosis_session does not cascade-delete every invocation when it drops the old table.
    """
    options: _EngineOptions = {}
    url = read_only_url(url) or normalize_url(url)
    shown = display_url(url)
    path = sqlite_path(url) if url.startswith("sqlite") else None
    if path is not None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create the directory {path.parent} for the database: {exc.strerror}") from exc
    if url.startswith("sqlite"):
        options["connect_args"] = {"timeout": SQLITE_BUSY_TIMEOUT}
        if migration:
            options["poolclass"] = NullPool
    else:
        # A pooled connection a server restart closed is replaced at checkout, not failed on first use.
        options["pool_pre_ping"] = True
    try:
        engine = create_engine(url, json_serializer=_json_dumps, json_deserializer=_json_loads, **options)
    except ImportError as exc:
        raise StoreError(f"the database driver for {shown} is not installed ({exc.name}); "
                         "for PostgreSQL: pip install 'evidence-workbench[postgres]'") from exc
    except ArgumentError as exc:
        raise StoreError(f"{shown} is not a database URL SQLAlchemy understands") from exc
    if engine.dialect.name == "sqlite":
        event.listen(engine, "connect", _sqlite_pragmas)
        if migration:
            event.listen(engine, "connect", _sqlite_no_driver_transactions)
            event.listen(engine, "begin", _sqlite_begin_exclusive)
        else:
            event.listen(engine, "connect", _sqlite_foreign_keys)
    event.listen(engine, "before_cursor_execute", _clean_statement_params, retval=True)
    return engine
