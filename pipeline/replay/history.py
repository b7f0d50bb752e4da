"""The columnar replay over the store: gate_session / gate_binding rows in, arrays out, replay.

Rows are written when a session completes (pipeline/runs/session.py) and, for sessions stored before
the tables existed or imported since, on the first replay that misses them. Arrays are read as
Arrow record batches (ADBC), so a million sessions' ten million bindings never become Python
objects: building those objects was most of a cold load (docs/architecture.md#performance).
What the columns decide and what they leave to the exact per-session replay:
pipeline/replay/columns.py.
"""

from __future__ import annotations

import ctypes
import platform
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
from sqlalchemy import delete, func, insert, select
from sqlalchemy.exc import SQLAlchemyError

from pipeline.core.contracts import VERDICT_ORDER, GatekeeperResult
from pipeline.core.errors import StoreError
from pipeline.gatekeeper import RuleSet
from pipeline.gatekeeper.engine import STATUSES
from pipeline.gatekeeper.quote_rules import ExcerptSimilarityRule
from pipeline.replay.arrow import arrow_available, arrow_batches, numpy_of
from pipeline.replay.column_files import cached_batches, files_root, segment_ranges, stamps
from pipeline.replay.columns import (
    HistoryArrays,
    judge,
    maybe_flagged,
    rule_bits,
    session_columns,
)
from pipeline.replay.inputs import SessionInputCache
from pipeline.replay.per_session import ReplayInput, ReplayRow, replay, summary_line
from pipeline.store import Store
from pipeline.store.engine import display_url
from pipeline.store.schema import DiagnosisSession, GateBinding, GateClaim, GateSessionColumns

_CHUNK = 200_000  # rows per Arrow batch: ~20 MB of binding columns at a time
# Sessions from which the Arrow reader is worth its start (on SQLite a child process, ~0.5 s).
_ARROW_FROM = 20_000
_M_MMAP_THRESHOLD = -3  # mallopt's parameter number (malloc.h)
_EXACT_CHUNK = 2_000  # sessions per load on the exact path
_WRITE_CHUNK = 500  # sessions per backfill step (an IN list within every database's limit)
_REPLAYABLE = "('completed', 'imported')"
# Per column of gate_session / gate_binding / gate_claim: the array type and what NULL becomes
# (NaN for floats). A bool column is "not 0", one of _FLOAT_FLAGS (stored as a float) "equals 1".
_S_WORDS = ("clean_verdict", "old_status", "old_verdict", "old_rules", "evidence_floor")
_S_TYPES: dict[str, tuple[Any, float]] = {
    "seq": (np.int64, 0), "session_id": (str, 0), "lists_key": (str, 0), "lists_clean": (np.bool_, 0),
    "min_coverage": (np.float64, np.nan), "min_quote": (np.float64, np.nan), **{c: (str, 0) for c in _S_WORDS},
    "claims_ok": (np.bool_, 0), "text_has": (np.int8, -1), "text_fail": (np.int8, -1)}
_FLOAT_FLAGS = {"out_covered"}
_B_TYPES: dict[str, tuple[Any, float]] = {
    "claim": (np.int32, 0), "out_score": (np.float64, np.nan), "out_covered": (np.bool_, 0),
    "out_split": (np.int32, 0), "quote_score": (np.float64, np.nan), "summary_score": (np.float64, np.nan),
    "invented": (np.int16, 0), "entity_score": (np.float64, -1.0), "entity_low": (np.float64, np.nan),
    "entity_points": (np.int16, -1), "entity_fail": (np.int8, 0), "text_flag": (np.int8, 0)}
_C_TYPES: dict[str, tuple[Any, float]] = {
    "claim": (np.int32, 0), "untouched": (np.int8, 0), "hit": (np.int8, 0), "entity_hit": (np.int8, 0),
    "direct_core": (np.bool_, 0), "text_hit": (np.int8, 0)}
_BINDINGS = tuple(_B_TYPES)[1:]  # as session_columns orders a binding row after (claim, binding)
_CLAIMS = tuple(_C_TYPES)

