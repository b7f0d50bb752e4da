"""The columnar replay (pipeline/replay/history.py) says what the per-session replay says, row for row."""

from __future__ import annotations

import importlib.util
import random
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from helpers import yaml_of_rules
from sqlalchemy import text

from pipeline.core.config import load_settings
from pipeline.core.contracts import VERDICT_ORDER
from pipeline.gatekeeper import load_rules
from pipeline.gatekeeper.engine import STATUSES
from pipeline.gatekeeper.kinds import (
    RULES,
    Count,
    Finding,
    RuleContext,
    RuleKind,
    RuleParams,
    RuleResult,
    RuleSpec,
    params_of,
    rule_kind,
)
from pipeline.replay.columns import judge, rule_bits
from pipeline.replay.history import GateColumnCache, backfill, write_columns
from pipeline.replay.inputs import replay_inputs
from pipeline.replay.per_session import replay, summarize
from pipeline.runs.rulebook import rules_in_force
from pipeline.runs.session import run_session
from pipeline.store import Store

_BENCH = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_history.py"
_spec = importlib.util.spec_from_file_location("bench_history", _BENCH)
assert _spec is not None and _spec.loader is not None
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


@pytest.fixture(scope="module")
def history_store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    """Four offline sessions run for real (their rows written as they finish) and 300 perturbed copies."""
    home = tmp_path_factory.mktemp("home")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("WORKBENCH_HOME", str(home))
        settings = load_settings()
        store = Store(f"sqlite:///{home / 'wb.db'}")
        for q in ("payment API times out, what's going on?", "支付接口最近出现超时，帮我排查",
                  "order-service CPU is high", "redis latency spikes on cart-service"):
            run_session(q, settings=settings, store=store)
        with store.engine.connect() as conn:
            assert conn.execute(text("SELECT count(*) FROM gate_session")).scalar() == 4
        bench.seed_variants(store, 300, random.Random(7))
    return store


def _changes(r):  # noqa: ANN001, ANN202 - a rules transformer per case
    return r


CASES = [
    _changes,
    lambda r: r.with_params("evidence.excerpt_similarity", passThreshold=0.7, warnThreshold=0.4),
    lambda r: r.with_params("evidence.excerpt_similarity", passThreshold=0.3, warnThreshold=0.2, minPieceWeight=40),
    lambda r: r.with_params("evidence.excerpt_similarity", compareAgainst=["digest.source_quote", "output"],
                            inventedTolerated=1),
    lambda r: r.with_params("evidence.excerpt_entities", minLocatedScore=0.95),
    lambda r: r.with_params("evidence.excerpt_entities", minLocatedScore=0.2, kinds=["service"]),
    lambda r: r.with_rule("evidence.excerpt_entities", severity="warning", verdict_impact="warn_only"),
    lambda r: r.with_rule("claim.evidence_utilization", enabled=True, params={"minKeywordCoverage": 0.6}),
    lambda r: r.with_params("evidence.digest_ref", quotePassThreshold=0.9, quoteWarnThreshold=0.5),
    lambda r: r.with_rule("evidence.invocation_ref", enabled=False),
    lambda r: r.with_params("claim.hallucination_phrases", blacklist=["timeout", "可能"]),  # a list: exact path
    # Thresholds only, several rules at once.
    lambda r: r.with_params("evidence.excerpt_similarity", passThreshold=0.62, warnThreshold=0.45)
               .with_params("evidence.excerpt_entities", minLocatedScore=0.7)
               .with_params("evidence.digest_ref", quotePassThreshold=0.85, quoteWarnThreshold=0.6),
    lambda r: r.with_params("evidence.excerpt_entities", minLocatedScore=0.3)
               .with_params("evidence.excerpt_similarity", passThreshold=0.4, warnThreshold=0.1),
]


# Each case is a per-session replay of the whole history: the fast lane keeps one of each kind
# (no change, a threshold, a severity and impact, a word list: the exact path), the full run all.
FAST_CASES = (0, 1, 6, 10)


@pytest.mark.parametrize("change", [c if i in FAST_CASES else pytest.param(c, marks=pytest.mark.slow)
                                    for i, c in enumerate(CASES)])
