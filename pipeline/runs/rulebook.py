"""The applied rule versions: which is in force, applying one, rolling back; the page and the
`workbench rules` commands both act through here, with the same checks and messages.

The texts are stored as their authors wrote them (comments and layout included), so the
difference between two versions is the lines a person changed. Version 0 is the rules/
directory the workbench was started with.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import func, literal, select, text, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from pipeline.core.config import Settings
from pipeline.core.errors import NotFound, RulesError, WorkbenchError
from pipeline.core.messages import Message, msg, render
from pipeline.gatekeeper.rules_schema import (
    INDEX_FILE,
    MAX_RULES_FILE_BYTES,
    METADATA_FILE,
    RuleSet,
    load_rules,
    load_rules_from_text,
)
from pipeline.store import Store, tally
from pipeline.store.schema import DiagnosisSession, GateSessionColumns, RulesInForce, VerdictInForce

if TYPE_CHECKING:
    from pipeline.replay.history import GateColumnCache


class RulesRefused(WorkbenchError):
    """An apply or rollback that the checks refuse; `message` renders in the reader's language."""

    def __init__(self, message: Message, details: list[str] | None = None):
        self.message = message
        self.details = details or []
        super().__init__(render(message, "en") + "".join(f"\n  {d}" for d in self.details))


@dataclass(frozen=True)
class RulesText:
    """A rule version's two files as stored, and its id (0: the shipped rules/ directory)."""

    version: int
    index_yaml: str
    metadata_yaml: str

    @property
    def texts(self) -> tuple[str, str]:
        return self.index_yaml, self.metadata_yaml


def rules_dir_time(settings: Settings, directory: Path | None = None) -> datetime | None:
    """When the shipped rules (version 0) were last written: the newer of their two files' times."""
    root = directory or settings.rules_dir
    try:
        stamp = max((root / name).stat().st_mtime for name in (INDEX_FILE, METADATA_FILE))
    except OSError:
        return None
    return datetime.fromtimestamp(stamp, UTC)


def read_rules_dir(settings: Settings, directory: Path | None = None) -> tuple[str, str]:
    """(index.yaml, metadata.yaml) of `directory` (default: the shipped rules/), as written."""
    root = directory or settings.rules_dir
    texts = []
    for name in (INDEX_FILE, METADATA_FILE):
        path = root / name
        try:
            with path.open("rb") as fh:  # no further than the cap: the loader refuses a larger text
                texts.append(fh.read(MAX_RULES_FILE_BYTES + 1).decode("utf-8"))
        except OSError as exc:
            raise RulesError([f"{name}: file: cannot read {path} ({exc.strerror or exc})"]) from exc
        except UnicodeDecodeError as exc:
            raise RulesError([f"{name}: file: not UTF-8 text (offset {exc.start}); save it as UTF-8"]) from exc
    return texts[0], texts[1]


def version_text(settings: Settings, store: Store, version: int) -> RulesText:
    """The texts of one version; NotFound for an id the store never applied."""
    if version == 0:
        return RulesText(0, *read_rules_dir(settings))
    for row in store.rule_versions():
        if row["id"] == version:
            return RulesText(version, row["index_yaml"], row["metadata_yaml"])
    raise NotFound(f"no rule version {version} (`workbench rules history` lists them)")


def text_in_force(settings: Settings, store: Store) -> RulesText:
    """The texts of the version in force, as its author wrote them."""
    active = store.active_rule_version()
    if active:
        return RulesText(active["id"], active["index_yaml"], active["metadata_yaml"])
    return RulesText(0, *read_rules_dir(settings))


def refusal(settings: Settings, candidate: tuple[str, str], base: tuple[str, str] | None,
            author: str) -> tuple[Message | None, list[str]]:
    """Why `candidate` may not be applied over `base` by `author` (None: it may), and the
    validation messages when it is invalid. Who may apply with a login is the page's check."""
    rules, errors = _check(*candidate)
    if rules is None:
        return msg("rules.invalid", count=len(errors)), errors
    if base is not None and candidate == base:
        return msg("rules.unchanged"), []
    if base is not None and _check(*base)[0] == rules:
        return msg("rules.unchanged"), []
    if not author.strip():
        return msg("rules.need_author"), []
    return None, []


def ungated(settings: Settings, candidate: tuple[str, str]) -> list[str]:
    """What would let a forged quote through under `candidate` (RuleSet.ungated_by); [] when
    the candidate does not load (its apply is refused anyway)."""
    rules, _ = _check(*candidate)
    return rules.ungated_by(gatekeeper_enabled=settings.gatekeeper.enabled) if rules else []


