"""Rule versions: one in force whatever the concurrency, applied from the shell as from the page."""

from __future__ import annotations

import getpass
import multiprocessing
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import postgres_schema, queue_count, tally_holds

from pipeline.core.messages import tr
from pipeline.store import StaleRuleVersion, Store

APPLIERS = 8


def _apply(url: str, based_on: int, start: multiprocessing.synchronize.Barrier, n: int) -> str:
    store = Store(url)
    start.wait()
    try:
        new = store.apply_rule_version(index_yaml=f"i{n}", metadata_yaml="m", author=f"a{n}", comment="",
                                       based_on=based_on)
        return f"ok {new}"
    except StaleRuleVersion as exc:
        return str(exc)


def _race(url: str, existing: bool) -> None:
    store = Store(url)
    base = store.apply_rule_version(index_yaml="i", metadata_yaml="m", author="ana", comment="",
                                    based_on=None) if existing else 0
    ctx = multiprocessing.get_context("fork")
    start = ctx.Manager().Barrier(APPLIERS)
    with ctx.Pool(APPLIERS) as pool:
        said = pool.starmap(_apply, [(url, base, start, n) for n in range(APPLIERS)])
    won = [int(s.split()[1]) for s in said if s.startswith("ok ")]
    assert len(won) == 1, said
    assert [s for s in said if not s.startswith("ok ")] == [f"version {won[0]} was applied meanwhile (you started from version {base}); "
                                 "reload, review the difference and apply again"] * (APPLIERS - 1)
    versions = store.rule_versions()
    assert [v["id"] for v in versions if v["active"]] == [won[0]] == [store.rules_version()]
    assert len(versions) == 1 + existing  # the refused applies left nothing behind
    assert store.active_rule_version()["parent_id"] == (base or None)


@pytest.mark.slow
@pytest.mark.parametrize("existing", [False, True], ids=["first-version", "over-a-version"])
def test_concurrent_applies_on_sqlite_leave_one_version_in_force(tmp_path: Path, existing: bool) -> None:
    _race(f"sqlite:///{tmp_path / 'wb.db'}", existing)


@pytest.mark.slow
@pytest.mark.parametrize("existing", [False, True], ids=["first-version", "over-a-version"])
def test_concurrent_applies_on_postgresql_leave_one_version_in_force(existing: bool) -> None:
    with postgres_schema("rv") as url:
        _race(url, existing)


def _rules_dir(tmp_path: Path, name: str, edits: dict[str, str]) -> Path:
    """A copy of the shipped rules with some text replaced."""
    root = Path(__file__).resolve().parent.parent / "rules"
    out = tmp_path / name
    out.mkdir()
    for file in ("index.yaml", "metadata.yaml"):
        text = (root / file).read_text(encoding="utf-8")
        for old, new in edits.items():
            text = text.replace(old, new)
        (out / file).write_text(text, encoding="utf-8")
    return out