def write_columns(store: Store, items: list[ReplayInput], rules: RuleSet) -> None:
    """(Re)write these sessions' rows, judged under `rules`' word lists."""
    derived = [session_columns(item, rules) for item in items]
    if not derived:
        return
    ids = [s["session_id"] for s, _, _ in derived]
    with store.connected(write=True) as conn:
        conn.execute(delete(GateSessionColumns).where(GateSessionColumns.session_id.in_(ids)))
        conn.execute(insert(GateSessionColumns), [s for s, _, _ in derived])
        seqs = dict(conn.execute(select(GateSessionColumns.session_id, GateSessionColumns.seq)
                                 .where(GateSessionColumns.session_id.in_(ids))).all())
        # Rows of a rewritten session whose old seq lingers (SQLite without foreign keys) are dropped too.
        for table in (GateBinding, GateClaim):
            conn.execute(delete(table).where(table.seq.in_(list(seqs.values()))))
        rows = [{"seq": seqs[s["session_id"]], "claim": b[0], "binding": b[1], **dict(zip(_BINDINGS, b[2:], strict=True))}
                for s, bindings, _ in derived for b in bindings]
        if rows:
            conn.execute(insert(GateBinding), rows)
        claims = [{"seq": seqs[s["session_id"]], **dict(zip(_CLAIMS, c, strict=True))}
                  for s, _, claim_rows in derived for c in claim_rows]
        if claims:
            conn.execute(insert(GateClaim), claims)


def record_session(store: Store, session_id: str, rules: RuleSet) -> None:
    """Columns of one just-finished session (a few queries; its features are already stored)."""
    write_columns(store, SessionInputCache(store).inputs([session_id]), rules)


def backfill(store: Store, rules: RuleSet, unwritten: list[str] | None = None) -> int:
    """Rows for every replayable session that has none yet (or rows written before migration 0006);
    returns how many sessions it wrote.
    On a store this process cannot write (a read-only file), the ids go to `unwritten` if given."""
    with store.connected() as conn:
        missing = list(conn.exec_driver_sql(
            "SELECT d.id FROM diagnosis_session d LEFT JOIN gate_session g ON g.session_id = d.id "
            # claims_ok NULL: written before migration 0006, so without claim standings or finding bits.
            f"WHERE d.status IN {_REPLAYABLE} AND (g.seq IS NULL OR g.claims_ok IS NULL)").scalars())
    done = 0
    for i in range(0, len(missing), _WRITE_CHUNK):
        items = SessionInputCache(store).inputs(missing[i:i + _WRITE_CHUNK])
        try:
            write_columns(store, items, rules)
        except StoreError:
            if unwritten is None:
                raise
            # Read-only: these sessions are replayed one by one instead (correct, just slower).
            unwritten.extend(item.session_id for item in items)
            continue
        done += len(items)
    return done


def _expr(column: str, dtype: Any, null: float, dialect: str) -> str:
    """How a column is selected so that every batch of a read has one type and no NULL, whatever
    the rows hold: SQLite's Arrow driver takes a column's type from its first batch, so a batch of
    NULLs would make a float column an integer one (and fail on its first float)."""
    if dtype is np.float64 or dtype is np.bool_ and column in _FLOAT_FLAGS:
        # NULL as -inf: no stored score is -inf, and SQLite cannot store NaN.
        return (f"CAST(coalesce({column}, -9e999) AS DOUBLE PRECISION)" if dialect == "sqlite"
                else f"CAST({column} AS DOUBLE PRECISION)")
    if dtype is np.bool_:
        return f"CAST(coalesce({column}, FALSE) AS INTEGER)"
    if dtype is str:
        return f"coalesce({column}, '')"
    return f"CAST(coalesce({column}, {int(null)}) AS BIGINT)"