def _check(index_yaml: str, metadata_yaml: str) -> tuple[RuleSet | None, list[str]]:
    try:
        return load_rules_from_text(index_yaml, metadata_yaml), []
    except RulesError as exc:
        return None, list(exc.messages)


def apply_rules(settings: Settings, store: Store, candidate: tuple[str, str], *, author: str, comment: str,
                based_on: int) -> int:
    """Store `candidate` as a new version and put it in force, if the checks pass and the version
    in force is still `based_on`; returns the new id. Raises RulesRefused or StaleRuleVersion."""
    editors = settings.ui.editors
    if editors and author.strip() not in editors:
        raise RulesRefused(msg("rules.not_an_editor", who=author.strip(), editors=", ".join(editors)))
    reason, errors = refusal(settings, candidate, version_text(settings, store, based_on).texts, author)
    if reason is not None:
        raise RulesRefused(reason, errors)
    return store.apply_rule_version(index_yaml=candidate[0], metadata_yaml=candidate[1], author=author.strip(),
                                    comment=comment, based_on=based_on)


def rollback(settings: Settings, store: Store, version: int, *, author: str) -> int:
    """Apply version `version`'s texts again as a new version (0: the shipped rules)."""
    target = version_text(settings, store, version)
    in_force = store.rules_version()
    if in_force == version:
        raise RulesRefused(msg("rules.already_in_force", id=version))
    return apply_rules(settings, store, target.texts, author=author, comment=f"roll back to version {version}",
                       based_on=in_force)


# --- the rules in force and the verdicts they give ------------------------------------------------


@lru_cache(maxsize=32)
def parsed_rules(index_yaml: str, metadata_yaml: str) -> RuleSet:
    """Both rule files from text, parsed once per text pair: parsing and validating the YAML costs
    more than a whole offline session, and a page run asks for the same texts several times."""
    return load_rules_from_text(index_yaml, metadata_yaml)


def rules_in_force(settings: Settings, store: Store) -> tuple[RuleSet, int | None]:
    """The applied version in force and its id, else the rules/ directory and None."""
    active = store.active_rule_version()
    if active:
        return parsed_rules(active["index_yaml"], active["metadata_yaml"]), active["id"]
    try:
        index = (settings.rules_dir / INDEX_FILE).read_text(encoding="utf-8")
        metadata = (settings.rules_dir / METADATA_FILE).read_text(encoding="utf-8")
    except OSError:
        return load_rules(settings.rules_dir), None  # raises RulesError naming the missing file
    return parsed_rules(index, metadata), None


@dataclass(frozen=True)
class Judging:
    """How far the re-judge under the version in force has come (the rules_in_force row)."""

    version: int  # in force
    judged_version: int | None  # the stored verdicts in force are this version's (None: never re-judged)
    judging_version: int | None  # a re-judge under way, if any
    phase: str | None  # load, judge, write
    done: int
    total: int
    at: datetime | None  # its last sign of life

    @property
    def current(self) -> bool:
        """Whether the verdicts in force are the version in force's."""
        return self.judged_version == self.version

    def stalled(self, now: datetime, after_s: float = 120.0) -> bool:
        """A re-judge that said nothing for `after_s` seconds died with its process."""
        return self.at is None or (now - _aware(self.at)).total_seconds() > after_s


def _aware(at: datetime) -> datetime:
    return at if at.tzinfo else at.replace(tzinfo=UTC)  # SQLite returns naive UTC


def judging(store: Store) -> Judging:
    with store.connected() as conn:
        row = conn.execute(select(RulesInForce)).one()._mapping
    return Judging(row["version"], row["judged_version"], row["judging_version"], row["judging_phase"],
                   row["judging_done"], row["judging_total"], row["judging_at"])


@dataclass(frozen=True)
class Rejudged:
    version: int
    sessions: int  # judged again
    differing: int  # whose outcome under `version` differs from the one at ask
    stored: bool  # False: another version was put in force meanwhile, whose own re-judge stores


def _report(store: Store, version: int, phase: str, done: int, total: int) -> None:
    with store.connected(write=True) as conn:
        conn.execute(update(RulesInForce).where(RulesInForce.id == 1, RulesInForce.version == version).values(
            judging_version=version, judging_phase=phase, judging_done=done, judging_total=total,
            judging_at=datetime.now(UTC)))