def test_columnar_replay_equals_per_session_replay(history_store: Store, change) -> None:  # noqa: ANN001
    rules = change(rules_in_force(load_settings(), history_store)[0])
    naive = replay(replay_inputs(history_store), rules)
    result = GateColumnCache(history_store).replay(rules)
    columnar = {r.session_id: r for r in result.rows()}
    assert len(columnar) == len(naive) == 304
    for row in naive:
        assert columnar[row.session_id] == row, row.session_id
    assert result.summary() == summarize(naive)
    assert [r.session_id for r in result.rows(changed_only=True)] == \
        [r.session_id for r in result.rows() if r.changed]
    assert result.rows(changed_only=True, limit=7) == result.rows(changed_only=True)[:7]


@pytest.mark.slow  # 24 per-session replays of the history; the fast lane's equivalence cases judge in arrays too
def test_arrays_judge_as_the_per_session_replay(history_store: Store) -> None:
    """columns.judge on its own, asked for every session under random thresholds, switches and
    impacts (text rules switched off or made warn-only too): every session it answers for has the
    per-session replay's status and verdict."""
    base = rules_in_force(load_settings(), history_store)[0]
    history = GateColumnCache(history_store)
    arrays = history.refresh(base)
    inputs = replay_inputs(history_store)
    index = {sid: i for i, sid in enumerate(arrays.session_ids)}
    rng = random.Random(11)
    answered = 0
    for _ in range(24):
        warn = round(rng.uniform(0.1, 0.8), 2)
        rules = base.with_params("evidence.excerpt_similarity", passThreshold=round(rng.uniform(warn, 0.95), 2),
                                 warnThreshold=warn, inventedTolerated=rng.choice([0, 1, 3]))
        rules = rules.with_params("evidence.excerpt_entities", minLocatedScore=round(rng.uniform(0.0, 1.0), 2))
        rules = rules.with_params("evidence.digest_ref", quotePassThreshold=0.9, quoteWarnThreshold=round(rng.uniform(0.3, 0.9), 2))
        rules = rules.with_rule("claim.evidence_utilization", enabled=rng.random() < 0.5,
                                params={"minKeywordCoverage": round(rng.uniform(0.2, 0.9), 2)})
        if rng.random() < 0.3:
            rules = rules.with_rule("evidence.excerpt_entities", severity="warning", verdict_impact="warn_only")
        if rng.random() < 0.3:
            rules = rules.with_rule("evidence.excerpt_similarity", verdict_impact="reject_on_fail")
        if rng.random() < 0.3:
            rules = rules.with_rule("claim.evidence_utilization", enabled=True, severity="error",
                                    verdict_impact="low_confid_on_fail")
        for text_rule in ("schema.executor_v2", "evidence.invocation_ref", "claim.hallucination_phrases",
                          "evidence.digest_ref"):
            draw = rng.random()
            if draw < 0.15:
                rules = rules.with_rule(text_rule, enabled=False)
            elif draw < 0.3:
                rules = rules.with_rule(text_rule, severity="warning", verdict_impact="warn_only")
        judged = judge(arrays, rules, np.ones(len(arrays.session_ids), dtype=bool))
        for row in replay(inputs, rules):
            i = index[row.session_id]
            if judged.ok[i]:
                answered += 1
                assert (STATUSES[judged.status[i]], list(VERDICT_ORDER)[judged.verdict[i]],
                        rule_bits(rules, int(judged.failed[i])), rule_bits(rules, int(judged.warned[i]))) == \
                    (row.new_status, row.projected_verdict, row.result.failed_rules, row.result.warnings), \
                    (row.session_id, yaml_of_rules(rules)[1])
    assert answered > 24 * 280  # most sessions are judged in arrays


def test_threshold_moves_stay_mostly_on_arrays(history_store: Store) -> None:
    """Under threshold changes the arrays settle every session, cleared or judged; a word-list
    change settles none."""
    rules = rules_in_force(load_settings(), history_store)[0]
    history = GateColumnCache(history_store)
    for p in (0.3, 0.5, 0.7, 0.9):
        result = history.replay(rules.with_params("evidence.excerpt_similarity", passThreshold=p, warnThreshold=0.3))
        assert not result.exact and result.judged.any() and result.clean.any()
        assert result.total == 304
    listed = history.replay(rules.with_params("claim.hallucination_phrases", blacklist=["zzz"]))
    assert len(listed.exact) == 304