def _convert(values: pa.Array, column: str, dtype: Any, null: float) -> npt.NDArray[Any]:
    if dtype is np.float64 or dtype is np.bool_ and column in _FLOAT_FLAGS:
        floats = numpy_of(values).astype(np.float64, copy=False)  # a NULL is NaN
        if dtype is np.bool_:
            return np.equal(floats, 1.0)
        return np.where(np.isnan(floats) | np.isneginf(floats), null, floats)
    converted: npt.NDArray[Any] = numpy_of(values).astype(dtype)
    return converted


def _read(store: Store, arrow_url: str | None, table: str, columns: dict[str, tuple[Any, float]],
          tables: dict[str, dict[str, int]], files: Path | None, marks: dict[int, int]
          ) -> tuple[dict[str, npt.NDArray[Any]], list[str]]:
    """One gate table's columns as typed arrays (text in `tables` as int16 codes) and its session
    ids (gate_session's; none for the others), a batch at a time: from its current Parquet files under `files` (column_files.py), and
    the segments they lack through the Arrow reader of `arrow_url` or else the store's own driver."""
    dialect = store.engine.dialect.name
    # Named: a file's columns need distinct names, which PostgreSQL gives none of these expressions.
    sql = f"SELECT {', '.join(f'{_expr(c, t, n, dialect)} AS {c}' for c, (t, n) in columns.items())} FROM {table}"

    def from_store(segments: list[int]) -> Iterator[pa.RecordBatch]:
        # All of them: the whole table in the order it lies, as before the files, without a
        # range a server-side cursor would take an index for.
        everything = len(segments) == len(marks)
        return _batches(store, arrow_url, sql if everything else f"{sql} WHERE {segment_ranges(segments)}")

    parts: dict[str, list[npt.NDArray[Any]]] = {c: [] for c in columns if c != "session_id"}
    ids: list[str] = []
    for batch in cached_batches(files, table, marks, from_store):
        for k, (column, (dtype, null)) in enumerate(columns.items()):
            values = batch.column(k)
            if column == "session_id":
                ids.extend(values.to_pylist())
            elif dtype is str:
                parts[column].append(_codes(values, tables[column]))
            else:
                parts[column].append(_convert(values, column, dtype, null))
    out: dict[str, npt.NDArray[Any]] = {}
    for c in list(parts):  # a column's parts are let go as it is joined: never all of them twice
        v = parts.pop(c)
        out[c] = np.concatenate(v) if v else np.zeros(0, dtype=np.int16 if columns[c][0] is str else columns[c][0])
    return out, ids


def _batches(store: Store, arrow_url: str | None, sql: str) -> Iterator[pa.RecordBatch]:
    if arrow_url is not None:
        yield from arrow_batches(arrow_url, sql, _CHUNK)
        return
    # stream_results: a server-side cursor on PostgreSQL, or psycopg holds all rows at once.
    with store.connected() as conn:
        conn.execution_options(stream_results=True, max_row_buffer=_CHUNK)
        result = conn.exec_driver_sql(sql)
        names = list(result.keys())
        while rows := result.fetchmany(_CHUNK):
            yield pa.RecordBatch.from_arrays([pa.array(c) for c in zip(*rows, strict=True)], names=names)


def _codes(values: pa.Array, table: dict[str, int]) -> npt.NDArray[np.int16]:
    """Each value's code in `table`, new values added (a batch holds a handful of distinct ones)."""
    encoded = values.dictionary_encode()
    lookup = np.array([table.setdefault(v, len(table)) for v in encoded.dictionary.to_pylist()], dtype=np.int16)
    codes: npt.NDArray[np.int16] = lookup[numpy_of(encoded.indices).astype(np.intp, copy=False)]
    return codes


@dataclass
class _Names:
    """Small categorical codes: each distinct string once."""

    keys: dict[str, int]
    words: dict[str, int]  # statuses, verdicts and rule lists share one table

    def reverse(self) -> list[str]:
        return sorted(self.words, key=self.words.__getitem__)