def rejudge(settings: Settings, store: Store, on_progress: Callable[[str, int, int], None] | None = None,
            history: GateColumnCache | None = None) -> Rejudged:
    """Judge every stored session again under the version in force (the columnar replay) and
    store each outcome that differs from the one at ask; `on_progress(phase, done, total)`.
    `history`: columns a caller already holds (the Rules page's, loaded for its previews), so
    the load is only a check for new sessions; the arrays are the same under any rules."""
    from pipeline.replay.history import GateColumnCache

    rules, applied = rules_in_force(settings, store)
    version = applied or 0

    def report(phase: str, done: int, total: int) -> None:
        _report(store, version, phase, done, total)
        if on_progress is not None:
            on_progress(phase, done, total)

    report("load", 0, 0)
    with store.connected() as conn:
        # Sessions recorded after this point are judged when they finish (judge_late), not here.
        through = conn.execute(select(func.max(GateSessionColumns.seq))).scalar() or 0
    history = history or GateColumnCache(store, kept=0)
    total = len(history.refresh(rules).session_ids)
    report("judge", 0, total)
    result = history.replay(rules, on_exact=lambda done, of: report("judge", done, of))
    rows = result.differing(rules)
    report("write", 0, len(rows))
    stored = _store_in_force(store, version, through, rows,
                             ungated=bool(rules.ungated_by(gatekeeper_enabled=settings.gatekeeper.enabled)))
    if on_progress is not None:
        on_progress("done", len(rows), len(rows))
    return Rejudged(version, result.total, len(rows), stored)


def _upsert(store: Store, row: dict[str, Any]) -> Any:
    """`row` in force, if its session is still stored: its key locked as a foreign key's check
    would lock it (migration 0023), so a delete of the session waits for this write, or this
    write for the delete."""
    insert = pg_insert if store.engine.dialect.name == "postgresql" else sqlite_insert
    table = VerdictInForce.__table__
    picked = (select(*(literal(value, type_=table.c[c].type).label(c) for c, value in row.items()))
              .where(DiagnosisSession.id == row["session_id"]).with_for_update(read=True, key_share=True))
    statement = insert(VerdictInForce).from_select(list(row), picked)
    return statement.on_conflict_do_update(index_elements=[VerdictInForce.session_id], set_={
        c: statement.excluded[c] for c in ("verdict", "gatekeeper_status", "failed_rules", "rules_version", "ungated")})


_SCRATCH = "verdict_in_force_new"
_SQLITE_UPSERT = ("INSERT INTO verdict_in_force (session_id, verdict, gatekeeper_status, failed_rules, ungated) "
                  "VALUES (?, ?, ?, ?, ?) ON CONFLICT (session_id) DO UPDATE SET verdict = excluded.verdict, "
                  "gatekeeper_status = excluded.gatekeeper_status, failed_rules = excluded.failed_rules, "
                  "ungated = excluded.ungated, rules_version = NULL WHERE "
                  # A row that already says it (and names no version of its own) is not written again.
                  "(verdict_in_force.verdict, verdict_in_force.gatekeeper_status, verdict_in_force.failed_rules, "
                  "verdict_in_force.ungated, verdict_in_force.rules_version) IS NOT (excluded.verdict, "
                  "excluded.gatekeeper_status, excluded.failed_rules, excluded.ungated, NULL)")
_SCRATCH_COLUMNS = ("session_id", "verdict", "gatekeeper_status", "failed_rules", "ungated")


def _store_in_force(store: Store, version: int, through: int, rows: list[tuple[str, str, str, tuple[str, ...]]], *,
                    ungated: bool) -> bool:
    """One transaction: the pointer first (on SQLite the write lock; on PostgreSQL the row lock
    that an apply also takes), so the outcomes land only while `version` is still in force;
    the queue's tally regrouped once at the end, its per-row triggers held meanwhile.
    A row holds no version of its own: the pointer names it (migration 0017), so a row whose
    outcome `version` keeps stays as it is: only the stored rows the outcomes change are written
    (on PostgreSQL from a scratch table, _write_changes; on SQLite by upserts, _rewrite_sqlite)."""
    with store.connected(write=True) as conn:
        moved = conn.execute(update(RulesInForce).where(RulesInForce.id == 1, RulesInForce.version == version)
                             .values(judging_at=datetime.now(UTC))).rowcount
        if moved != 1:
            return False
        before = conn.execute(select(RulesInForce.judged_version).where(RulesInForce.id == 1)).scalar()
        texts: dict[tuple[str, ...], str] = {}  # a handful of distinct rule lists
        values = ((sid, verdict, status, texts.get(failed) or texts.setdefault(failed, json.dumps(failed)),
                   ungated) for sid, verdict, status, failed in rows)
        with tally.bulk_write(conn):
            if store.engine.dialect.name == "postgresql":
                _copy_scratch(conn, values)
                _write_changes(conn, version, before, through)
            else:
                _rewrite_sqlite(conn, values, version, before, through)
        conn.execute(update(RulesInForce).where(RulesInForce.id == 1).values(
            judged_version=version, judging_version=None, judging_phase=None, judging_at=datetime.now(UTC)))
    return True


