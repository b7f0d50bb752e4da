"""Bulk reads of the store as Arrow record batches (ADBC): no Python object per value.

The SQLite driver of ADBC carries its own copy of SQLite. Two copies of SQLite in one process
do not see each other's locks: the second to open a WAL database's shared memory believes it
is alone and resets the WAL index under the first, which then fails with "disk I/O error" or
stops seeing committed rows (docs/architecture.md#performance). So on SQLite the reader runs
in a child process, `python -m pipeline.replay.arrow_reader`, and streams the batches back in
Arrow's IPC format; on PostgreSQL it connects over the network in this process.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
from sqlalchemy.engine import make_url

from pipeline.core.errors import StoreError
from pipeline.store.engine import SQLITE_BUSY_TIMEOUT, display_url, normalize_url, read_only_url

# Arrow's fixed-width types and the NumPy type of the same bytes.
_NUMPY = {pa.int8(): np.int8, pa.int16(): np.int16, pa.int32(): np.int32, pa.int64(): np.int64,
          pa.float32(): np.float32, pa.float64(): np.float64}


def numpy_of(values: pa.Array) -> npt.NDArray[Any]:
    """A numeric array's values as NumPy, a null as NaN (a float array) or 0: a view of its
    buffer where it has no nulls. Not `to_numpy`: Arrow's conversion imports pandas on its first
    call, about half a second of CPU in every cold `workbench replay` (docs/benchmarks.md)."""
    dtype = _NUMPY.get(values.type)
    if dtype is None:  # booleans (bit-packed) and anything else: Arrow's own conversion
        return np.asarray(values.to_numpy(zero_copy_only=False))
    validity, data = values.buffers()[:2]
    start, count = values.offset, len(values)
    out: npt.NDArray[Any] = np.frombuffer(data, dtype=dtype, count=start + count)[start:] if data else np.zeros(0, dtype)
    if values.null_count:
        bits = np.frombuffer(validity, dtype=np.uint8)
        valid = np.unpackbits(bits, bitorder="little", count=start + count)[start:].astype(bool)
        out = np.where(valid, out, np.nan if out.dtype.kind == "f" else 0)
    return out


class ArrowReadError(StoreError):
    """The Arrow reader could not run a query; its message names the driver's reason."""


def _sqlite_target(url: str) -> str | None:
    """The file name (or SQLite URI) the ADBC driver opens; None for a memory database, which
    only this process's SQLAlchemy connection sees."""
    url = read_only_url(url) or normalize_url(url)
    parsed = make_url(url)
    database = parsed.database or ""
    if not database or database == ":memory:" or "mode=memory" in url:
        return None
    if database.startswith("file:"):  # the read-only URI of read_only_url, SQLite's own syntax
        query = "&".join(f"{k}={v}" for k, v in parsed.query.items() if k != "uri")
        return f"{database}?{query}" if query else database
    return database


def arrow_available(url: str) -> bool:
    """Whether `url`'s data can be read as Arrow batches: a SQLite file, or PostgreSQL with
    adbc-driver-postgresql installed (the postgres extra)."""
    backend = make_url(normalize_url(url)).get_backend_name()
    if backend == "sqlite":
        return _sqlite_target(url) is not None
    if backend == "postgresql":
        try:
            import adbc_driver_postgresql.dbapi  # noqa: F401
        except ImportError:
            return False
        return True
    return False


def arrow_batches(url: str, sql: str, batch_rows: int) -> Iterator[pa.RecordBatch]:
    """`sql`'s rows as record batches of about `batch_rows` rows. Raises ArrowReadError."""
    if make_url(normalize_url(url)).get_backend_name() == "sqlite":
        yield from _from_child(url, sql, batch_rows)
        return
    import adbc_driver_manager
    import adbc_driver_postgresql.dbapi

    target = make_url(normalize_url(url)).set(drivername="postgresql").render_as_string(hide_password=False)
    try:
        with adbc_driver_postgresql.dbapi.connect(target) as connection, connection.cursor() as cursor:
            cursor.execute(sql)
            yield from cursor.fetch_record_batch()
    except adbc_driver_manager.Error as exc:
        raise ArrowReadError(str(exc)) from exc


def _from_child(url: str, sql: str, batch_rows: int) -> Iterator[pa.RecordBatch]:
    target = _sqlite_target(url)
    if target is None:
        raise ArrowReadError(f"{display_url(url)} is a memory database: no other process can read it")
    # stderr to a file: a pipe the parent did not drain could block a child writing a long error.
    with tempfile.TemporaryFile() as errors:
        # The child imports this package from where this process did, installed or not.
        root = str(Path(__file__).resolve().parents[2])
        path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p)
        child = subprocess.Popen([sys.executable, "-m", "pipeline.replay.arrow_reader", target, str(batch_rows),
                                  str(SQLITE_BUSY_TIMEOUT * 1000)],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errors,
                                 env={**os.environ, "PYTHONPATH": path})
        assert child.stdin is not None and child.stdout is not None
        try:
            child.stdin.write(sql.encode())
            child.stdin.close()
            broken: pa.ArrowException | None = None
            try:
                yield from pa.ipc.open_stream(child.stdout)
            except pa.ArrowException as exc:  # a child that failed cut its stream: its stderr says why
                broken = exc
            code = child.wait()
        finally:
            if child.poll() is None:  # the caller stopped reading early, or failed on a batch
                child.kill()
                child.wait()
            child.stdout.close()
        if code != 0:
            errors.seek(0)
            said = errors.read().decode(errors="replace").strip().splitlines()
            raise ArrowReadError(said[-1] if said else f"the Arrow reader exited with status {code}")
        if broken is not None:
            raise ArrowReadError(f"the Arrow reader's stream broke: {broken}")