@contextmanager
def _batches_freed_to_the_system() -> Iterator[None]:
    """Within the block, every allocation above 128 KB by mmap (glibc only), so the load's
    thousands of batch-sized arrays, freed once joined, go back to the system. glibc otherwise
    raises its mmap threshold to the largest block freed, and those arrays come from the heap,
    where the freed ones stay: at a million sessions a second load in one process peaked at 1.7 GB
    and kept 0.5 GB after it, 1.3 GB and 0.4 GB this way. After the block the threshold is
    glibc's own largest (32 MB), so a warm replay's array temporaries reuse the heap: held at
    128 KB, each replay took 0.44-0.51 s instead of 0.33-0.35 s (docs/benchmarks.md)."""
    mallopt = ctypes.CDLL(None).mallopt if platform.libc_ver()[0] == "glibc" else None
    if mallopt is not None:
        mallopt(_M_MMAP_THRESHOLD, 128 * 1024)
    try:
        yield
    finally:
        if mallopt is not None:
            mallopt(_M_MMAP_THRESHOLD, 32 * 1024 * 1024)


def load_arrays(store: Store, sessions: int | None = None) -> tuple[HistoryArrays, dict[str, npt.NDArray[np.int16]],
                                                                   _Names]:
    """Every replayable session with rows, as arrays; plus the code arrays of old and clean outcomes.
    For a history of `sessions` (None: unknown, read it all the fast way) from _ARROW_FROM on,
    the three tables are read at once by the Arrow reader (its drivers read without the GIL).
    Below that, or where no Arrow driver reaches the data (a memory database, PostgreSQL without
    adbc-driver-postgresql), the store's own connection reads the tables one after another."""
    with _batches_freed_to_the_system():
        return _arrays_of(store, sessions)


def _arrays_of(store: Store, sessions: int | None) -> tuple[HistoryArrays, dict[str, npt.NDArray[np.int16]], _Names]:
    names = _Names({}, {})
    tables = {"lists_key": names.keys, **{c: names.words for c in _S_WORDS}}
    reads = [("gate_session", _S_TYPES), ("gate_binding", {"seq": (np.int64, 0), **_B_TYPES}),
             ("gate_claim", {"seq": (np.int64, 0), **_C_TYPES})]
    url = store.engine.url.render_as_string(hide_password=False)
    arrow = (sessions is None or sessions >= _ARROW_FROM) and arrow_available(url)
    # The stamps before any row: a file named by a stamp read later could hold rows older than it.
    files, marks = files_root(store), stamps(store)
    try:
        if not arrow:
            (s, ids), (b, _), (c, _) = (_read(store, None, table, columns, tables, files, marks)
                                        for table, columns in reads)
        else:
            with ThreadPoolExecutor(len(reads), thread_name_prefix="gate-load") as pool:
                # Only the session read writes the code tables, so the threads share none.
                (s, ids), (b, _), (c, _) = pool.map(
                    lambda read: _read(store, url, read[0], read[1], tables, files, marks), reads)
        s, ids = _replayable(store, s, ids)
    except (StoreError, pa.ArrowException, SQLAlchemyError) as exc:
        raise StoreError(f"cannot read the replay history from the database {display_url(url)}: "
                         f"{getattr(exc, 'orig', None) or exc}") from exc
    seqs = s["seq"]
    # int32 indices, and each table's seqs let go once placed: the join is the load's peak.
    b_index, c_index = _index(seqs, b).astype(np.int32), _index(seqs, c).astype(np.int32)
    del b["seq"], c["seq"]
    # Claims grouped by session, in claim order, so a binding finds its claim's row by bisection;
    # files and tables lie in seq order, so they mostly are already and need no sorted copy.
    c_key = c_index.astype(np.int64) * 65536 + c["claim"]
    if (c_key[1:] < c_key[:-1]).any():
        order = np.argsort(c_key, kind="stable")
        c_key, c_index, c = c_key[order], c_index[order], {name: values[order] for name, values in c.items()}
        del order
    b_key = b_index.astype(np.int64) * 65536 + b["claim"]
    row = np.searchsorted(c_key, b_key).clip(max=max(len(c_key) - 1, 0))
    found = c_key[row] == b_key if len(c_key) else np.zeros(len(b_key), dtype=bool)
    del c_key, b_key
    b_claim_row = row.astype(np.int32)
    del row
    b_claim_row[~found] = -1
    for word in ("pass", "warn", "fail", *VERDICT_ORDER):  # the outcomes the arrays settle sessions with
        names.words.setdefault(word, len(names.words))
    floor_codes = np.array([VERDICT_ORDER.get(w, -1) for w in names.reverse()], dtype=np.int8)
    arrays = HistoryArrays(
        session_ids=ids, lists_key=s["lists_key"], keys=list(names.keys),
        lists_clean=s["lists_clean"], min_coverage=s["min_coverage"], min_quote=s["min_quote"],
        b_session=b_index, b_score=b["out_score"], b_full=b["out_covered"], b_split=b["out_split"],
        b_quote=b["quote_score"], b_summary=b["summary_score"], b_invented=b["invented"], b_entity=b["entity_score"],
        b_entity_low=b["entity_low"], b_entity_points=b["entity_points"], claims_ok=s["claims_ok"],
        evidence_floor=floor_codes[s["evidence_floor"]], b_claim_row=b_claim_row, b_entity_fail=b["entity_fail"],
        c_session=c_index, c_standing=np.stack([c["untouched"], c["hit"], c["entity_hit"]], axis=1),
        c_direct=c["direct_core"], text_has=s["text_has"], text_fail=s["text_fail"], b_text=b["text_flag"],
        c_text=c["text_hit"])
    outcomes = {"verdict": s["clean_verdict"], "status": s["old_status"], "old_v": s["old_verdict"],
                "rules": s["old_rules"]}
    return arrays, outcomes, names