@pytest.mark.slow  # rewrites half the history's rows twice and replays it per session three times
def test_rows_written_under_other_rules(history_store: Store) -> None:
    """Half the rows written under rules with other switches and thresholds, and candidates whose
    utilization rule blocks (a low coverage then marks its own claim, which the arrays cannot tell:
    those sessions take the per-session path): the replay still equals the per-session replay."""
    base = rules_in_force(load_settings(), history_store)[0]
    written = base.with_rule("claim.evidence_utilization", enabled=True, severity="error", verdict_impact="low_confid_on_fail",
                             params={"minKeywordCoverage": 0.4}).with_params("evidence.excerpt_entities",
                                                                             minLocatedScore=0.5)
    inputs = replay_inputs(history_store)
    try:
        write_columns(history_store, inputs[::2], written)  # half the history under each
        history = GateColumnCache(history_store)
        for candidate in (written, written.with_params("claim.evidence_utilization", minKeywordCoverage=0.7),
                          written.with_params("evidence.excerpt_entities", minLocatedScore=0.9)
                                 .with_params("evidence.excerpt_similarity", passThreshold=0.55)):
            naive = replay(replay_inputs(history_store), candidate)
            result = history.replay(candidate)
            assert {r.session_id: r for r in result.rows()} == {r.session_id: r for r in naive}
            assert result.summary() == summarize(naive)
            assert result.judged.any()
    finally:
        write_columns(history_store, inputs[::2], base)


def test_sessions_without_rows_are_backfilled(history_store: Store, tmp_path: Path) -> None:
    rules = rules_in_force(load_settings(), history_store)[0]
    history = GateColumnCache(history_store)
    assert len(history.refresh(rules).session_ids) == 304
    with history_store.engine.begin() as conn:
        sid = conn.execute(text("SELECT session_id FROM gate_session ORDER BY seq DESC LIMIT 1")).scalar_one()
        seq = conn.execute(text("SELECT seq FROM gate_session WHERE session_id = :s"), {"s": sid}).scalar_one()
        bindings = conn.execute(text("SELECT count(*) FROM gate_binding WHERE seq = :q"), {"q": seq}).scalar_one()
        conn.execute(text("DELETE FROM gate_binding WHERE seq = :q"), {"q": seq})
        conn.execute(text("DELETE FROM gate_session WHERE seq = :q"), {"q": seq})
    assert len(history.refresh(rules).session_ids) == 304  # given rows again, under a new seq
    assert sid in history.refresh(rules).session_ids
    assert backfill(history_store, rules) == 0
    with history_store.engine.begin() as conn:  # as a row written before migration 0006 reads
        conn.execute(text("UPDATE gate_session SET claims_ok = NULL WHERE session_id = :s"), {"s": sid})
    assert backfill(history_store, rules) == 1
    with history_store.engine.connect() as conn:
        assert conn.execute(text("SELECT claims_ok FROM gate_session WHERE session_id = :s"), {"s": sid}).scalar()
    with history_store.engine.connect() as conn:
        seq = conn.execute(text("SELECT seq FROM gate_session WHERE session_id = :s"), {"s": sid}).scalar_one()
        assert conn.execute(text("SELECT count(*) FROM gate_binding WHERE seq = :q"), {"q": seq}).scalar() == bindings


def test_columnar_replay_on_each_database(any_store: Store) -> None:
    """The driver-level loading (a named cursor on PostgreSQL) and the row writes on both backends."""
    settings = load_settings()
    run_session("payment API times out, what's going on?", settings=settings, store=any_store)
    bench.seed_variants(any_store, 40, random.Random(3))
    rules = rules_in_force(settings, any_store)[0]
    history = GateColumnCache(any_store)
    for change in (CASES[0], CASES[1], CASES[4]):
        candidate = change(rules)
        naive = replay(replay_inputs(any_store), candidate)
        result = history.replay(candidate)
        assert {r.session_id: r for r in result.rows()} == {r.session_id: r for r in naive}
        assert result.summary() == summarize(naive)
    assert result.clean.any()


