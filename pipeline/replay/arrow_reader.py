"""The child process of pipeline/replay/arrow.py on SQLite: one query's rows as Arrow IPC on stdout.

    python -m pipeline.replay.arrow_reader TARGET BATCH_ROWS BUSY_TIMEOUT_MS < SQL

It imports pyarrow and the ADBC driver and nothing of the engine: a replay starts three of
these, and the engine's imports (SQLAlchemy, the store, the contracts) were most of each one's
start-up (docs/benchmarks.md).
"""

from __future__ import annotations

import sys
from typing import Any

import pyarrow as pa


def _serve(target: str, batch_rows: int, busy_timeout_ms: int, sql: str, out: Any) -> None:
    # The driver's low-level API: its DB-API module imports pandas, 60 MB in each child.
    import adbc_driver_manager
    import adbc_driver_sqlite

    with (adbc_driver_sqlite.connect(target) as database, adbc_driver_manager.AdbcConnection(database) as connection,
          adbc_driver_manager.AdbcStatement(connection) as statement):
        statement.set_sql_query(f"PRAGMA busy_timeout = {busy_timeout_ms}")  # wait for a writer as the store does
        statement.execute_update()
        statement.set_options(**{"adbc.sqlite.query.batch_rows": str(batch_rows)})
        statement.set_sql_query(sql)
        handle, _ = statement.execute_query()
        reader = pa.RecordBatchReader._import_from_c(handle.address)
        with pa.ipc.new_stream(out, reader.schema) as stream:
            for batch in reader:
                stream.write_batch(batch)


def main() -> None:
    import adbc_driver_manager

    target, batch_rows, busy_timeout_ms = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    try:
        _serve(target, batch_rows, busy_timeout_ms, sys.stdin.read(), sys.stdout.buffer)
    except (adbc_driver_manager.Error, pa.ArrowException) as exc:
        print(str(exc).strip().replace("\n", " "), file=sys.stderr)
        sys.exit(1)
    except BrokenPipeError:  # the parent stopped reading: nothing to report
        sys.exit(1)


if __name__ == "__main__":
    main()