def _copy_scratch(conn: Any, values: Iterable[tuple[str, str, str, str, bool]]) -> None:
    """PostgreSQL: the rows by COPY (an executemany took ten times as long)."""
    with conn.connection.driver_connection.cursor() as cursor:
        # No key: the statements join it by hash, and an index built row by row slowed the COPY.
        cursor.execute(f"CREATE TEMP TABLE {_SCRATCH} (session_id text, verdict text, "
                       f"gatekeeper_status text, failed_rules text, ungated boolean) ON COMMIT DROP")
        with cursor.copy(f"COPY {_SCRATCH} ({', '.join(_SCRATCH_COLUMNS)}) FROM STDIN") as copy:
            for row in values:
                copy.write_row(row)
        cursor.execute(f"ANALYZE {_SCRATCH}")  # a temporary table has no statistics until asked


def _rewrite_sqlite(conn: Any, values: Iterable[tuple[str, str, str, str, bool]], version: int, before: int | None,
                    through: int) -> None:
    """SQLite: every row this re-judge holds is upserted, a stored row whose outcome it keeps left
    as it is (the upsert's WHERE), then the rows it replaces and does not hold are deleted, and
    any row whose session is gone. A delete of every replaced row before inserting them again
    rewrote a million rows of the index where a threshold moved a few thousand outcomes
    (docs/benchmarks.md)."""
    held: set[str] = set()

    def noted() -> Iterator[tuple[str, str, str, str, bool]]:
        for row in values:
            held.add(row[0])
            yield row

    # The driver's executemany over the rows as they are made: SQLAlchemy's, in chunks, took
    # 7.2 s for a million rows where this takes 5.8 s.
    cursor = conn.connection.driver_connection.cursor()
    try:
        cursor.executemany(_SQLITE_UPSERT, noted())
        replaced = cursor.execute(
            "SELECT session_id FROM verdict_in_force WHERE coalesce(rules_version, ?) IS DISTINCT FROM ? "
            "OR session_id IN (SELECT session_id FROM gate_session WHERE seq <= ?)", (before, version, through))
        stale = [(sid,) for (sid,) in replaced if sid not in held]
        cursor.executemany("DELETE FROM verdict_in_force WHERE session_id = ?", stale)
        # No foreign key keeps a row to a stored session (migration 0023): a session deleted since
        # the load loses the row just written. One sweep (0.3 s at a million rows) where a check
        # in the upsert looked every session up, its rows kept or not (1.5-2 s).
        cursor.execute("DELETE FROM verdict_in_force WHERE session_id NOT IN (SELECT id FROM diagnosis_session)")
    finally:
        cursor.close()


