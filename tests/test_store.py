"""The store against SQLite and a real PostgreSQL: same behaviour on both."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from helpers import require
from sqlalchemy import create_engine, make_url, text

from pipeline.core.config import ROOT
from pipeline.core.contracts import LlmCallRecord
from pipeline.core.errors import StoreError
from pipeline.core.events import SessionEvent
from pipeline.runs.session import run_session
from pipeline.store import SessionFilter, StaleRuleVersion, Store, rows
from pipeline.store.listing import session_list, session_outcome


def _session(store: Store, question: str = "q", **values) -> str:
    sid = store.create_session(question=question, world=None, shape="split", provider="offline", model="m")
    if values:
        store.update_session(sid, **values)
    return sid


def test_invocation_ids_are_global_and_outputs_kept_whole(any_store: Store) -> None:
    a, b = _session(any_store), _session(any_store)
    big = "x" * 3_000_000
    ia = any_store.add_invocation(session_id=a, round=1, tool_name="query_logs", model_tool_name="queryLogs",
                                  arguments={"service": "s"}, status="ok", output=big, error=None, latency_ms=1.0)
    ib = any_store.add_invocation(session_id=b, round=1, tool_name="query_logs", model_tool_name="queryLogs",
                                  arguments={}, status="error", output="", error="down", latency_ms=2.0)
    assert ia.id != ib.id
    assert any_store.invocation(ia.id).output == big
    assert any_store.invocation(ib.id).session_id == b
    meta = any_store.invocation_meta(a)[0]
    assert meta["output_bytes"] == len(big) and len(meta["output_preview"]) < 10_000


def test_filters_paging_and_reviews(any_store: Store) -> None:
    now = datetime.now(UTC)
    ids = []
    for i in range(30):
        verdict = ("PASS", "LOW_CONFID", "REJECT")[i % 3]
        sid = any_store.create_session(question=f"question {i} about payment", world=None, shape="split",
                                       provider="offline", model="m", created_at=now - timedelta(hours=i))
        any_store.update_session(sid, verdict=verdict, gatekeeper_status="fail" if verdict == "REJECT" else "pass",
                                 failed_rules=["evidence.invocation_ref"] if verdict == "REJECT" else [],
                                 services="payment-service" if i % 2 else "order-service", status="completed")
        ids.append(sid)
    rows, total = any_store.list_sessions(SessionFilter(verdicts=["REJECT"]), limit=5)
    assert total == 10 and len(rows) == 5 and all(r["verdict"] == "REJECT" for r in rows)
    assert rows[0]["created_at"] >= rows[-1]["created_at"]
    assert any_store.list_sessions(SessionFilter(rule_id="evidence.invocation_ref"))[1] == 10
    assert any_store.list_sessions(SessionFilter(service="order-service"))[1] == 15
    assert any_store.list_sessions(SessionFilter(text="question 7 "))[1] == 1
    assert any_store.list_sessions(SessionFilter(since=now - timedelta(hours=4, minutes=30)))[1] == 5
    page2, _ = any_store.list_sessions(limit=10, offset=10)
    assert len(page2) == 10

    any_store.add_review(session_id=ids[2], label="confirmed_reject", reviewer="ana", note="fabricated id")
    any_store.add_review(session_id=ids[2], label="claim_wrong", reviewer="ana", claim_id="claim-1")
    with pytest.raises(ValueError):
        any_store.add_review(session_id=ids[2], label="x", reviewer=" ")
    unreviewed = any_store.list_sessions(SessionFilter(verdicts=["REJECT", "LOW_CONFID"], reviewed=False))[1]
    assert unreviewed == 19
    reviewed_rows, n = any_store.list_sessions(SessionFilter(reviewed=True))
    assert n == 1 and reviewed_rows[0]["review_label"] == "confirmed_reject"
    assert len(any_store.reviews(ids[2])) == 2


def test_llm_calls_recorded(any_store: Store) -> None:
    sid = _session(any_store)
    any_store.add_llm_call(sid, LlmCallRecord(stage="diagnosis", provider="openai", model="m", attempt=2,
                                              parse_status="malformed", raw_response="{oops", error="bad json",
                                              messages=[{"role": "user", "content": "hi"}], prompt_tokens=10))
    call = any_store.llm_calls(sid)[0]
    assert call["attempt"] == 2 and call["parse_status"] == "malformed" and call["messages"][0]["content"] == "hi"


def _keys(shape: type) -> set[str]:
    return set(shape.__required_keys__ | shape.__optional_keys__)


def test_each_read_hands_out_the_columns_its_shape_names(any_store: Store) -> None:
    """The row shapes of pipeline.store.rows are written beside the tables, not derived from them:
    a column added to a table or a read without its shape following fails here."""
    sid = _session(any_store, verdict="PASS")
    any_store.add_invocation(session_id=sid, round=1, tool_name="query_logs", model_tool_name="queryLogs",
                             arguments={}, status="ok", output="x", error=None, latency_ms=1.0)
    any_store.add_llm_call(sid, LlmCallRecord(stage="diagnosis", provider="offline", model="m"))
    any_store.add_review(session_id=sid, label="correct", reviewer="ana")
    any_store.apply_rule_version(index_yaml="a", metadata_yaml="b", author="ana", comment="", based_on=None)
    session = any_store.get_session(sid)
    assert session is not None and set(session) == _keys(rows.SessionColumns)
    assert [set(r) for r in any_store.list_sessions()[0]] == [_keys(rows.ListedSession)]
    assert [set(r) for r in any_store.invocation_meta(sid)] == [_keys(rows.InvocationMetaColumns)]
    assert [set(r) for r in any_store.llm_calls(sid)] == [_keys(rows.LlmCallColumns)]
    assert [set(r) for r in any_store.reviews(sid)] == [_keys(rows.ReviewColumns)]
    assert [set(r) for r in any_store.rule_versions()] == [_keys(rows.RuleVersionColumns)]
    assert [set(r) for r in session_list(any_store)] == [_keys(rows.SessionListing)]
    assert set(session_outcome(any_store, sid) or ()) == _keys(rows.SessionOutcome)


def test_rule_versions_refuse_a_stale_apply(any_store: Store) -> None:
    first = any_store.apply_rule_version(index_yaml="a", metadata_yaml="b", author="ana", comment="c", based_on=None)
    second = any_store.apply_rule_version(index_yaml="a2", metadata_yaml="b2", author="bo", comment="", based_on=first)
    with pytest.raises(StaleRuleVersion):
        any_store.apply_rule_version(index_yaml="a3", metadata_yaml="b3", author="ana", comment="", based_on=first)
    active = any_store.active_rule_version()
    assert active["id"] == second and active["parent_id"] == first
    assert [v["id"] for v in any_store.rule_versions()] == [second, first]


def test_whole_session_persists(any_store: Store, settings) -> None:
    result = run_session("支付接口最近出现超时，帮我排查", settings=settings, store=any_store)
    row = any_store.get_session(result.session_id)
    evaluation = row["self_evaluation"]["verifier_evaluation"]
    assert evaluation["gatekeeper_result"]["status"] == row["gatekeeper_status"]
    assert evaluation["traceability_version"] == "v2"
    assert row["gatekeeper_features"] and row["executor_raw_output"] and row["evidence_digests"]
    assert row["timings_ms"]


def test_strings_from_models_and_bundles_have_no_length_limit(any_store: Store) -> None:
    # varchar(40) on PostgreSQL refused these where SQLite stored them.
    sid = any_store.create_session(question="q", world="w" * 100, shape="split", provider="p" * 100,
                                   model="m" * 300, session_id="imported-" + "9" * 50)
    tool = "planner_invented_tool_" + "x" * 40
    inv = any_store.add_invocation(session_id=sid, round=1, tool_name=tool, model_tool_name=tool, arguments={},
                                   status="error", output="", error="unknown tool", latency_ms=0.0)
    any_store.add_review(session_id=sid, label="l" * 60, reviewer="r" * 200, claim_id="claim-" + "c" * 100)
    any_store.add_llm_call(sid, LlmCallRecord(stage="diagnosis", provider="p" * 60, model="m" * 200,
                                              parse_status="valid", prompt_file="f" * 300))
    assert any_store.get_session(sid)["model"] == "m" * 300
    assert any_store.invocation(inv.id).tool_name == tool
    assert any_store.reviews(sid)[0]["claim_id"] == "claim-" + "c" * 100
    assert any_store.llm_calls(sid)[0]["prompt_file"] == "f" * 300


def test_nul_is_replaced_the_same_way_on_both_backends(any_store: Store) -> None:
    sid = _session(any_store, question="pay\x00ment")
    any_store.update_session(sid, final_answer="a\x00b", planner_plan={"steps": ["x\x00y"], "literal": "\\u0000"})
    inv = any_store.add_invocation(session_id=sid, round=1, tool_name="query_logs", model_tool_name="queryLogs",
                                   arguments={"q": "\x00"}, status="ok", output="log\x00line", error=None,
                                   latency_ms=1.0)
    row = any_store.get_session(sid)
    assert (row["question"], row["final_answer"]) == ("pay\ufffdment", "a\ufffdb")
    # A JSON string holding a NUL gets the same replacement; the six characters "\u0000" stay text.
    assert row["planner_plan"] == {"steps": ["x\ufffdy"], "literal": "\\u0000"}
    stored = any_store.invocation(inv.id)
    assert (stored.output, stored.arguments) == ("log\ufffdline", {"q": "\ufffd"})
    assert any_store.list_sessions(SessionFilter(text="pay\x00ment"))[1] == 1


def test_updating_a_vanished_session_fails_loudly(any_store: Store) -> None:
    sid = _session(any_store)
    with any_store.engine.begin() as conn:
        conn.execute(text("DELETE FROM diagnosis_session WHERE id = :id"), {"id": sid})
    with pytest.raises(StoreError, match=f"session {sid} is no longer in the database"):
        any_store.update_session(sid, verdict="PASS")


def test_a_deleted_database_file_fails_the_next_write(tmp_path: Path) -> None:
    # An open SQLite connection would go on writing into the unlinked file: stored nowhere.
    store = Store(f"sqlite:///{tmp_path / 'wb.db'}")
    sid = _session(store)
    for name in ("wb.db", "wb.db-wal", "wb.db-shm"):
        (tmp_path / name).unlink(missing_ok=True)
    with pytest.raises(StoreError, match="deleted or replaced"):
        store.update_session(sid, verdict="PASS")


def test_unopenable_databases_raise_store_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "a-file").write_text("")
    with pytest.raises(StoreError, match="cannot create the directory"):
        Store(f"sqlite:///{tmp_path / 'a-file' / 'sub' / 'wb.db'}")
    monkeypatch.setitem(sys.modules, "psycopg", None)  # as if the [postgres] extra were not installed
    with pytest.raises(StoreError, match=r"not installed \(psycopg\).*evidence-workbench\[postgres\]") as err:
        Store("postgresql://wb:s3cret@db.example/wb")
    assert "s3cret" not in str(err.value)


READ_ONLY_READER = """
import sys
from pipeline.core.errors import StoreError
from pipeline.store import Store
store = Store(sys.argv[1])
rows, total = store.list_sessions()
print(total, store.get_session(sys.argv[2])["question"], len(store.invocations(sys.argv[2])))
try:
    store.create_session(question="q", world=None, shape="split", provider="p", model="m")