def _replayable(store: Store, s: dict[str, npt.NDArray[Any]], ids: list[str]
                ) -> tuple[dict[str, npt.NDArray[Any]], list[str]]:
    """The gate_session rows of replayable sessions and their session ids, in seq order (the files'
    segments come first, the store's after). A session without gate rows is in no file; one that is no longer
    replayable (quarantined) is found from the status index, and its rows left out."""
    with store.connected() as conn:
        gone = np.fromiter(conn.exec_driver_sql(
            "SELECT g.seq FROM diagnosis_session d JOIN gate_session g ON g.session_id = d.id "
            f"WHERE d.status NOT IN {_REPLAYABLE}").scalars(), dtype=np.int64)
    order = np.argsort(s["seq"], kind="stable")
    order = order[~np.isin(s["seq"][order], gone)]
    return {c: v[order] for c, v in s.items()}, [ids[i] for i in order.tolist()]


def _index(seqs: npt.NDArray[np.int64], rows: dict[str, npt.NDArray[Any]]) -> npt.NDArray[np.intp]:
    """Each row's session index in `seqs`; rows of sessions not in `seqs` (no longer
    replayable) are dropped from `rows` in place."""
    at: npt.NDArray[np.intp] = np.searchsorted(seqs, rows["seq"]).clip(max=max(len(seqs) - 1, 0))
    keep = seqs[at] == rows["seq"] if len(seqs) else np.zeros(len(at), dtype=bool)
    if not keep.all():
        for name, values in rows.items():
            rows[name] = values[keep]
        at = at[keep]
    return at