def _write_changes(conn: Any, version: int, before: int | None, through: int) -> None:
    """PostgreSQL, from the scratch table: the stored rows it does not hold are deleted where this re-judge
    replaces them (its sessions, or judged under another version), the rows whose outcome it
    changes or that name a version of their own are updated in place, and only sessions without
    a row get one: a row whose outcome this re-judge keeps is not written (deleting every replaced
    row and inserting it again was most of the write at a million rows, docs/benchmarks.md)."""
    v, n = "verdict_in_force", _SCRATCH
    failed = f"CAST({n}.failed_rules AS JSON)"
    conn.execute(text(
        f"DELETE FROM {v} WHERE NOT EXISTS (SELECT 1 FROM {n} WHERE {n}.session_id = {v}.session_id) AND "
        # A lookup per row the scratch table leaves (few, unless every row is replaced anyway): an
        # IN list of every session would be hashed, or on PostgreSQL beyond work_mem scanned per row.
        f"(coalesce(rules_version, :before) IS DISTINCT FROM :version OR EXISTS (SELECT 1 FROM gate_session "
        f"WHERE gate_session.session_id = {v}.session_id AND gate_session.seq <= :through))"),
        {"version": version, "before": before, "through": through})
    conn.execute(text(
        f"UPDATE {v} SET verdict = {n}.verdict, gatekeeper_status = {n}.gatekeeper_status, failed_rules = {failed}, "
        f"rules_version = NULL, ungated = {n}.ungated FROM {n} WHERE {v}.session_id = {n}.session_id AND "
        f"({v}.rules_version IS NOT NULL OR {v}.verdict <> {n}.verdict OR {v}.gatekeeper_status <> "
        f"{n}.gatekeeper_status OR CAST({v}.failed_rules AS TEXT) <> {n}.failed_rules OR {v}.ungated <> {n}.ungated)"))
    columns = ", ".join(_SCRATCH_COLUMNS)
    # The sessions without a row (the rows that are there now all hold this re-judge's outcome)
    # by an anti-join, not ON CONFLICT: a speculative insert per row took 5.2 s for 975,000 rows
    # where this takes 3.8 s; no other writer inserts meanwhile (judge_late waits for the pointer
    # this transaction holds). A hash anti-join: the table's statistics, read before this
    # transaction emptied or filled it, made PostgreSQL scan the table this statement grows once
    # per row it inserted. In key order, the key's index grows in order. Joined to the sessions,
    # so a session deleted since the load gets no row (a delete that comes later waits for this
    # transaction: migration 0023).
    picked = ", ".join(f"{n}.{c}" for c in _SCRATCH_COLUMNS).replace(f"{n}.failed_rules", failed)
    conn.execute(text("SET LOCAL enable_nestloop = off"))
    conn.execute(text(f"INSERT INTO {v} ({columns}) SELECT {picked} FROM {n} JOIN diagnosis_session "
                      f"ON diagnosis_session.id = {n}.session_id WHERE NOT EXISTS (SELECT 1 FROM {v} "
                      f"WHERE {v}.session_id = {n}.session_id) ORDER BY {n}.session_id"))
    conn.execute(text("RESET enable_nestloop"))


def judge_late(settings: Settings, store: Store, session_id: str, version: int) -> None:
    """A session judged under `version` that finished after another version was put in force (a
    re-judge may already have passed it by): judged again under the version in force, its row
    written whether or not its outcome differs, so it names the version that judged it."""
    if store.rules_version() == version:
        return
    from pipeline.replay.inputs import SessionInputCache
    from pipeline.replay.per_session import replay

    rules, applied = rules_in_force(settings, store)
    rows = replay(SessionInputCache(store).inputs([session_id]), rules)
    with store.connected(write=True) as conn:
        # After a re-judge that is writing (it inserts without ON CONFLICT, _write_changes).
        conn.execute(select(RulesInForce.id).where(RulesInForce.id == 1).with_for_update(read=True))
        for r in rows:
            conn.execute(_upsert(store, {
                "session_id": r.session_id, "verdict": r.projected_verdict, "gatekeeper_status": r.new_status,
                "failed_rules": r.result.failed_rules, "rules_version": applied or 0,
                "ungated": bool(rules.ungated_by(gatekeeper_enabled=settings.gatekeeper.enabled))}))


_RUNNING: dict[str, threading.Thread] = {}  # per database, the re-judge this process runs
_STARTING = threading.Lock()


def rejudge_in_background(settings: Settings, store: Store, history: GateColumnCache | None = None) -> threading.Thread:
    """rejudge in a thread of this process (the page's, with the page's `history`), its progress
    in the store for every page; while one runs for this database, that one (it judges under
    whatever is in force when it reads the rules, and a newer version's apply starts another
    after it)."""
    with _STARTING:
        running = _RUNNING.get(store.url)
        if running is not None and running.is_alive():
            return running

        def run() -> None:
            try:
                rejudge(settings, store, history=history)
            except WorkbenchError:
                # Left as it stopped: its last sign of life ages, and the next page open starts again.
                logging.getLogger(__name__).exception("re-judging the stored sessions failed")

        thread = _RUNNING[store.url] = threading.Thread(target=run, name="rejudge", daemon=True)
        thread.start()
        return thread


def rules_of(settings: Settings, store: Store, version: int) -> RuleSet:
    """The rules of one version (0: the shipped rules/ directory)."""
    return parsed_rules(*version_text(settings, store, version).texts)