def test_rules_from_a_shell_apply_list_diff_and_roll_back(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    from pipeline.frontends.cli import main

    def run(*argv: str) -> tuple[int, str, str]:
        code = main(list(argv))
        out, err = capsys.readouterr()
        return code, out, err

    tuned = _rules_dir(tmp_path, "tuned", {"passThreshold: 0.5": "passThreshold: 0.55",
                                           "warnThreshold: 0.3": "warnThreshold: 0.35"})
    code, out, _ = run("rules", "diff", str(tuned))
    assert code == 0 and [line for line in out.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---")] == [
        "-      passThreshold: 0.5", "-      warnThreshold: 0.3", "+      passThreshold: 0.55", "+      warnThreshold: 0.35"]
    assert run("rules", "apply", str(tuned), "--author", " ")[2] == f"workbench: {tr('rules.need_author', 'en')}\n"
    code, out, _ = run("rules", "apply", str(tuned), "--author", "ana", "--comment", "noisy payment logs")
    assert (code, out) == (0, f"applied {tuned} as version 1 (based on version 0)\n"
                              "re-judged 0 stored sessions under version 1: 0 now differ from their verdict at ask\n")
    assert run("rules", "diff", str(tuned))[1] == "(no difference against version 1, the version in force)\n"
    assert run("rules", "apply", str(tuned), "--author", "ana")[1:] == (
        "", f"workbench: {tr('rules.unchanged', 'en')}\n")
    broken = _rules_dir(tmp_path, "broken", {"passThreshold: 0.5": "passThreshold: 1.5"})
    code, _, err = run("rules", "apply", str(broken), "--author", "ana")
    assert code == 2 and err.startswith(f"workbench: {tr('rules.invalid', 'en', count=1)}; metadata.yaml: "
                                        "ruleMetadata.evidence.excerpt_similarity.params.passThreshold: 1.5 is outside")
    code, out, _ = run("rules", "rollback", "0", "--author", "bo")
    assert (code, out.splitlines()[0]) == (0, "version 0 re-applied as version 2")
    assert run("rules", "rollback", "2", "--author", "bo")[2] == f"workbench: {tr('rules.already_in_force', 'en', id=2)}\n"
    assert run("rules", "rollback", "9", "--author", "bo")[2].startswith("workbench: no rule version 9")
    code, out, _ = run("rules", "history")
    assert code == 0 and [line[:4] for line in out.splitlines()] == ["* v2", "  v1", "  v0"]
    assert "from v1" in out.splitlines()[0] and "roll back to version 0" in out and "noisy payment logs" in out
    # With editors listed, a typed name proves nothing: the shell acts as the editor its
    # operating-system account is mapped to, or not at all.
    config = tmp_path / "editors.yaml"
    config.write_text("ui:\n  editors: [ana]\n", encoding="utf-8")
    monkeypatch.setenv("WORKBENCH_CONFIG", str(config))
    account = getpass.getuser()
    assert run("rules", "apply", str(tuned), "--author", "ana")[2] == (
        f"workbench: {tr('rules.shell_unmapped', 'en', account=account)}\n")
    config.write_text(f"ui:\n  editors: [ana]\n  shell_identities: {{{account}: ana}}\n", encoding="utf-8")
    assert run("rules", "apply", str(tuned), "--author", "eve")[2] == (
        f"workbench: {tr('rules.shell_author_differs', 'en', typed='eve', account=account, mapped='ana')}\n")
    code, out, _ = run("rules", "rollback", "1")
    assert code == 0 and run("rules", "history", "--json")[1].count('"author": "ana"') >= 2
    config.write_text(f"ui:\n  editors: [lead]\n  shell_identities: {{{account}: ana}}\n", encoding="utf-8")
    assert run("rules", "rollback", "0")[2] == (
        f"workbench: {tr('rules.not_an_editor', 'en', who='ana', editors='lead')}\n")


def _row_writes(store: Store) -> Callable[[], Counter[str]]:
    """Rows written to verdict_in_force by kind, as the database's own triggers count them (the
    SQLite re-judge writes through the driver's cursor, which no engine event hears); the
    counter empties the tally as it reads it."""
    with store.engine.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE row_writes (kind TEXT NOT NULL)")
        if store.engine.dialect.name == "postgresql":
            conn.exec_driver_sql("CREATE FUNCTION row_written() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                                 "INSERT INTO row_writes VALUES (TG_OP); RETURN NULL; END $$")
            conn.exec_driver_sql("CREATE TRIGGER row_written AFTER INSERT OR UPDATE OR DELETE ON verdict_in_force "
                                 "FOR EACH ROW EXECUTE FUNCTION row_written()")
        else:
            for kind in ("INSERT", "UPDATE", "DELETE"):
                conn.exec_driver_sql(f"CREATE TRIGGER row_written_{kind.lower()} AFTER {kind} ON verdict_in_force "
                                     f"FOR EACH ROW BEGIN INSERT INTO row_writes VALUES ('{kind}'); END")

    def taken() -> Counter[str]:
        with store.engine.begin() as conn:
            kinds = Counter(conn.exec_driver_sql("SELECT kind FROM row_writes").scalars())
            conn.exec_driver_sql("DELETE FROM row_writes")
        return kinds

    return taken


def test_a_rejudge_leaves_the_rows_whose_outcome_it_keeps(any_store: Store, settings) -> None:  # noqa: ANN001
    from sqlalchemy import select

    from pipeline.frontends.views import rules_yaml
    from pipeline.frontends.views.trace import verdict_change
    from pipeline.runs import rulebook
    from pipeline.runs.session import run_session
    from pipeline.store.listing import session_list
    from pipeline.store.schema import VerdictInForce

    store = any_store
    ids = [run_session(q, settings=settings, store=store).session_id
           for q in ("payment API times out since 10:00, what's going on?", "order-service CPU is high")]
    written = _row_writes(store)
    strict = _strict_utilization(rulebook.text_in_force(settings, store).texts)
    first = rulebook.apply_rules(settings, store, strict, author="ana", comment="", based_on=0)
    rulebook.rejudge(settings, store)
    moved = {sid for sid, r in _exact(settings, store, ids).items()
             if r[0] != {x["id"]: x for x in session_list(store)}[sid]["verdict_at_ask"]}
    assert moved and written()["INSERT"] >= len(moved)
    with store.engine.connect() as conn:  # the rows name no version: the pointer does
        assert set(conn.execute(select(VerdictInForce.rules_version)).scalars()) == {None}

    # A version that judges every session as the one before: its re-judge changes no row, and
    # every row now reads as judged by it.
    same = rules_yaml.set_rule_field(*strict, "claim.evidence_utilization", "description", "the same rule, described")
    second = rulebook.apply_rules(settings, store, same, author="bo", comment="", based_on=first)
    done = rulebook.rejudge(settings, store)
    assert done.stored and done.differing >= len(moved)
    assert written() == Counter()
    listed = {r["id"]: r for r in session_list(store)}
    assert {listed[sid]["rules_version"] for sid in moved} == {second}
    change = verdict_change(settings, store, next(iter(moved)))
    assert change is not None and change.version_in_force == second
    assert {sid: listed[sid]["verdict"] for sid in ids} == {sid: r[0] for sid, r in _exact(settings, store, ids).items()}

    # Rolled back to the rules they were asked under: the rows go, each once, and none is written.
    rulebook.rollback(settings, store, 0, author="bo")
    rulebook.rejudge(settings, store)
    kinds = written()
    assert kinds["DELETE"] >= len(moved) and kinds["INSERT"] == kinds["UPDATE"] == 0
    assert {r["rules_version"] for r in session_list(store) if r["id"] in ids} == {store.rules_version()}


def test_a_rejudge_with_the_pages_columns_loads_none_again(any_store: Store, settings) -> None:  # noqa: ANN001
    """The Rules page re-judges after an apply with the columns its previews loaded: the gate
    tables are not read again unless sessions were added, and the outcome is a cold re-judge's."""
    from sqlalchemy import event

    from pipeline.replay.history import GateColumnCache
    from pipeline.runs import rulebook
    from pipeline.runs.session import run_session
    from pipeline.store.listing import session_list

    store = any_store
    ids = [run_session(q, settings=settings, store=store).session_id
           for q in ("payment API times out since 10:00, what's going on?", "order-service CPU is high")]
    page = GateColumnCache(store)
    page.refresh(rulebook.rules_in_force(settings, store)[0])
    loaded = page.arrays
    reads: list[str] = []

    def heard(_conn, _cursor, statement: str, *_args) -> None:  # noqa: ANN001
        if "gate_binding" in statement or "gate_claim" in statement:
            reads.append(statement)

    event.listen(store.engine, "after_cursor_execute", heard)
    rulebook.apply_rules(settings, store, _strict_utilization(rulebook.text_in_force(settings, store).texts),
                         author="ana", comment="", based_on=0)
    done = rulebook.rejudge(settings, store, history=page)
    assert done.stored and done.sessions == 2 and not reads and page.arrays is loaded
    assert {r["id"]: r["verdict"] for r in session_list(store)} == {
        sid: e[0] for sid, e in _exact(settings, store, ids).items()}
    # A session asked since: the columns are loaded again, with it.
    ids.append(run_session("is redis healthy?", settings=settings, store=store).session_id)
    rulebook.rollback(settings, store, 0, author="bo")
    assert rulebook.rejudge(settings, store, history=page).sessions == 3 and reads and page.arrays is not loaded
    assert {r["id"]: r["verdict"] for r in session_list(store)} == {
        sid: e[0] for sid, e in _exact(settings, store, ids).items()}


def _strict_utilization(texts: tuple[str, str]) -> tuple[str, str]:
    """The rules with keyword coverage turned into a blocking rule that most claims fail."""
    from pipeline.frontends.views import rules_yaml

    index, meta = texts
    for field, value in (("severity", "error"), ("verdictImpact", "reject_on_fail"), ("params.minKeywordCoverage", 0.9)):
        index, meta = rules_yaml.set_rule_field(index, meta, "claim.evidence_utilization", field, value)
    return rules_yaml.set_rule_field(index, meta, "claim.evidence_utilization", "enabled", True)


def _exact(settings, store: Store, ids: list[str]) -> dict[str, tuple[str, str, list[str]]]:  # noqa: ANN001
    """Each session's (verdict, gatekeeper status, failed rules) under the rules in force, one by one."""
    from pipeline.replay.inputs import SessionInputCache
    from pipeline.replay.per_session import replay
    from pipeline.runs.rulebook import rules_in_force

    rows = replay(SessionInputCache(store).inputs(ids), rules_in_force(settings, store)[0])
    return {r.session_id: (r.projected_verdict, r.new_status, r.result.failed_rules) for r in rows}


def test_a_bulk_write_holds_the_tally_and_regroups_it_once(any_store: Store) -> None:
    from sqlalchemy import update

    from pipeline.store import tally
    from pipeline.store.schema import DiagnosisSession

    store = any_store
    for n in range(3):
        store.create_session(question=f"q{n}", world=None, shape="split", provider="offline", model="m")
    assert tally_holds(store)
    with store.engine.begin() as conn:
        before = tally.tally_rows(conn)
        with tally.bulk_write(conn):
            conn.execute(update(DiagnosisSession).values(verdict="REJECT", status="completed"))
            assert tally.tally_rows(conn) == before  # held: no trigger moved a count
        assert tally.tally_rows(conn) != before
    assert tally_holds(store)  # regrouped at the end of the block

    # A block that fails leaves nothing held: its transaction's rollback takes the hold with it,
    # and the next write is counted by the triggers again.
    with pytest.raises(RuntimeError), store.engine.begin() as conn, tally.bulk_write(conn):
        raise RuntimeError
    with store.engine.begin() as conn:
        conn.execute(update(DiagnosisSession).values(verdict="PASS"))
    assert tally_holds(store)


def test_applying_and_rolling_back_rejudge_every_stored_session(any_store: Store, settings) -> None:  # noqa: ANN001
    from collections import Counter

    from pipeline.runs import review_queue, rulebook
    from pipeline.runs.session import run_session
    from pipeline.store import SessionFilter
    from pipeline.store.listing import session_list

    store = any_store
    for question in ("payment API times out since 10:00, what's going on?", "支付接口最近出现超时，帮我排查",
                     "order-service CPU is high", "is redis healthy?"):
        run_session(question, settings=settings, store=store)
    asked = {r["id"]: r for r in session_list(store)}
    assert {(r["rules_version"], r["verdict"] == r["verdict_at_ask"]) for r in asked.values()} == {(0, True)}
    assert tally_holds(store)  # kept by the triggers, stage by stage

    heard: list[str] = []
    new = rulebook.apply_rules(settings, store, _strict_utilization(rulebook.text_in_force(settings, store).texts),
                               author="ana", comment="", based_on=0)
    done = rulebook.rejudge(settings, store, on_progress=lambda phase, _d, _t: heard.append(phase))
    assert done.stored and done.sessions == 4 and heard[0] == "load" and heard[-2:] == ["write", "done"]
    assert rulebook.judging(store).current and rulebook.judging(store).judging_version is None
    exact = _exact(settings, store, list(asked))
    in_force = {r["id"]: r for r in session_list(store)}
    assert {sid: r["verdict"] for sid, r in in_force.items()} == {sid: e[0] for sid, e in exact.items()}
    assert {sid: r["verdict_at_ask"] for sid, r in in_force.items()} == {sid: r["verdict"] for sid, r in asked.items()}
    assert {r["rules_version"] for r in in_force.values()} == {new}
    moved = [sid for sid, r in in_force.items() if r["verdict"] != r["verdict_at_ask"]]
    assert moved and done.differing >= len(moved)
    assert tally_holds(store)  # rebuilt by the re-judge

    # The queue, its charts and its filters read the verdict in force, and show the one at ask beside it.
    everything = review_queue.QueueFilter(needs_person=False, reviewed=None)
    stats = review_queue.queue_stats(store, everything)
    assert sum((Counter({v: n}) for _, v, n in stats.per_day), Counter()) == Counter(e[0] for e in exact.values())
    assert stats.failed_rules == dict(Counter(rule for e in exact.values() for rule in e[2]))
    rows = {r.id: r for r in review_queue.queue_rows(store, everything)}
    assert {sid: (r.verdict, r.gatekeeper_status, r.failed_rules) for sid, r in rows.items()} == exact
    assert {sid: r.verdict_at_ask for sid, r in rows.items()} == {sid: r["verdict"] for sid, r in asked.items()}
    passing = review_queue.QueueFilter(base=SessionFilter(verdicts=["PASS"]), needs_person=False, reviewed=None)
    assert {r.id for r in review_queue.queue_rows(store, passing)} == {sid for sid, e in exact.items() if e[0] == "PASS"}
    assert queue_count(store, passing) == review_queue.queue_stats(store, passing).total

    # A session judged under the version that was in force when it started, finishing after
    # another was put in force, is judged again under that one.
    late = run_session("order-service CPU is high", settings=settings, store=store).session_id
    again = rulebook.rollback(settings, store, 0, author="bo")
    rulebook.judge_late(settings, store, late, new)
    assert tally_holds(store)
    assert {r["id"]: (r["verdict"], r["rules_version"]) for r in session_list(store)}[late] == (
        _exact(settings, store, [late])[late][0], again)
    done = rulebook.rejudge(settings, store)
    assert tally_holds(store)
    rows_now = {r["id"]: r for r in session_list(store)}
    assert {sid: r["verdict"] for sid, r in rows_now.items()} == {sid: e[0] for sid, e in
                                                                  _exact(settings, store, list(rows_now)).items()}
    assert {r["rules_version"] for r in rows_now.values()} == {again}
    # Back on the rules they were asked under, the first four hold their verdicts at ask again.
    assert all(rows_now[sid]["verdict"] == rows_now[sid]["verdict_at_ask"] for sid in asked)
    assert done.differing == (rows_now[late]["verdict"] != rows_now[late]["verdict_at_ask"])
    assert sum((Counter({v: n}) for _, v, n in review_queue.queue_stats(store, everything).per_day), Counter()) == Counter(
        r["verdict"] for r in rows_now.values())


def _orphans(store: Store) -> int:
    from sqlalchemy import text

    with store.engine.connect() as conn:
        return int(conn.execute(text("SELECT count(*) FROM verdict_in_force WHERE session_id NOT IN "
                                     "(SELECT id FROM diagnosis_session)")).scalar_one())


def test_a_session_deleted_during_a_rejudge_gets_no_row_and_a_deleted_session_takes_its_row(
        any_store: Store, settings) -> None:  # noqa: ANN001
    # No foreign key holds verdict_in_force to its session (migration 0023): the writers and a trigger do.
    from sqlalchemy import delete, select

    from pipeline.runs import rulebook
    from pipeline.runs.session import run_session
    from pipeline.store.schema import DiagnosisSession, VerdictInForce

    store = any_store
    ids = [run_session(q, settings=settings, store=store).session_id
           for q in ("payment API times out since 10:00, what's going on?", "order-service CPU is high",
                     "支付接口最近出现超时，帮我排查")]
    asked = {sid: store.get_session(sid)["verdict"] for sid in ids}
    rulebook.apply_rules(settings, store, _strict_utilization(rulebook.text_in_force(settings, store).texts),
                         author="ana", comment="", based_on=0)
    moved = [sid for sid, e in _exact(settings, store, ids).items() if e[0] != asked[sid]]
    assert len(moved) >= 2

    def delete_before_the_write(phase: str, _done: int, _total: int) -> None:
        if phase == "write":  # judged from the loaded history, gone before its rows are written
            with store.engine.begin() as conn:
                conn.execute(delete(DiagnosisSession).where(DiagnosisSession.id == moved[0]))

    done = rulebook.rejudge(settings, store, on_progress=delete_before_the_write)
    with store.engine.connect() as conn:
        rows = set(conn.execute(select(VerdictInForce.session_id)).scalars())
    assert done.stored and set(moved[1:]) <= rows and moved[0] not in rows
    assert _orphans(store) == 0 and tally_holds(store)

    with store.engine.begin() as conn:
        conn.execute(delete(DiagnosisSession).where(DiagnosisSession.id == moved[1]))
    assert _orphans(store) == 0 and tally_holds(store)
    # A late judge of a session no longer stored writes nothing either.
    rulebook.judge_late(settings, store, moved[0], 0)
    assert _orphans(store) == 0


def test_a_session_delete_on_postgresql_waits_for_the_rejudge_writing_and_takes_its_rows() -> None:
    # The re-judge holds the rules_in_force row for its whole write; a delete of sessions starts by
    # waiting for it, so it sees the rows that write inserted (without it they would outlive it).
    import threading

    from sqlalchemy import text, update

    from pipeline.store import tally
    from pipeline.store.schema import RulesInForce

    with postgres_schema("del") as url:
        store = Store(url)
        sid, _kept = (store.create_session(question=q, world=None, shape="split", provider="offline", model="m")
                      for q in ("q", "kept"))
        deleted = threading.Event()

        def delete_session() -> None:
            with store.engine.begin() as conn:
                conn.execute(text("DELETE FROM diagnosis_session WHERE id = :id"), {"id": sid})
            deleted.set()

        with store.engine.begin() as writing, tally.bulk_write(writing):  # as the re-judge writes
            writing.execute(update(RulesInForce).where(RulesInForce.id == 1).values(judging_version=1))
            writing.execute(text("INSERT INTO verdict_in_force (session_id, verdict, gatekeeper_status, failed_rules) "
                                 "SELECT id, 'REJECT', 'fail', '[]' FROM diagnosis_session WHERE id = :id"), {"id": sid})
            deleter = threading.Thread(target=delete_session)
            deleter.start()
            assert not deleted.wait(1.0)  # waits for the write to commit
        deleter.join(30)
        assert deleted.is_set() and _orphans(store) == 0 and tally_holds(store)
        store.engine.dispose()