class GateColumnCache:
    """The history loaded once as arrays; the exact path's inputs are loaded per session on demand."""

    def __init__(self, store: Store, kept: int = 5_000):
        self.store = store
        # The exact path's inputs kept between replays (a tuner moving a slider back and forth
        # replays the same sessions); 0 for a one-off replay.
        self.exact = SessionInputCache(store, kept=kept)
        self._loaded: tuple[HistoryArrays, dict[str, npt.NDArray[np.int16]], _Names] | None = None
        self.unwritten: list[str] = []  # sessions without rows that could not be given any
        self._lock = threading.RLock()  # the page warms it in the background while a tuner edits

    def warm(self, rules: RuleSet) -> threading.Thread:
        thread = threading.Thread(target=self.refresh, args=(rules,), name="columnar-history", daemon=True)
        thread.start()
        return thread

    def refresh(self, rules: RuleSet) -> HistoryArrays:
        """Backfill sessions without rows; reload the arrays when any session was added."""
        with self._lock:
            return self._refresh(rules)

    def _refresh(self, rules: RuleSet) -> HistoryArrays:
        self.unwritten = []
        added = backfill(self.store, rules, self.unwritten)
        if self._loaded is None:
            # Which reader to start needs only the history's size, roughly: the last seq bounds
            # it from above and is one index lookup, where the count scans every session.
            self._loaded = load_arrays(self.store, self._last_seq())
            return self._loaded[0]
        count = self._count()
        if added or count != len(self._loaded[0].session_ids):
            self._loaded = load_arrays(self.store, count)
        return self._loaded[0]

    @property
    def arrays(self) -> HistoryArrays | None:
        """The arrays as last refreshed, if any."""
        return self._loaded[0] if self._loaded else None

    def _last_seq(self) -> int:
        with self.store.connected() as conn:
            return int(conn.execute(select(func.max(GateSessionColumns.seq))).scalar() or 0)

    def _count(self) -> int:
        with self.store.connected() as conn:
            return int(conn.execute(
                select(func.count()).select_from(GateSessionColumns)
                .join(DiagnosisSession, DiagnosisSession.id == GateSessionColumns.session_id)
                .where(DiagnosisSession.status.in_(("completed", "imported")))).scalar_one())

    def replay(self, rules: RuleSet, exclude: set[str] | frozenset[str] = frozenset(),
               on_exact: Callable[[int, int], None] | None = None) -> ReplayOutcome:
        """The candidate over the history as last refreshed (refreshed under `rules` if never);
        `on_exact(done, total)` hears how far the per-session replay of the rest has come."""
        with self._lock:
            if self._loaded is None:
                self._refresh(rules)
            assert self._loaded is not None
            arrays, outcomes, names = self._loaded
        included = np.ones(len(arrays.session_ids), dtype=bool)
        if exclude:
            included = np.fromiter((s not in exclude for s in arrays.session_ids), dtype=bool,
                                   count=len(arrays.session_ids))
        flagged = maybe_flagged(arrays, rules) & included
        verdicts = judge(arrays, rules, flagged)
        judged, status, verdict = verdicts.ok, verdicts.status, verdicts.verdict
        exact_at = np.flatnonzero(flagged & ~judged)
        exact_ids = [arrays.session_ids[i] for i in exact_at]
        exact_ids += [i for i in self.unwritten if i not in exclude]

        def rerun(session_ids: list[str], progress: Callable[[int, int], None] | None = None) -> list[ReplayRow]:
            # In chunks, so at most a chunk's inputs (and the kept ones) are in memory at once.
            rows: list[ReplayRow] = []
            for i in range(0, len(session_ids), _EXACT_CHUNK):
                rows += replay(self.exact.inputs(session_ids[i:i + _EXACT_CHUNK]), rules)
                if progress is not None:
                    progress(len(rows), len(session_ids))
            return rows

        exact = {r.session_id: r for r in rerun(exact_ids, on_exact)}
        # Every session the arrays settle, as codes of `names`: cleared or judged.
        words = names.words
        settled_status = np.where(~flagged, np.int16(words["pass"]),
                                  np.array([words[w] for w in STATUSES], dtype=np.int16)[status]).astype(np.int16)
        settled_verdict = np.where(~flagged, outcomes["verdict"],
                                   np.array([words[v] for v in VERDICT_ORDER], dtype=np.int16)[verdict]).astype(np.int16)
        return ReplayOutcome(self.store, arrays, outcomes, names, included & ~flagged, judged & included,
                             settled_status, settled_verdict, exact, exact_at, rerun,
                             np.where(judged, verdicts.failed, 0), np.where(judged, verdicts.warned, 0))


