"""The gate columns as Parquet files beside the store: read instead of the tables, where they hold.

The store stays the source of truth; the files are a cache of the three gate tables as the
history load reads them (the same typed columns), one file per table per segment of 65,536
gate_session seqs. Each file's name carries its segment's stamp in `gate_segment`, which
triggers draw anew at every change to the segment's gate rows (migration 0020), so a load reads
the stamps (a few rows), takes the files whose stamp is current and reads every other segment
from the store, writing its file as the rows pass. New sessions land in the last segment, whose
file is written again; a rewritten session moves to the end, and the segment it left is read
again whole: that is the compaction. A file that does not read (deleted, cut, a page whose
checksum fails) is read from the store instead and written again: slower, never different.
Where the files go: docs/deploy.md#gate-column-files.
"""

from __future__ import annotations

import hashlib
import logging
import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from sqlalchemy import select
from sqlalchemy.engine import make_url

from pipeline.core.resources import default_home
from pipeline.replay.arrow import numpy_of
from pipeline.store import Store
from pipeline.store.engine import normalize_url, sqlite_path
from pipeline.store.schema import GateSegment

SEGMENT = 65_536  # as migration 0020 groups seqs
FORMAT = 1  # in every file name: a change to the columns read makes the old files unused
_log = logging.getLogger(__name__)


def files_root(store: Store) -> Path | None:
    """Where this store's files live: WORKBENCH_COLUMNS_DIR, else beside a SQLite file, else in the
    workbench home under a name of the database URL; None for a memory database or with
    WORKBENCH_COLUMNS_DIR=off (every load from the store)."""
    url = normalize_url(store.url)
    named = make_url(url).set(password=None).render_as_string(hide_password=False)
    key = hashlib.sha256(named.encode()).hexdigest()[:16]
    chosen = os.environ.get("WORKBENCH_COLUMNS_DIR")
    if chosen == "off":
        return None
    if chosen:
        return Path(chosen) / key
    if store.engine.dialect.name == "sqlite":
        path = sqlite_path(str(store.engine.url))
        return path.with_name(path.name + ".columns") if path else None
    return Path(os.environ.get("WORKBENCH_HOME") or default_home()) / "columns" / key


def stamps(store: Store) -> dict[int, int]:
    with store.connected() as conn:
        return {int(s): int(t) for s, t in conn.execute(select(GateSegment.segment, GateSegment.stamp))}


class ColumnFiles:
    """One table's files under `root`, as of `marks` (segment -> stamp, read before any row)."""

    def __init__(self, root: Path | None, table: str, marks: dict[int, int]):
        self.root, self.table, self.marks = root, table, marks

    def path(self, segment: int) -> Path:
        assert self.root is not None
        return self.root / f"{self.table}-v{FORMAT}-{segment:06d}-{self.marks[segment] & (2**64 - 1):016x}.parquet"


def cached_batches(root: Path | None, table: str, marks: dict[int, int],
                   read_store: Callable[[list[int]], Iterator[pa.RecordBatch]]) -> Iterator[pa.RecordBatch]:
    """The table's rows as record batches: each current file's, then the store's rows of every
    other segment (read by `read_store(segments)`), whose files are written as they pass. The
    first column of every batch is the seq."""
    files = ColumnFiles(root, table, marks)
    missing: list[int] = []
    for segment in sorted(marks):
        table_read = _read_file(files, segment) if root is not None else None
        if table_read is None:
            missing.append(segment)
            continue
        yield from table_read.to_batches()
    if not missing:
        return
    writers = _Writers(files if root is not None else None, missing)
    try:
        for batch in read_store(missing):
            writers.add(batch)
            yield batch
    except BaseException:
        writers.abandon()
        raise
    writers.close()


def segment_ranges(segments: list[int]) -> str:
    """A WHERE condition on seq for these segments, contiguous ones as one range."""
    ranges: list[tuple[int, int]] = []
    for s in sorted(segments):
        if ranges and ranges[-1][1] == s:
            ranges[-1] = (ranges[-1][0], s + 1)
        else:
            ranges.append((s, s + 1))
    return " OR ".join(f"(seq >= {lo * SEGMENT} AND seq < {hi * SEGMENT})" for lo, hi in ranges)


def _read_file(files: ColumnFiles, segment: int) -> pa.Table | None:
    path = files.path(segment)
    try:
        # ParquetFile, not read_table: read_table imports pyarrow.dataset, about half a second
        # of CPU in every cold `workbench replay` for a reader of whole local files.
        with pq.ParquetFile(path, memory_map=True, page_checksum_verification=True) as file:
            return file.read()
    except FileNotFoundError:
        return None
    except (OSError, pa.ArrowException) as exc:
        _log.warning("gate column file %s does not read (%s): its rows are read from the store", path, exc)
        path.unlink(missing_ok=True)
        return None


class _Writers:
    """A Parquet writer per segment the store's rows fill, each to a temporary name renamed into
    place when complete, so a reader never takes a file half written."""

    def __init__(self, files: ColumnFiles | None, segments: list[int]):
        self.files, self.segments = files, segments
        self.open: dict[int, tuple[pq.ParquetWriter, Path]] = {}
        self.failed = files is None

    def add(self, batch: pa.RecordBatch) -> None:
        if self.failed or not batch.num_rows:
            return
        assert self.files is not None
        try:
            segments = numpy_of(batch.column(0)).astype(np.int64, copy=False) // SEGMENT
            for segment in np.unique(segments).tolist():
                if segment not in self.files.marks:  # rows written after the stamps were read: next time
                    continue
                part = batch.filter(pa.array(segments == segment))
                self._writer(int(segment), batch.schema).write_batch(part)
        except (OSError, pa.ArrowException) as exc:
            _log.warning("gate column files not written (%s): the store is read instead", exc)
            self.abandon()

    def _writer(self, segment: int, schema: pa.Schema) -> pq.ParquetWriter:
        if segment not in self.open:
            assert self.files is not None and self.files.root is not None
            self.files.root.mkdir(parents=True, exist_ok=True)
            final = self.files.path(segment)
            temporary = final.with_name(f".{final.name}.{uuid.uuid4().hex[:8]}")
            self.open[segment] = (pq.ParquetWriter(temporary, schema, write_page_checksum=True), temporary)
        return self.open[segment][0]

    def close(self) -> None:
        if self.failed:
            return
        assert self.files is not None
        try:
            for segment, (writer, temporary) in self.open.items():
                writer.close()
                os.replace(temporary, self.files.path(segment))
            # Every other file of the segments read: an older stamp's, or any at all for a
            # segment the store no longer holds a row of (every session in it rewritten later).
            assert self.files.root is not None
            for segment in self.segments:
                final = self.files.path(segment) if segment in self.open else None
                for old in self.files.root.glob(f"{self.files.table}-v*-{segment:06d}-*.parquet"):
                    if old != final:
                        old.unlink(missing_ok=True)
        except (OSError, pa.ArrowException) as exc:
            _log.warning("gate column files not written (%s): the store is read instead", exc)
            self.abandon()
        self.open = {}

    def abandon(self) -> None:
        self.failed = True
        for writer, temporary in self.open.values():
            try:
                writer.close()
            except (OSError, pa.ArrowException):
                pass
            temporary.unlink(missing_ok=True)
        self.open = {}
