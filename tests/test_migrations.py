"""Schema migrations: an old database upgrades, parallel first runs agree, models match revisions."""

from __future__ import annotations

import json
import multiprocessing
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from helpers import postgres_schema
from sqlalchemy import create_engine, inspect, text

from pipeline.core.errors import StoreError
from pipeline.store import Store
from pipeline.store.engine import open_engine
from pipeline.store.migrate import _config, head_revision, upgrade
from pipeline.store.schema import Base

PARALLEL_RUNS = 12

pytestmark = pytest.mark.real_migrations


@pytest.fixture(params=["sqlite", "postgresql"])
def fresh_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """The URL of an empty database: a new SQLite file, or a new PostgreSQL schema."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'fresh' / 'wb.db'}"
        return
    with postgres_schema("m") as url:
        yield url


def _first_release_database(url: str) -> None:
    """What the first release left behind: its tables (revision 0001) and no alembic_version."""
    engine = open_engine(url, migration=True)
    with engine.connect() as conn, conn.begin():
        command.upgrade(_config(conn), "0001")
        conn.execute(text("DROP TABLE alembic_version"))
    engine.dispose()


def _insert_old_session(url: str) -> None:
    """Rows written the way the first release wrote them (its columns, plain SQL)."""
    engine = create_engine(url)
    now = datetime(2026, 3, 1, 10, 0, tzinfo=UTC)
    with engine.begin() as conn:
        conn.execute(text(
            "INSERT INTO diagnosis_session (id, created_at, updated_at, question, world, shape, provider, model,"
            " status, stage, verdict, gatekeeper_status, failed_rules, services, rounds, timings_ms,"
            " prompt_tokens, completion_tokens, cost_usd, self_evaluation)"
            " VALUES ('s-old', :now, :now, '支付接口超时', 'payment', 'split', 'offline', 'offline-v1', 'completed',"
            " 'done', 'REJECT', 'fail', '[\"evidence.invocation_ref\"]', 'payment-service', 1, '{}', 0, 0, 0,"
            " '{\"verifier_evaluation\": {\"verdict\": \"REJECT\"}}')"), {"now": now})
        conn.execute(text(
            "INSERT INTO tool_invocation (session_id, round, tool_name, model_tool_name, arguments, status, output,"
            " output_preview, output_bytes, stored_cut_bytes, latency_ms, created_at)"
            " VALUES ('s-old', 1, 'query_logs', 'queryLogs', '{\"service\": \"payment-service\"}', 'ok',"
            " 'ERROR timeout', 'ERROR timeout', 13, 0, 2.5, :now)"), {"now": now})
        conn.execute(text(
            "INSERT INTO llm_call (session_id, stage, round, provider, model, prompt_file, prompt_version, messages,"
            " raw_response, parse_status, attempt, prompt_tokens, completion_tokens, latency_ms, created_at)"
            " VALUES ('s-old', 'diagnosis', 1, 'offline', 'offline-v1', 'diagnosis.md', 'v1', '[]', '{}', 'valid',"
            " 1, 0, 0, 1.0, :now)"), {"now": now})
        conn.execute(text(
            "INSERT INTO review (session_id, claim_id, label, note, reviewer, created_at)"
            " VALUES ('s-old', NULL, 'confirmed_reject', 'forged id', 'ana', :now)"), {"now": now})
    engine.dispose()


def test_first_release_database_is_stamped_upgraded_and_read(fresh_url: str) -> None:
    _first_release_database(fresh_url)
    _insert_old_session(fresh_url)

    store = Store(fresh_url)

    assert store.revision == head_revision()
    row = store.get_session("s-old")
    assert row is not None and row["verdict"] == "REJECT" and row["question"] == "支付接口超时"
    assert row["self_evaluation"] == {"verifier_evaluation": {"verdict": "REJECT"}}
    [inv] = store.invocations("s-old")
    assert (inv.tool_name, inv.output, inv.arguments) == ("query_logs", "ERROR timeout", {"service": "payment-service"})
    assert store.llm_calls("s-old")[0]["prompt_file"] == "diagnosis.md"
    assert store.reviews("s-old")[0]["label"] == "confirmed_reject"
    # The upgraded columns take what varchar(40) refused, and the copied tables kept their
    # foreign keys (SQLite rebuilt them): deleting the session still removes its invocations.
    long_tool = "t" * 60
    store.add_invocation(session_id="s-old", round=2, tool_name=long_tool, model_tool_name=long_tool, arguments={},
                         status="ok", output="", error=None, latency_ms=0.0)
    assert store.invocations("s-old")[-1].tool_name == long_tool
    with store.engine.begin() as conn:
        if conn.dialect.name == "sqlite":
            conn.exec_driver_sql("PRAGMA foreign_keys=ON")
        conn.execute(text("DELETE FROM diagnosis_session WHERE id = 's-old'"))
    assert store.invocations("s-old") == []
    assert {fk["referred_table"] for fk in inspect(store.engine).get_foreign_keys("tool_invocation")} == {
        "diagnosis_session"}


# Audit records as the contracts allow them (and as older releases left them), for 0007's backfill
# and 0016's renamed key.
_AUDIT_RECORDS = [
    None, "null", "{}", '"text"', '{"question_scope": {"services": []}}', '{"verifier_evaluation": null}',
    '{"rounds": [], "verifier_evaluation": "text"}',
    '{"verifier_evaluation": [1, 2]}', '{"verifier_evaluation": {"verdict": "PASS"}}',
    '{"verifier_evaluation": {"composer_filtered": []}}',
    '{"verifier_evaluation": {"composer_filtered": [{"text": "b", "reason": "unsupported"}]}}',
    '{"verifier_evaluation": {"composer_guard": null, "composer_filtered": []}}',
    '{"verifier_evaluation": {"composer_guard": {"status": "pass", "used_template": false}}}',
    '{"verifier_evaluation": {"composer_guard": {"status": "fail", "used_template": true}, "composer_filtered": []}}',
    '{"verifier_evaluation": {"composer_guard": {"status": "fail"}, "composer_filtered": [{"text": "b"}]}}',
    '{"verifier_evaluation": {"composer_guard": [true], "composer_filtered": {}}}',
]


def _renamed(record: Any) -> Any:
    """An audit record as revision 0016 leaves it: the last round under `round_audit`."""
    if isinstance(record, dict) and "verifier_evaluation" in record:
        return {("round_audit" if k == "verifier_evaluation" else k): v for k, v in record.items()}
    return record


def _insert_audit_records(url: str, revision: str, column: str) -> None:
    engine = open_engine(url, migration=True)
    with engine.connect() as conn, conn.begin():
        command.upgrade(_config(conn), revision)
        as_json = "CAST(:se AS JSON)" if conn.dialect.name == "postgresql" else ":se"
        for n, record in enumerate(_AUDIT_RECORDS):
            conn.execute(text(
                "INSERT INTO diagnosis_session (id, created_at, updated_at, question, shape, provider, model, status,"
                " stage, failed_rules, services, rounds, timings_ms, prompt_tokens, completion_tokens, cost_usd,"
                f" {column}) VALUES (:id, :now, :now, 'q', 'split', 'offline', 'm', 'completed', 'done', '[]',"
                f" '', 1, '{{}}', 0, 0, 0, {as_json})"), {"id": f"s-{n:02d}", "now": datetime(2026, 3, 1, tzinfo=UTC),
                                                        "se": record})
    engine.dispose()


def _stored_records(url: str, column: str) -> dict[str, Any]:
    engine = open_engine(url, migration=True)
    with engine.connect() as conn:
        rows = conn.execute(text(f"SELECT id, CAST({column} AS TEXT) FROM diagnosis_session")).all()
    engine.dispose()
    return {sid: None if value is None else json.loads(value) for sid, value in rows}


@pytest.mark.filterwarnings("ignore:Skipped unsupported reflection of expression-based index ix_session_listing")
def test_the_seeds_audit_names_come_back_after_the_rename_and_go_again_on_downgrade(fresh_url: str) -> None:
    _insert_audit_records(fresh_url, "0015", "self_evaluation")
    before = {f"s-{n:02d}": None if r is None else json.loads(r) for n, r in enumerate(_AUDIT_RECORDS)}
    assert _stored_records(fresh_url, "self_evaluation") == before

    def move(to: str, down: bool = False) -> None:
        engine = open_engine(fresh_url, migration=True)
        with engine.connect() as conn, conn.begin():
            (command.downgrade if down else command.upgrade)(_config(conn), to)
        engine.dispose()

    move("0017")  # as revision 0016 left them: column `audit`, the last round under `round_audit`
    renamed = _stored_records(fresh_url, "audit")
    assert renamed == {sid: _renamed(record) for sid, record in before.items()}
    assert sum(isinstance(r, dict) and "round_audit" in r for r in renamed.values()) == 11
    Store(fresh_url)  # upgrades to head: the seed's path again
    assert _stored_records(fresh_url, "self_evaluation") == before
    move("0017", down=True)
    assert _stored_records(fresh_url, "audit") == renamed
    move("0015", down=True)
    assert _stored_records(fresh_url, "self_evaluation") == before


def test_composer_findings_are_backfilled_as_the_store_writes_them(fresh_url: str) -> None:
    from pipeline.store.repo import composer_findings

    _insert_audit_records(fresh_url, "0006", "self_evaluation")

    store = Store(fresh_url)
    with store.engine.connect() as conn:
        stored = dict(conn.execute(text("SELECT id, composer_findings FROM diagnosis_session")).all())
    expected = {f"s-{n:02d}": composer_findings(None if r is None else json.loads(r))
                for n, r in enumerate(_AUDIT_RECORDS)}
    assert {k: bool(v) for k, v in stored.items()} == expected
    assert sum(expected.values()) == 3


def _on_this_backend(dialect: str) -> Any:
    """Alembic compares an index made for one backend only (Index.ddl_if) on every backend
    (sqlalchemy/alembic#1491): leave it out where its revision does not create it, and so a table
    made for one backend (info["dialect"])."""
    def include(obj: Any, _name: Any, type_: str, _reflected: bool, _compare_to: Any) -> bool:
        if type_ == "table":
            return obj.info.get("dialect") in (None, dialect)
        only = getattr(obj, "_ddl_if", None) if type_ == "index" else None
        return only is None or only.dialect in (None, dialect)
    return include


# SQLite cannot reflect ix_session_listing (an expression index), so neither side compares it
# there; test_views.py checks that the queue's plans use it.
@pytest.mark.filterwarnings("ignore:Skipped unsupported reflection of expression-based index ix_session_listing")
@pytest.mark.filterwarnings("ignore:autogenerate skipping metadata-specified expression-based index")
def test_models_and_migrations_agree(fresh_url: str) -> None:
    store = Store(fresh_url)
    with store.engine.connect() as conn:
        opts = {"compare_type": True, "include_object": _on_this_backend(conn.dialect.name)}
        diff = compare_metadata(MigrationContext.configure(conn, opts=opts), Base.metadata)
    assert diff == [], f"schema.py and pipeline/store/migrations/versions disagree; add a revision for: {diff}"


def _first_run(url: str, barrier: Any, results: Any) -> None:
    barrier.wait(timeout=60)
    store = Store(url)
    sid = store.create_session(question="q", world=None, shape="split", provider="offline", model="m")
    results.put((store.revision, sid))


@pytest.mark.slow  # starts worker processes
def test_parallel_first_runs_on_a_fresh_database_all_succeed(fresh_url: str) -> None:
    # Real processes, released together by a barrier, each opening the store on the same empty
    # database: the race that create_all lost (table or pg_type "already exists"). Forked, so
    # they start with the modules imported and meet at the barrier at once.
    ctx = multiprocessing.get_context("fork")
    barrier, results = ctx.Barrier(PARALLEL_RUNS), ctx.Queue()
    runs = [ctx.Process(target=_first_run, args=(fresh_url, barrier, results)) for _ in range(PARALLEL_RUNS)]
    for run in runs:
        run.start()
    for run in runs:
        run.join(timeout=120)
    assert [run.exitcode for run in runs] == [0] * PARALLEL_RUNS
    opened = [results.get(timeout=5) for _ in runs]
    assert {revision for revision, _ in opened} == {head_revision()}
    assert sorted(Store(fresh_url).session_ids()) == sorted(sid for _, sid in opened)


def test_upgrade_is_run_once(fresh_url: str) -> None:
    engine = open_engine(fresh_url)
    # The head read from the file names (no Alembic import) is the one Alembic finds.
    assert head_revision() == ScriptDirectory.from_config(_config()).get_current_head()
    assert upgrade(engine) == upgrade(engine) == head_revision()
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM alembic_version")).scalar_one() == 1
    engine.dispose()


def test_db_upgrade_command_prints_the_revision(capsys: pytest.CaptureFixture[str]) -> None:
    from pipeline.frontends.cli import main

    assert main(["db", "upgrade"]) == 0
    assert capsys.readouterr().out.strip().endswith(f"schema at revision {head_revision()} (head)")


def test_a_database_from_a_newer_release_is_refused_with_a_message(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'wb.db'}"
    with Store(url).engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = '0999'"))
    with pytest.raises(StoreError, match="has a schema this version does not know .*'0999'"):
        Store(url)


@pytest.mark.filterwarnings("ignore:Skipped unsupported reflection of expression-based index ix_session_listing")
def test_rows_in_force_keep_their_sessions_across_0023_down_and_up(fresh_url: str) -> None:
    # 0023 trades the foreign key for a trigger (and on PostgreSQL row triggers of the tally for
    # statement ones); either way a row in force goes with its session and the tally holds.
    from helpers import tally_holds

    def move(to: str, down: bool = False) -> None:
        engine = open_engine(fresh_url, migration=True)
        with engine.connect() as conn, conn.begin():
            (command.downgrade if down else command.upgrade)(_config(conn), to)
        engine.dispose()

    store = Store(fresh_url)
    ids = [store.create_session(question=f"q{n}", world=None, shape="split", provider="offline", model="m")
           for n in range(3)]
    with store.engine.begin() as conn:
        conn.execute(text("INSERT INTO verdict_in_force (session_id, verdict, gatekeeper_status, failed_rules) "
                          "VALUES (:a, 'REJECT', 'fail', '[\"x\"]'), (:b, 'PASS', 'pass', '[]')"),
                     {"a": ids[0], "b": ids[1]})
    store.engine.dispose()
    for revision, down in (("0022", True), ("0023", False)):
        move(revision, down)
        engine = open_engine(fresh_url)
        keys = inspect(engine).get_foreign_keys("verdict_in_force")
        assert [k["referred_table"] for k in keys] == (["diagnosis_session"] if down else [])
        with engine.begin() as conn:
            assert conn.execute(text("SELECT count(*) FROM verdict_in_force")).scalar_one() == 2
            conn.execute(text("UPDATE verdict_in_force SET verdict = :v WHERE session_id = :a"),
                         {"v": revision, "a": ids[0]})
        assert tally_holds(SimpleNamespace(engine=engine))
        engine.dispose()
    store = Store(fresh_url)
    with store.engine.begin() as conn:
        conn.execute(text("DELETE FROM diagnosis_session WHERE id = :b"), {"b": ids[1]})
        assert conn.execute(text("SELECT session_id FROM verdict_in_force")).scalars().all() == [ids[0]]
    assert tally_holds(store)