@dataclass
class ReplayOutcome:
    """A replay's outcome: sessions the arrays settle (cleared or judged) as code arrays, the
    others as exact ReplayRows."""

    store: Store
    arrays: HistoryArrays
    outcomes: dict[str, npt.NDArray[np.int16]]
    names: _Names
    clean: npt.NDArray[np.bool_]  # no rule finds anything
    judged: npt.NDArray[np.bool_]  # found by columns.judge
    new_status: npt.NDArray[np.int16]  # codes of `names` for the two kinds above
    new_verdict: npt.NDArray[np.int16]
    exact: dict[str, ReplayRow]
    exact_at: npt.NDArray[np.intp]  # the exact sessions' positions in the arrays
    rerun: Callable[[list[str]], list[ReplayRow]]  # the exact path, for settled rows that are listed
    new_failed: npt.NDArray[np.int64]  # failed and warned rules of the judged sessions (columns.rule_bits)
    new_warned: npt.NDArray[np.int64]

    @property
    def total(self) -> int:
        return int(self._settled_mask.sum()) + len(self.exact)

    @property
    def _settled_mask(self) -> npt.NDArray[np.bool_]:
        settled: npt.NDArray[np.bool_] = self.clean | self.judged
        return settled

    def _settled(self) -> tuple[npt.NDArray[np.int16], npt.NDArray[np.int16], npt.NDArray[np.bool_]]:
        """Codes of the new status and projected verdict, and which sessions they hold for."""
        return self.new_status, self.new_verdict, self._settled_mask

    def _changed(self) -> npt.NDArray[np.bool_]:
        status, verdict, settled = self._settled()
        changed: npt.NDArray[np.bool_] = settled & ((self.outcomes["status"] != status) |
                                                     (self.outcomes["old_v"] != verdict))
        return changed

    def counts(self) -> tuple[int, int, Counter[str], Counter[str]]:
        """(sessions, changed, status moves, verdict moves), as per_session.summarize counts rows."""
        names, o = self.names.reverse(), self.outcomes
        status: Counter[str] = Counter(f"{r.old_status}->{r.new_status}" for r in self.exact.values()
                                       if r.old_status != r.new_status)
        verdict: Counter[str] = Counter(f"{r.old_verdict}->{r.projected_verdict}" for r in self.exact.values()
                                        if r.old_verdict != r.projected_verdict)
        new_status, new_verdict, settled = self._settled()
        for counter, old, new in ((status, o["status"], new_status), (verdict, o["old_v"], new_verdict)):
            moved = settled & (old != new)
            pairs = old[moved].astype(np.int64) * 65536 + new[moved]
            for pair, count in zip(*np.unique(pairs, return_counts=True), strict=True):
                counter[f"{names[pair // 65536]}->{names[pair % 65536]}"] += int(count)
        changed = int(self._changed().sum()) + sum(r.changed for r in self.exact.values())
        return self.total, changed, status, verdict

    def summary(self) -> str:
        """Exactly what per_session.summarize says of the same rows."""
        return summary_line(*self.counts())

    def rows(self, changed_only: bool = False, limit: int | None = None) -> list[ReplayRow]:
        """ReplayRows in history order, the first `limit` if given. Cleared ones are built here;
        the other settled ones are replayed for their findings, which costs per row."""
        ids = self.arrays.session_ids
        listed = self._changed() if changed_only else self._settled_mask.copy()
        for i in self.exact_at:
            listed[i] = self.exact[ids[i]].changed or not changed_only
        order = np.flatnonzero(listed)[:limit]
        unbacked = self._unbacked([ids[i] for i in order if self.clean[i]])
        rerun = {r.session_id: r for r in self.rerun([ids[i] for i in order
                                                       if not self.clean[i] and ids[i] not in self.exact])}
        names, o = self.names.reverse(), self.outcomes
        out = []
        for i in order:
            sid = ids[i]
            row = self.exact.get(sid) or rerun.get(sid)
            if row is None:
                old_rules = names[o["rules"][i]]
                old_status, old_verdict, verdict = names[o["status"][i]], names[o["old_v"][i]], names[o["verdict"][i]]
                row = ReplayRow(sid, old_status, "pass", old_verdict, verdict, old_rules.split(",") if old_rules else [],
                                old_status != "pass" or old_verdict != verdict,
                                GatekeeperResult(status="pass", unbacked_claims=unbacked.get(sid, [])))
            out.append(row)
        placed = {ids[i] for i in self.exact_at}  # the others had no rows in the arrays (unwritten)
        out.extend(r for r in self.exact.values() if r.session_id not in placed and (r.changed or not changed_only))
        return out[:limit]

    def differing(self, rules: RuleSet) -> list[tuple[str, str, str, tuple[str, ...]]]:
        """(session id, projected verdict, gatekeeper status, failed rules) under the replayed
        `rules` of every session whose outcome differs from its outcome at ask: the status, the
        verdict, or the rules that failed or warned. Tuples of strings all through: the collector
        stops tracking such a tuple at its first pass, where a row holding a list stayed tracked
        and every full collection walked a million of them (1.2 s of building a million rows
        against 0.2 s, docs/benchmarks.md)."""
        words, o = self.names.words, self.outcomes
        status, verdict, settled = self._settled()
        # The replayed rule lists as codes of the stored ones: failed and warned ids, sorted, comma-joined.
        patterns, inverse = np.unique(self.new_failed | self.new_warned, return_inverse=True)
        codes = np.array([words.setdefault(",".join(sorted(rule_bits(rules, int(p)))), len(words)) for p in patterns],
                         dtype=np.int16)
        changed = settled & ((o["status"] != status) | (o["old_v"] != verdict) | (o["rules"] != codes[inverse]))
        names, ids = self.names.reverse(), self.arrays.session_ids
        failed = {int(bits): tuple(rule_bits(rules, int(bits))) for bits in np.unique(self.new_failed[changed])}
        out = [(ids[i], names[v], names[st], failed[f]) for i, v, st, f in zip(
            np.flatnonzero(changed).tolist(), verdict[changed].tolist(), status[changed].tolist(),
            self.new_failed[changed].tolist(), strict=True)]
        at = {ids[i]: i for i in self.exact_at}
        for r in self.exact.values():
            listed = ",".join(sorted({*r.result.failed_rules, *r.result.warnings}))
            # A session without rows (unwritten) has no stored rule list here: its status and verdict decide.
            old = names[o["rules"][at[r.session_id]]] if r.session_id in at else listed
            if r.old_status != r.new_status or r.old_verdict != r.projected_verdict or old != listed:
                out.append((r.session_id, r.projected_verdict, r.new_status, tuple(r.result.failed_rules)))
        return out

    def _unbacked(self, session_ids: list[str]) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        with self.store.connected() as conn:
            for i in range(0, len(session_ids), _WRITE_CHUNK):
                chunk = session_ids[i:i + _WRITE_CHUNK]
                out.update(conn.execute(select(GateSessionColumns.session_id, GateSessionColumns.clean_unbacked)
                                        .where(GateSessionColumns.session_id.in_(chunk))).all())
        return out


def similarity_histogram(arrays: HistoryArrays, params: ExcerptSimilarityRule.Params,
                         width: float = 0.05) -> list[tuple[float, int]]:
    """(bin start, count) of the score each stored binding is judged by under `params`, a score
    of 1.0 in the last bin: what the thresholds really compare (ExcerptSimilarityRule.best_scores),
    a quote in its output 1.0 or 0.0 by structure, a digest's score as measured; a binding with no
    compared score is left out."""
    bins = round(1 / width)
    best = ExcerptSimilarityRule.best_scores(params, arrays)
    scores = best[best >= 0]
    counts = np.bincount(np.minimum((scores / width).astype(np.int64), bins - 1), minlength=bins)
    return [(round(b * width, 4), int(counts[b])) for b in range(bins)]