except StoreError as exc:
    print("refused:", exc)
"""


STOPPED_WRITER = """
import os, sys
from pipeline.store import Store
store = Store(sys.argv[1])
sid = store.create_session(question="支付超时", world=None, shape="split", provider="offline", model="m")
store.add_invocation(session_id=sid, round=1, tool_name="query_logs", model_tool_name="queryLogs", arguments={},
                     status="ok", output="x", error=None, latency_ms=1.0)
print(sid, flush=True)
os._exit(0)  # as a killed writer: no close, its last commits left in the write-ahead log
"""


OPENER = """
import sys, time
from pathlib import Path
from pipeline.store import Store
while not Path(sys.argv[2]).exists():
    time.sleep(0.01)
Store(sys.argv[1]).engine.dispose()
"""


@pytest.mark.slow  # starts processes
def test_stores_opened_together_hold_one_whole_reserve(tmp_path: Path) -> None:
    """The 1 MB held back beside a SQLite file: one left short (its writer killed mid-write) was
    kept as it was, holding nothing back; processes opening a new store at once all open it and
    leave one whole reserve and no other file."""
    from pipeline.store.repo import RESERVE_BYTES

    short = tmp_path / "short"
    short.mkdir()
    (short / "workbench.db-reserve").write_bytes(bytes(4096))
    Store(f"sqlite:///{short / 'workbench.db'}").engine.dispose()
    assert (short / "workbench.db-reserve").stat().st_size == RESERVE_BYTES

    home, go = tmp_path / "together", tmp_path / "go"
    home.mkdir()
    openers = [subprocess.Popen([sys.executable, "-c", OPENER, f"sqlite:///{home / 'workbench.db'}", str(go)],
                                stderr=subprocess.PIPE, text=True) for _ in range(4)]
    go.touch()
    for p in openers:
        _, err = p.communicate(timeout=600)
        assert p.returncode == 0, err
    # (Two closing at once may each leave the log to the other: -wal and -shm are not counted.)
    assert [n for n in os.listdir(home) if "reserve" in n] == ["workbench.db-reserve"]
    assert (home / "workbench.db-reserve").stat().st_size == RESERVE_BYTES


@pytest.mark.slow  # starts processes
@pytest.mark.parametrize("writer", ["closed", "stopped"])
def test_a_read_only_database_still_serves_reads(tmp_path: Path, writer: str) -> None:
    """A stopped writer: the reader read the main file alone (immutable), found no schema and
    tried to migrate ("attempt to write a readonly database")."""
    home = tmp_path / "ro"
    url = f"sqlite:///{home / 'workbench.db'}"
    if writer == "closed":
        store = Store(url)
        sid = _session(store, question="支付超时")
        store.add_invocation(session_id=sid, round=1, tool_name="query_logs", model_tool_name="queryLogs",
                             arguments={}, status="ok", output="x", error=None, latency_ms=1.0)
        store.engine.dispose()
    else:
        sid = subprocess.run([sys.executable, "-c", STOPPED_WRITER, url], capture_output=True, text=True,
                             timeout=120, check=True).stdout.strip()
    files = sorted(os.listdir(home))
    assert files == (["workbench.db", "workbench.db-reserve"] if writer == "closed"
                     else ["workbench.db", "workbench.db-reserve", "workbench.db-shm", "workbench.db-wal"])
    for name in files:
        (home / name).chmod(0o444)
    home.chmod(0o555)
    command = [sys.executable, "-c", READ_ONLY_READER, f"sqlite:///{home / 'workbench.db'}", sid]
    if os.geteuid() == 0:
        # root ignores file modes; without these capabilities it obeys them like any user.
        require(shutil.which("setpriv") is not None, "setpriv (util-linux)")
        caps = "-dac_override,-dac_read_search,-fowner"
        command = ["setpriv", f"--inh-caps={caps}", f"--bounding-set={caps}", *command]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
        export = subprocess.run(
            [*command[: command.index(sys.executable)], sys.executable, "-m", "pipeline", "export", sid],
            capture_output=True, text=True, timeout=120, check=False,
            env={**os.environ, "WORKBENCH_HOME": str(home)})
    finally:
        home.chmod(0o755)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "1 支付超时 1"
    assert lines[1].startswith("refused: cannot write to the database") and "readonly" in lines[1]
    assert sorted(os.listdir(home)) == files, "reading wrote beside the database"
    assert export.returncode == 0 and '"支付超时"' in export.stdout, export.stderr


@pytest.mark.slow  # starts processes
def test_writing_commands_on_a_read_only_postgresql_refuse_in_one_line(tmp_path: Path) -> None:
    """A standby or a database kept to reads: every transaction is read-only. procrastinate's own
    schema and jobs (`eval` runs as a job) were a traceback."""
    base = os.environ.get("DATABASE_URL_TEST")
    require(bool(base), "PostgreSQL (DATABASE_URL_TEST)")
    assert base
    name = f"ro_{uuid.uuid4().hex[:10]}"
    admin = create_engine(base, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f"CREATE DATABASE {name}"))
    url = make_url(base).set(database=name).render_as_string(hide_password=False)
    try:
        store = Store(url)
        sid = _session(store, question="支付超时", status="completed")
        store.engine.dispose()
        with admin.connect() as conn:
            conn.execute(text(f"ALTER DATABASE {name} SET default_transaction_read_only = on"))
        tuned = shutil.copytree(ROOT / "rules", tmp_path / "rules")
        metadata = tuned / "metadata.yaml"
        metadata.write_text(metadata.read_text(encoding="utf-8").replace("passThreshold: 0.5\n", "passThreshold: 0.6\n",
                                                                         1), encoding="utf-8")
        env = {**os.environ, "DATABASE_URL": url, "WORKBENCH_HOME": str(tmp_path / "home"),
               "WORKBENCH_CONFIG": str(tmp_path / "none.yaml")}
        done = [subprocess.run([sys.executable, "-m", "pipeline", *argv], capture_output=True, text=True, timeout=120,
                               check=False, env=env)
                for argv in (["ask", "payment API times out since 10:00"], ["rerun", sid], ["eval"],
                             ["rules", "apply", "--author", "a", str(tuned)])]
        for run in done:
            assert run.returncode == 2 and run.stdout == "", run.stderr
            (line,) = run.stderr.splitlines()
            assert line.startswith("workbench: cannot write to the database") and "read-only transaction" in line, line
        reader = Store(url)
        assert reader.get_session(sid)["status"] == "completed"
        reader.engine.dispose()
    finally:
        with admin.connect() as conn:
            conn.execute(text(f"DROP DATABASE {name} WITH (FORCE)"))
        admin.dispose()


@pytest.mark.slow  # starts processes
def test_writing_commands_on_a_read_only_database_refuse_in_one_line(tmp_path: Path) -> None:
    """Were raw tracebacks: the reaper's UPDATE at the start of every session, and eval's record
    of its run, bypassed the store's error translation."""
    home = tmp_path / "ro"
    store = Store(f"sqlite:///{home / 'workbench.db'}")
    sid = _session(store, question="支付超时", status="completed")
    store.engine.dispose()
    tuned = shutil.copytree(ROOT / "rules", tmp_path / "rules")
    metadata = tuned / "metadata.yaml"
    metadata.write_text(metadata.read_text(encoding="utf-8").replace("passThreshold: 0.5\n", "passThreshold: 0.6\n", 1),
                        encoding="utf-8")
    (home / "workbench.db").chmod(0o444)
    home.chmod(0o555)
    prefix: list[str] = []
    if os.geteuid() == 0:
        # root ignores file modes; without these capabilities it obeys them like any user.
        require(shutil.which("setpriv") is not None, "setpriv (util-linux)")
        caps = "-dac_override,-dac_read_search,-fowner"
        prefix = ["setpriv", f"--inh-caps={caps}", f"--bounding-set={caps}"]
    env = {**os.environ, "WORKBENCH_HOME": str(home), "WORKBENCH_CONFIG": str(tmp_path / "none.yaml")}
    try:
        done = [subprocess.run([*prefix, sys.executable, "-m", "pipeline", *argv], capture_output=True, text=True,
                               timeout=120, check=False, env=env)
                for argv in (["ask", "payment API times out since 10:00"], ["rerun", sid], ["eval"],
                             ["rules", "apply", "--author", "a", str(tuned)])]
    finally:
        home.chmod(0o755)
    for run in done:
        assert run.returncode == 2 and run.stdout == "", run.stderr
        (line,) = run.stderr.splitlines()
        assert line.startswith("workbench: cannot write to the database") and "readonly" in line
    assert [row["status"] for row in Store(f"sqlite:///{home / 'workbench.db'}").list_sessions()[0]] == ["completed"]


def test_a_session_whose_database_vanished_gives_no_verdict(settings, tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'gone.db'}")

    def delete_database(event: SessionEvent) -> None:
        if event.type == "planner":
            for name in ("gone.db", "gone.db-wal", "gone.db-shm"):
                (tmp_path / name).unlink(missing_ok=True)

    with pytest.raises(StoreError, match="deleted or replaced"):
        run_session("支付接口最近出现超时", settings=settings, store=store, on_event=delete_database)