def test_gate_column_files_are_checked_and_rebuilt(any_store: Store, monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: Path) -> None:
    """The gate columns are read from Parquet files where their segment's stamp is current; a file
    deleted, corrupted or stale is read from the store and written again, and the replay says
    what the per-session replay says all along."""
    from pipeline.replay import history

    monkeypatch.setenv("WORKBENCH_COLUMNS_DIR", str(tmp_path / "columns"))
    settings = load_settings()
    run_session("payment API times out, what's going on?", settings=settings, store=any_store)
    bench.seed_variants(any_store, 40, random.Random(3))
    candidate = CASES[1](rules_in_force(settings, any_store)[0])
    naive = {r.session_id: r for r in replay(replay_inputs(any_store), candidate)}

    def replayed() -> dict[str, object]:
        return {r.session_id: r for r in GateColumnCache(any_store).replay(candidate).rows()}

    def files() -> list[Path]:
        return sorted((tmp_path / "columns").rglob("*.parquet"))

    assert replayed() == naive  # read from the store, the files written as the rows pass
    written = files()
    assert sorted(f.name.split("-v")[0] for f in written) == ["gate_binding", "gate_claim", "gate_session"]
    with monkeypatch.context() as m:
        m.setattr(history, "_batches", lambda *_a: pytest.fail("the store was read despite current files"))
        assert replayed() == naive
    # A file cut short and one deleted: read from the store again, and written again.
    written[0].write_bytes(written[0].read_bytes()[: len(written[0].read_bytes()) // 2])
    written[1].unlink()
    assert replayed() == naive
    assert files() == written
    # Stale: a change to a segment's rows draws a new stamp (migration 0020); its files are read again.
    with any_store.engine.begin() as conn:
        conn.execute(text("UPDATE gate_binding SET out_score = 0.123 WHERE seq = (SELECT min(seq) FROM gate_session)"))
    arrays = history.load_arrays(any_store)[0]
    assert (arrays.b_score == 0.123).any() and files() != written and len(files()) == 3
    # A segment emptied (every session in it rewritten later, at the end): its old files go.
    current = files()
    for f in current:
        f.with_name(f.name.replace("-000000-", "-000005-")).write_bytes(f.read_bytes())
    with any_store.engine.begin() as conn:
        conn.execute(text("INSERT INTO gate_segment (segment, stamp) VALUES (5, 1)"))
    assert replayed() == naive
    assert files() == current


@pytest.fixture
def gap_kind() -> Iterator[type[RuleKind]]:
    """A kind the replay's code has never seen, registered for the test and removed after: set up as
    the reference rules are (findings that no compared threshold moves), it flags an excerpt whose
    pieces lie more than maxGap characters apart in the output."""

    @rule_kind
    class ExcerptGapRule(RuleKind):
        id = "evidence.excerpt_gap"
        name = "Excerpt Gap Check"
        description = "an excerpt's pieces lie close together in the output"
        severity = "error"
        verdict_impact = "reject_on_fail"
        replay = "stored"

        class Params(RuleParams):
            maxGap: Count

        def neutered_by(self, spec: RuleSpec) -> list[str]:
            return []

        def validate(self, context: RuleContext, metadata: RuleSpec) -> RuleResult:
            p = params_of(metadata, ExcerptGapRule.Params)
            out = RuleResult(self.id)
            for target, _, feats in context.bindings:
                gap = (feats or {}).get("sources", {}).get("output", {}).get("gap")
                if isinstance(gap, int) and gap > p.maxGap:
                    out.findings.append(Finding(target, f"pieces {gap} characters apart"))
            return out

    try:
        yield ExcerptGapRule
    finally:
        del RULES[ExcerptGapRule.id]


def test_a_new_kind_is_judged_by_the_replay_without_another_edit(any_store: Store, gap_kind: type[RuleKind],
                                                                 tmp_path: Path) -> None:
    """Its class and its two YAML entries are all there is of it: the rows store its findings and
    the arrays judge it, as the engine and the verdict policy judge each session."""
    settings = load_settings()
    run_session("payment API times out, what's going on?", settings=settings, store=any_store)
    bench.seed_variants(any_store, 40, random.Random(3))
    rules_dir = tmp_path / "rules"
    rules_dir.mkdir()
    index, metadata = (settings.rules_dir / name for name in ("index.yaml", "metadata.yaml"))
    (rules_dir / "index.yaml").write_text(index.read_text(encoding="utf-8") + f"  - id: {gap_kind.id}\n", encoding="utf-8")
    (rules_dir / "metadata.yaml").write_text(metadata.read_text(encoding="utf-8")
                                             + f"  {gap_kind.id}:\n    params: {{maxGap: 300}}\n", encoding="utf-8")
    rules = load_rules(rules_dir)
    write_columns(any_store, replay_inputs(any_store), rules)  # as applying the rules re-derives them
    history = GateColumnCache(any_store)
    for candidate in (rules, rules.with_params("evidence.excerpt_similarity", passThreshold=0.7, warnThreshold=0.4),
                      rules.with_rule(gap_kind.id, severity="warning", verdict_impact="warn_only")):
        naive = replay(replay_inputs(any_store), candidate)
        result = history.replay(candidate)
        assert {r.session_id: r for r in result.rows()} == {r.session_id: r for r in naive}
        assert result.summary() == summarize(naive)
        assert not result.exact and result.judged.any()  # settled in arrays, none by the per-session replay
        found = [gap_kind.id in r.result.failed_rules + r.result.warnings for r in naive]
        assert 0 < sum(found) < len(naive)


@pytest.mark.slow
def test_arrow_and_driver_loads_agree_whatever_comes_first(any_store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """The Arrow reader types a SQLite column from its first batch: a batch holding only NULL in
    a float column must still give the arrays the store's own driver gives."""
    from pipeline.replay import history

    store = any_store
    run_session("payment API times out, what's going on?", settings=load_settings(), store=store)
    bench.seed_variants(store, 30, random.Random(5))
    with store.engine.begin() as conn:
        conn.execute(text("UPDATE gate_binding SET out_score = NULL, out_covered = NULL, out_split = NULL, "
                          "quote_score = NULL, summary_score = NULL, entity_low = NULL, entity_points = NULL, "
                          "entity_fail = NULL, text_flag = NULL "
                          "WHERE (seq, claim, binding) IN (SELECT seq, claim, binding FROM gate_binding "
                          "ORDER BY seq, claim, binding LIMIT 3)"))
        conn.execute(text("UPDATE gate_session SET min_coverage = NULL, min_quote = NULL, evidence_floor = NULL, "
                          "text_has = NULL, text_fail = NULL WHERE seq IN (SELECT seq FROM gate_session ORDER BY seq LIMIT 3)"))
    monkeypatch.setattr(history, "_CHUNK", 3)  # so a batch holds nothing but those NULLs
    monkeypatch.setattr(history, "files_root", lambda _store: None)  # both from the store, not one from files
    arrow = history.load_arrays(store)
    driver = history.load_arrays(store, sessions=history._ARROW_FROM - 1)  # the store's own driver
    for name, values in vars(arrow[0]).items():
        other = vars(driver[0])[name]
        if name == "lists_key":  # codes are given in the order values are met, which batches change
            assert [arrow[0].keys[k] for k in values] == [driver[0].keys[k] for k in other]
        elif isinstance(values, np.ndarray):
            assert values.dtype == other.dtype and np.array_equal(values, other, equal_nan=values.dtype.kind == "f"), name
        elif name != "keys":
            assert values == other, name
    for name, codes in arrow[1].items():
        assert ([arrow[2].reverse()[k] for k in codes] == [driver[2].reverse()[k] for k in driver[1][name]]), name
    first = arrow[0].b_session == 0  # the session of the NULL bindings (scanned in no set order)
    assert (np.isnan(arrow[0].b_quote[first]) & np.isnan(arrow[0].b_score[first]) & ~arrow[0].b_full[first]).any()
    assert np.isnan(arrow[0].min_quote[:3]).all() and (arrow[0].text_has[:3] == -1).all()
    assert len(arrow[0].session_ids) == 31 and np.isfinite(arrow[0].b_score).sum() > 0


@pytest.mark.slow
def test_an_arrow_load_leaves_this_process_sqlite_connections_sound(tmp_path: Path) -> None:
    """The Arrow driver's own SQLite, opened in this process, reset the WAL index under the
    store's connections: the next write vanished or a read failed with "disk I/O error"."""
    from pipeline.replay.history import load_arrays

    url = f"sqlite:///{tmp_path / 'wb.db'}"
    store = Store(url)
    run_session("payment API times out since 10:00", settings=load_settings(), store=store)
    assert len(load_arrays(store, sessions=None)[0].session_ids) == 1
    version = store.apply_rule_version(index_yaml="a", metadata_yaml="b", author="t", comment="", based_on=None)
    assert store.active_rule_version()["id"] == version  # type: ignore[index]
    assert Store(url).active_rule_version()["id"] == version  # type: ignore[index]
    assert len(load_arrays(Store(url), sessions=None)[0].session_ids) == 1


@pytest.mark.slow
def test_arrow_reads_a_read_only_database(tmp_path: Path) -> None:
    """The read-only URL a store falls back to (mode=ro) is opened read-only by the Arrow reader too."""
    from pipeline.replay.arrow import ArrowReadError, arrow_available, arrow_batches

    store = Store(f"sqlite:///{tmp_path / 'wb.db'}")
    run_session("order-service CPU is high", settings=load_settings(), store=store)
    store.engine.dispose()
    url = f"sqlite:///file:{tmp_path / 'wb.db'}?mode=ro&uri=true"
    batches = list(arrow_batches(url, "SELECT count(*) AS n FROM gate_binding", 10))
    assert batches[0].column(0)[0].as_py() > 0
    with pytest.raises(ArrowReadError, match="readonly"):
        list(arrow_batches(url, "DELETE FROM gate_binding RETURNING seq", 10))
    assert not arrow_available("sqlite://") and not arrow_available("sqlite:///:memory:")


@pytest.mark.slow
def test_a_failing_history_read_is_a_store_error(tmp_path: Path) -> None:
    """A read the Arrow reader fails is named with the driver's reason, not a traceback of the child."""
    from pipeline.core.errors import StoreError
    from pipeline.replay import history

    store = Store(f"sqlite:///{tmp_path / 'wb.db'}")
    run_session("order-service CPU is high", settings=load_settings(), store=store)
    with store.engine.begin() as conn:
        conn.execute(text("DROP TABLE gate_claim"))
    with pytest.raises(StoreError, match=r"cannot read the replay history from the database .*no such table: gate_claim"):
        history.load_arrays(store, sessions=None)


def test_claims_read_out_of_order_join_their_bindings_as_in_order(history_store: Store,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A load joins each binding to its claim by bisection over claims sorted by session and claim;
    claims usually arrive in that order and are then used as read. Read in reverse, the same arrays."""
    from pipeline.replay import history

    monkeypatch.setattr(history, "files_root", lambda _store: None)
    monkeypatch.setattr(history, "_CHUNK", 50)
    in_order = history.load_arrays(history_store)[0]
    read = history.cached_batches

    def reversed_claims(root, table, marks, read_store):  # noqa: ANN001, ANN202 - cached_batches' shape
        batches = list(read(root, table, marks, read_store))
        if table != "gate_claim":
            return iter(batches)
        return iter([b.slice(len(b) - 1 - k, 1) for b in reversed(batches) for k in range(len(b))])

    monkeypatch.setattr(history, "cached_batches", reversed_claims)
    shuffled = history.load_arrays(history_store)[0]
    assert len(in_order.c_session) > 300 and (in_order.b_claim_row >= 0).any()
    for name, values in vars(in_order).items():
        if isinstance(values, np.ndarray):
            other = vars(shuffled)[name]
            assert np.array_equal(values, other, equal_nan=values.dtype.kind == "f"), name
