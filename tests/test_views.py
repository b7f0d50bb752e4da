"""The workbench's read models (pipeline/frontends/views/), without a browser."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest
from helpers import queue_count, tally_holds, yaml_of_rules
from sqlalchemy import delete, insert, update

from pipeline.core.errors import NotFound, StoreError
from pipeline.core.feature_shapes import EntityMiss
from pipeline.frontends.report import render_trace
from pipeline.frontends.views import ask as ask_view
from pipeline.frontends.views import highlight, outputs, rules_yaml
from pipeline.frontends.views import rules as rules_view
from pipeline.frontends.views import trace as trace_view
from pipeline.gatekeeper import load_rules
from pipeline.runs import review_queue
from pipeline.runs.session import run_session
from pipeline.store import SessionFilter, Store
from pipeline.store.record import SessionRecord, read_session
from pipeline.store.schema import DiagnosisSession, VerdictInForce


def _row(errors: list[dict], features: dict, claims: list, **extra) -> dict:
    """A diagnosis_session row as Store.get_session returns it."""
    return {
        "id": "s-1", "created_at": datetime(2026, 1, 1, tzinfo=UTC), "question": "q", "shape": "split",
        "provider": "offline", "model": "m", "status": "completed", "stage": "done",
        "verdict": "LOW_CONFID",
        "final_answer": "answer",
        "gatekeeper_features": features,
        "self_evaluation": {"verifier_evaluation": {
            "verdict": "LOW_CONFID", "groundedness_score": 0.5,
            "executor_output_parse_status": {"status": "valid"},
            "gatekeeper_result": {"status": "fail", "errors": errors},
            "claim_checks": [{"claim_id": "c1", "verification": "direct_observation"},
                             {"claim_id": "c2", "verification": "unsupported"}],
            "executor_structured_output": {"claims": claims},
            "composer_input": {"original_query": "q", "verdict": "LOW_CONFID",
                               "allowed_claims": [{"claim_id": "c1", "claim_type": "symptom", "claim_text": "a"}],
                               "missing_info": ["gap"]},
            "composer_filtered": [{"source": "claims[1]", "text": "b", "reason": "unsupported",
                                   "moved_to": "missing_info"}],
        }},
        **extra,
    }


def _session(errors: list[dict], features: dict, claims: list, reviews: list[dict] = ()) -> SessionRecord:
    return SessionRecord.from_row(_row(errors, features, claims), reviews=reviews)


def _claims(n: int) -> list[dict]:
    return [{"claim_id": f"c{i + 1}", "claim_type": "symptom", "claim_text": f"claim {i}",
             "evidence_bindings": [{"tool_name": "query_logs", "source_invocation_ids": [7],
                                    "evidence_excerpt": "pool exhausted for order-service"}]} for i in range(n)]


def test_errors_are_matched_to_claims_by_target_path_prefix() -> None:
    errors = [
        {"rule_id": "evidence.excerpt_similarity", "target": "claims[1].evidence_bindings[0]", "message": "low"},
        {"rule_id": "schema.executor_v2", "target": "claims[10].claim_type", "message": "missing"},
        {"rule_id": "schema.executor_v2", "target": "claims[1]", "message": "bad"},
        {"rule_id": "evidence.digest_ref", "target": "digests[0]", "message": "quote"},
    ]
    cards = trace_view.claim_cards(_session(errors, {}, _claims(11)))
    assert [e.message for e in cards[1].errors] == ["low", "bad"]
    assert [e.message for e in cards[1].bindings[0].errors] == ["low"]
    assert [e.message for e in cards[10].errors] == ["missing"]
    assert cards[0].errors == []
    assert [e.target for e in trace_view.session_level_errors(_session(errors, {}, []))] == ["digests[0]"]


def test_claim_card_carries_check_composer_fate_and_binding_features() -> None:
    features = {"claims[0].evidence_bindings[0]": {
        "sources": {"output": {"score": 0.82, "invocation_id": 7, "spans": [[10, 20], [30, 35]]},
                    "digest.source_quote": {"score": 1.0}},
        "entities": [{"kind": "service", "token": "order-service", "value": "order-service", "elsewhere": False,
                      "nearby": ["payment-service"], "score": 0.82}],
        "added": [{"text": "exhausted", "score": 0.8}],
        "other_match": None,
    }}
    at = datetime(2026, 1, 2, tzinfo=UTC)
    reviews = [{"session_id": "s-1", "claim_id": "c2", "label": "hallucination", "reviewer": "ann", "created_at": at},
               {"session_id": "s-1", "claim_id": None, "label": "x", "reviewer": "bo", "created_at": at}]
    cards = trace_view.claim_cards(_session([], features, _claims(2), reviews))
    first, second = cards
    assert first.composer == "allowed" and first.claim_check.verification == "direct_observation"
    assert not first.has_findings and second.has_findings
    b = first.bindings[0]
    assert (b.invocation_id, b.score, b.spans) == (7, 0.82, [(10, 20), (30, 35)])
    assert b.source_scores == {"output": 0.82, "digest.source_quote": 1.0}
    assert b.added_words == ["exhausted"] and highlight.nearby_tokens(b.entity_misses) == ["payment-service"]
    assert second.composer == "missing_info" and second.filter_reason == "unsupported"
    assert [r.label for r in second.reviews] == ["hallucination"]
    assert second.bindings[0].spans == [] and second.bindings[0].score is None


def test_highlight_window_marks_match_and_entities_and_stays_small() -> None:
    decoded = "x" * 100_000 + "ERROR pool exhausted on payment-service\n" + "y" * 100_000
    start = 100_000 + len("ERROR ")
    w = highlight.highlight_window(decoded, [(start, start + len("pool exhausted"))], entity_tokens=["payment-service"],
                               context=50)
    kinds = [k for _, k in w.segments]
    assert ("pool exhausted", "match") in w.segments and ("payment-service", "entity") in w.segments
    assert kinds.count("match") == 1
    assert w.end - w.start < 300 and w.total == len(decoded) and w.line == 1
    assert "".join(t for t, _ in w.segments) == decoded[w.start:w.end]


def test_highlight_window_ignores_far_spans_and_counts_lines() -> None:
    decoded = "line\n" * 50 + "first match" + "z" * 20_000 + "far"
    at = decoded.index("first match")
    w = highlight.highlight_window(decoded, [(at, at + 11), (len(decoded) - 3, len(decoded))], context=10)
    assert w.line == 51 and w.end < len(decoded) - 1000


def test_excerpt_segments_mark_missing_entities() -> None:
    segs = highlight.excerpt_segments("timeout on order-service", [EntityMiss(kind="service", token="order-service", value="order-service", elsewhere=False, nearby=[], score=0.5)])
    assert segs == [("timeout on ", "text"), ("order-service", "entity")]


def test_output_pages_pretty_prints_wraps_and_searches() -> None:
    output = json.dumps({"logs": [{"message": f"line {i} <script>alert(1)</script>"} for i in range(300)]})
    pages = outputs.OutputPages(output)
    assert pages.line_count > 300
    hits = pages.search("LINE 299 <SCRIPT>")
    assert len(hits) == 1 and "line 299 <script>" in pages.line(hits[0])
    first = pages.lines(0, 5)
    assert [n for n, _ in first] == [0, 1, 2, 3, 4]
    one_line = "a" * 10_500
    wrapped = outputs.OutputPages(one_line, wrap=1000)
    assert wrapped.line_count == 11 and "".join(wrapped.line(n) for n in range(11)) == one_line
    assert highlight.query_segments("abcABC", "b") == [("a", "text"), ("b", "match"), ("cA", "text"), ("B", "match"),
                                                   ("C", "text")]


def test_answer_view_links_confirmed_facts_to_their_evidence() -> None:
    view = ask_view.answer_view(_session([], {}, _claims(2)))
    assert [f.claim_id for f in view.confirmed] == ["c1"]
    assert view.confirmed[0].evidence[0].source_invocation_ids == [7]
    assert view.missing_info == ["gap"] and view.final_answer == "answer" and view.lead == "answer"


def _store_with(store: Store, n: int) -> Store:
    for i in range(n):
        sid = store.create_session(question=f"q{i} payment", world=None, shape="split", provider="offline",
                                   model="m", created_at=datetime(2026, 1, 1 + i % 3, 12, tzinfo=UTC))
        verdict = ("PASS", "LOW_CONFID", "REJECT")[i % 3]
        failed = [] if verdict == "PASS" else ["evidence.excerpt_similarity"] + (["evidence.invocation_ref"] if i % 3 == 2 else [])
        store.update_session(sid, status="completed", verdict=verdict, failed_rules=failed, groundedness=i / n,
                             gatekeeper_status="pass" if not failed else "fail")
    return store


def test_queue_stats_aggregates_the_filtered_sessions(any_store: Store) -> None:
    store = _store_with(any_store, 9)
    everything = review_queue.QueueFilter(needs_person=False, reviewed=None)
    stats = review_queue.queue_stats(store, everything)
    assert stats.total == 9
    assert sorted(stats.per_day) == [("2026-01-01", "PASS", 3), ("2026-01-02", "LOW_CONFID", 3),
                                     ("2026-01-03", "REJECT", 3)]
    assert stats.failed_rules == {"evidence.excerpt_similarity": 6, "evidence.invocation_ref": 3}
    assert sum(n for _, n in stats.groundedness) == 9 and stats.groundedness[0] == (0.0, 1)
    assert [b for b, _ in stats.groundedness] == [b / 10 for b in range(10)]  # empty tenths too
    rejected = review_queue.queue_stats(store, review_queue.QueueFilter(SessionFilter(verdicts=["REJECT"])))
    assert rejected.total == 3 and rejected.failed_rules["evidence.invocation_ref"] == 3
    assert len(list(review_queue.iter_filtered(store, everything, batch=4))) == 9


def _stats_in_four_queries(store: Store, q: review_queue.QueueFilter) -> review_queue.QueueStats:
    """queue_stats as it was before the one grouped scan: a count and one query per chart."""
    from collections import Counter

    from sqlalchemy import Integer, Text, cast, func, select

    sub = review_queue.queue_query(store, q).subquery()
    day = func.date(sub.c.created_at)
    with store.engine.connect() as conn:
        total = conn.execute(select(func.count()).select_from(sub)).scalar_one()
        per_day = conn.execute(select(day, sub.c.verdict, func.count()).group_by(day, sub.c.verdict)).all()
        combos = conn.execute(select(cast(sub.c.failed_rules, Text), func.count())
                              .where(sub.c.failed_rules.is_not(None)).group_by(cast(sub.c.failed_rules, Text))).all()
        bucket = cast(sub.c.groundedness * 10, Integer)
        bins = conn.execute(select(bucket, func.count()).where(sub.c.groundedness.is_not(None)).group_by(bucket)).all()
    rules: Counter[str] = Counter()
    for text, n in combos:
        listed = json.loads(text) if text else []
        for rule_id in listed if isinstance(listed, list) else []:
            rules[rule_id] += n
    hist: Counter[float] = Counter()
    for b, n in bins:
        hist[min(int(b), 9) / 10] += n
    return review_queue.QueueStats(total=total, per_day=sorted((str(d), v or "none", n) for d, v, n in per_day),
                            failed_rules=dict(rules.most_common()),
                            groundedness=[(b / 10, hist.get(b / 10, 0)) for b in range(10)] if hist else [])


def test_one_grouped_scan_gives_what_the_four_chart_queries_gave(any_store: Store) -> None:
    store = any_store
    verdicts = ("PASS", "LOW_CONFID", "REJECT", None)
    rule_lists = ([], ["evidence.excerpt_similarity"], ["evidence.invocation_ref", "evidence.excerpt_similarity"],
                  ["output.speculative_phrase"])
    for i in range(60):
        # Days across a month boundary and late in the day (UTC), groundedness on and between tenths.
        sid = store.create_session(question=f"q{i}", world=None, shape="split", provider="offline", model="m",
                                   created_at=datetime(2026, 1, 30 + i % 4, 23 if i % 2 else 0, 59, tzinfo=UTC)
                                   if i % 4 < 2 else datetime(2026, 2, i % 4, 23, 59, 59, tzinfo=UTC))
        store.update_session(sid, status=("completed", "failed", "interrupted")[i % 3], verdict=verdicts[i % 4],
                             gatekeeper_status=("pass", "warn", "fail", None)[i % 5 % 4],
                             failed_rules=rule_lists[i % 7 % 4], groundedness=None if i % 9 == 0 else (i % 11) / 10,
                             self_evaluation={"verifier_evaluation": {"composer_filtered": [{"text": "x"}] * (i % 2)}})
        if i % 6 == 0:
            store.add_review(session_id=sid, label="correct", reviewer="ann")
    for q in (review_queue.QueueFilter(), review_queue.QueueFilter(needs_person=False, reviewed=None),
              review_queue.QueueFilter(SessionFilter(verdicts=["REJECT"]), reviewed=True),
              review_queue.QueueFilter(SessionFilter(rule_id="evidence.excerpt_similarity"), needs_person=False)):
        stats = review_queue.queue_stats(store, q)
        assert stats == _stats_in_four_queries(store, q)
        assert stats.total == queue_count(store, q) > 0
    # The tally the queue reads is the GROUP BY over the rows, with a verdict in force moved,
    # changed, taken back, and a session gone.
    assert tally_holds(store)
    some = store.session_ids()[:3]
    with store.engine.begin() as conn:
        conn.execute(insert(VerdictInForce), [{"session_id": sid, "verdict": "REJECT", "gatekeeper_status": "fail",
                                               "failed_rules": ["evidence.invocation_ref"]} for sid in some])
        conn.execute(update(VerdictInForce).where(VerdictInForce.session_id == some[0]).values(verdict="PASS"))
        conn.execute(delete(VerdictInForce).where(VerdictInForce.session_id == some[1]))
        conn.execute(delete(DiagnosisSession).where(DiagnosisSession.id == some[2]))
    assert tally_holds(store)
    for q in (review_queue.QueueFilter(), review_queue.QueueFilter(needs_person=False, include_eval=True)):
        assert review_queue.queue_stats(store, q) == _stats_in_four_queries(store, q)


def test_the_queue_holds_what_needs_a_person_newest_first_without_eval_runs(any_store: Store) -> None:
    store = any_store

    def add(name: str, day: int, *, verdict: str | None = "PASS", status: str = "completed", gate: str = "pass",
            guard_template: bool = False, filtered: bool = False) -> str:
        sid = store.create_session(question=name, world=None, shape="split", provider="offline", model="m",
                                   session_id=name, created_at=datetime(2026, 2, day, tzinfo=UTC))
        ev = _row([], {}, [])["self_evaluation"]
        ev["verifier_evaluation"]["composer_guard"] = {"status": "fail" if guard_template else "pass",
                                                       "used_template": guard_template}
        if not filtered:
            ev["verifier_evaluation"]["composer_filtered"] = []
        store.update_session(sid, status=status, verdict=verdict, gatekeeper_status=gate, self_evaluation=ev)
        return sid

    add("clean-pass", 1)
    add("pass-with-warning", 2, gate="warn")
    add("pass-guard-template", 3, guard_template=True)
    add("pass-dropped-claim", 4, filtered=True)
    add("low", 5, verdict="LOW_CONFID")
    add("crashed", 6, verdict=None, status="failed")
    add("eval-reject", 7, verdict="REJECT")
    store.add_review(session_id="eval-reject", label=review_queue.EVAL_LABEL, reviewer="workbench eval")
    add("reviewed-reject", 8, verdict="REJECT")
    store.add_review(session_id="reviewed-reject", label="correct", reviewer="ann")
    add("skipped-gate-dropped-claim", 9, gate="skipped", filtered=True)  # findings count on a PASS the gate passed

    default = review_queue.QueueFilter()
    rows, total = review_queue.queue_rows(store, default), queue_count(store, default)
    assert [r.id for r in rows] == ["crashed", "low", "pass-dropped-claim", "pass-guard-template",
                                       "pass-with-warning"] and total == 5
    # A PASS in the queue names why it is there; the other verdicts speak for themselves.
    assert [r.queued_for for r in rows] == [[], [], ["composer_findings"], ["composer_findings"], ["gatekeeper_warn"]]
    assert review_queue.queue_rows(store, default, limit=2, offset=1) == rows[1:3]
    with_eval = review_queue.queue_rows(store, review_queue.QueueFilter(include_eval=True))
    assert with_eval[0].id == "eval-reject" and with_eval[0].review_label == review_queue.EVAL_LABEL
    done = review_queue.queue_rows(store, review_queue.QueueFilter(reviewed=True))
    assert [r.id for r in done] == ["reviewed-reject"]
    assert review_queue.queue_stats(store, default).total == 5
    # The findings are a column written with the audit record: a session stored later counts at
    # once, and one rewritten without findings leaves the review_queue.
    add("pass-late-guard", 10, guard_template=True)
    rewritten = _row([], {}, [])["self_evaluation"]
    rewritten["verifier_evaluation"]["composer_filtered"] = []
    store.update_session("pass-guard-template", self_evaluation=rewritten)
    assert [r.id for r in review_queue.queue_rows(store, default)][:1] == ["pass-late-guard"]
    assert "pass-guard-template" not in {r.id for r in review_queue.iter_filtered(store, default)}


def test_an_imported_pass_with_claims_kept_from_its_answer_is_in_the_queue(any_store: Store) -> None:
    store = any_store
    evaluation = _row([], {}, [])["self_evaluation"]  # composer_filtered: one claim kept out
    store.add_whole_session(
        session={"id": "imported", "question": "q", "world": None, "shape": "split", "provider": "offline",
                 "model": "m"},
        invocations=[], llm_calls=[],
        finish=lambda _ids: {"status": "completed", "verdict": "PASS", "gatekeeper_status": "pass",
                             "self_evaluation": evaluation})
    assert [r.id for r in review_queue.queue_rows(store, review_queue.QueueFilter())] == ["imported"]


def test_sqlite_answers_the_queue_from_its_listing_index(tmp_path) -> None:
    # The plans, not times. Without statistics SQLite answered the needs-a-person OR with one index
    # per branch and a sort of their union (docs/benchmarks.md#figures-behind-choices-in-the-code), and the
    # chart groups with a sort of every row; and a batch migration that rebuilds the table drops
    # the expression index it cannot reflect.
    from sqlalchemy import event

    store = _store_with(Store(f"sqlite:///{tmp_path / 'plan.db'}"), 3)
    ran: list[tuple[str, object]] = []
    event.listen(store.engine, "before_cursor_execute", lambda _c, _cur, sql, params, _ctx, _many: ran.append(
        (sql, params)) if "diagnosis_session" in sql else None)

    def plan(sql: str, params: object) -> str:
        with store.engine.connect() as conn:
            return " | ".join(r[3] for r in conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {sql}", params))

    since = SessionFilter(since=datetime(2026, 1, 1, tzinfo=UTC))
    for q, scanned in ((review_queue.QueueFilter(), review_queue.QueueFilter(since)),
                       (review_queue.QueueFilter(needs_person=False, reviewed=None),
                        review_queue.QueueFilter(since, needs_person=False, reviewed=None))):
        ran.clear()
        review_queue.queue_stats(store, q)  # off the tally: sessions are only looked up, the eval runs' and reviewed
        [(sql, params)] = ran
        assert "SCAN diagnosis_session" not in plan(sql, params)
        ran.clear()
        review_queue.queue_stats(store, scanned)  # a day range the tally has not: the groups in index order
        [(sql, params)] = ran
        counts = plan(sql, params)
        assert "SCAN diagnosis_session USING INDEX ix_session_listing" in counts and "TEMP B-TREE" not in counts
        ran.clear()
        review_queue.queue_rows(store, q)
        [(sql, params)] = ran
        rows = plan(sql, params)
        assert "SCAN diagnosis_session USING" in rows and "MULTI-INDEX OR" not in rows and "TEMP B-TREE" not in rows


def test_rule_fields_edit_yaml_and_validation_names_file_and_field(repo_root) -> None:
    rules = load_rules(repo_root / "rules")
    index, meta = yaml_of_rules(rules)
    index2, meta2 = rules_yaml.set_rule_field(index, meta, "evidence.excerpt_similarity", "params.warnThreshold", 0.9)
    candidate, errors = rules_view.check_rules(index2, meta2)
    assert candidate is None
    assert any(e.startswith("metadata.yaml: ruleMetadata.evidence.excerpt_similarity.params.warnThreshold") for e in errors)
    index3, meta3 = rules_yaml.set_rule_field(index, meta, "evidence.excerpt_similarity", "params.passThreshold", 0.7)
    index3, meta3 = rules_yaml.set_rule_field(index3, meta3, "claim.evidence_utilization", "enabled", True)
    ok, errors = rules_view.check_rules(index3, meta3)
    assert errors == [] and ok.get("evidence.excerpt_similarity").params.passThreshold == 0.7
    assert ok.get("claim.evidence_utilization").enabled
    diff = rules_view.yaml_diff((index, meta), (index3, meta3), "v1", "v2")
    assert "-      passThreshold: 0.5" in diff and "+      passThreshold: 0.7" in diff


def test_param_fields_follow_the_rule_kinds_parameter_models(repo_root) -> None:
    rules = load_rules(repo_root / "rules")
    kinds = {f.name: f.kind for f in rules_view.param_fields(rules.get("evidence.excerpt_similarity"))}
    assert {k: kinds[k] for k in ("passThreshold", "warnThreshold", "compareAgainst")} == {
        "passThreshold": "number", "warnThreshold": "number", "compareAgainst": "choice_list"}
    entity = {f.name: f for f in rules_view.param_fields(rules.get("evidence.excerpt_entities"))}
    assert entity["negationOutcome"].kind == "choice" and "warn" in entity["negationOutcome"].options
    assert entity["negationTerms"].kind == "text_list"
    assert {f.kind for f in rules_view.param_fields(rules.get("schema.executor_v2"))} >= {"bool", "text_list"}


def test_a_threshold_says_what_it_acts_on_and_the_chart_draws_only_what_it_compares(settings, store, repo_root) -> None:
    """The tuner's 0.50 -> 0.95 on passThreshold: the field says it acts on digest scores only,
    that with compareAgainst [output] it acts on nothing stored, and the chart shows the scores
    the thresholds really compare (a quote in its output is 1.0 or 0.0 by structure)."""
    from pipeline.replay.history import GateColumnCache, similarity_histogram

    rules = load_rules(repo_root / "rules")
    sim = rules.get("evidence.excerpt_similarity")
    acts = {f.name: f.acts_on for f in rules_view.param_fields(sim)}
    assert (acts["passThreshold"], acts["warnThreshold"], acts["minPieceWeight"], acts["compareAgainst"]) == (
        "digest_scores", "digest_scores", "bindings", None)
    assert [f.acts_on for f in rules_view.param_fields(rules.get("claim.evidence_utilization"))] == ["claims"]
    assert {f.acts_on for f in rules_view.param_fields(rules.get("evidence.digest_ref"))} == {None, "digests"}
    assert sim.params.compareAgainst == ["output"] and rules_view.digest_scores_judged(sim, None) == 0
    run_session("payment API times out since 10:00, what's going on?", settings=settings, store=store)
    history = GateColumnCache(store, kept=0)
    history.refresh(rules)
    arrays = history.arrays
    assert arrays is not None and len(arrays.b_score)
    bars = similarity_histogram(arrays, sim.params)
    assert sum(n for _, n in bars) and not [b for b, n in bars if n and 0 < b < 0.95]
    index, meta = yaml_of_rules(rules)
    index, meta = rules_yaml.set_rule_field(index, meta, "evidence.excerpt_similarity", "params.compareAgainst",
                                            ["output", "digest.source_quote"])
    with_digests, _ = rules_view.check_rules(index, meta)
    assert with_digests is not None
    assert rules_view.digest_scores_judged(with_digests.get("evidence.excerpt_similarity"), arrays) > 0


def test_version_0_of_the_rules_history_is_dated_by_its_files(settings, store) -> None:
    from pipeline.runs import rulebook

    [shipped] = rules_view.rule_history(store, rulebook.read_rules_dir(settings), rulebook.rules_dir_time(settings))
    stamp = max(p.stat().st_mtime for p in (settings.rules_dir / "index.yaml", settings.rules_dir / "metadata.yaml"))
    assert (shipped.id, shipped.created_at, shipped.parent_id) == (0, datetime.fromtimestamp(stamp, UTC), None)


def test_a_real_session_gives_located_highlight_windows(settings, store) -> None:
    result = run_session("payment API times out since 10:00, what's going on?", settings=settings, store=store)
    cards = trace_view.claim_cards(read_session(store, result.session_id))
    located = [b for c in cards for b in c.bindings if b.spans]
    assert located
    b = located[0]
    decoded = outputs.decoded_output(store.invocation(b.invocation_id).output)
    w = highlight.highlight_window(decoded, b.spans)
    marked = "".join(t for t, k in w.segments if k == "match")
    assert marked and marked in decoded


def test_the_ask_page_reads_stored_events_back_as_the_models_announced(settings, store) -> None:
    announced: list = []
    sid = run_session("payment API times out since 10:00, what's going on?", settings=settings, store=store,
                      on_event=announced.append).session_id
    stored = ask_view.stored_events(store, sid)
    assert [event for _, event in stored] == announced
    assert {type(e).__name__ for e in announced} >= {"SessionOpened", "Planned", "ToolCalled", "Verified", "Done"}
    # A follower asks only for what came after the last event it drew.
    assert ask_view.stored_events(store, sid, after=stored[-2][0]) == stored[-1:]


def test_a_stored_session_reads_back_into_its_contracts(settings, store) -> None:
    result = run_session("payment API times out since 10:00, what's going on?", settings=settings, store=store)
    store.add_review(session_id=result.session_id, label="correct", reviewer="ann", claim_id="c1")
    record = read_session(store, result.session_id)
    assert record.evaluation == result.evaluation.round_audit
    assert record.verdict == result.verdict and record.planner_plan is not None
    assert record.invocations and {c.stage for c in record.llm_calls} >= {"planner", "diagnosis", "composer"}
    assert [r.label for r in record.claim_reviews("c1")] == ["correct"] and record.session_reviews == []
    text = render_trace(store, result.session_id)
    assert f"session {result.session_id}" in text and "ann: correct on c1" in text


def test_executor_output_that_breaks_the_schema_still_shows_every_claim_in_place() -> None:
    claims = [{"claim_id": 3, "claim_text": None, "evidence_bindings": "none"},
              "a bare string",
              {"claim_id": "c9", "evidence_bindings": ["junk", {"tool_name": "query_logs", "evidence_excerpt": "x",
                                                                "source_invocation_ids": 7, "digest_id": 1}]}]
    errors = [{"rule_id": "evidence.invocation_ref", "target": "claims[2].evidence_bindings[1]", "message": "ids"}]
    cards = trace_view.claim_cards(_session(errors, {}, claims))
    # As the pipeline read it: a field of the wrong type is absent, a non-object keeps its place.
    assert [c.claim.key for c in cards] == ["", "", "c9"] and [c.target for c in cards][2] == "claims[2]"
    assert cards[0].claim.claim_text is None and cards[0].bindings == [] and not cards[1].claim.written_as_object
    junk, real = cards[2].bindings
    assert not junk.binding.written_as_object and junk.binding.evidence_excerpt is None
    assert real.binding.source_invocation_ids == [] and real.binding.digest_id is None
    assert [e.message for e in real.errors] == ["ids"] and junk.errors == []


def test_a_row_that_breaks_a_contract_is_a_store_error_naming_the_field(store) -> None:
    row = _row([], {}, [])
    row["self_evaluation"]["verifier_evaluation"]["verdict"] = "MAYBE"
    with pytest.raises(StoreError, match=r"session s-1: stored evaluation\.verdict .*MAYBE"):
        SessionRecord.from_row(row)
    with pytest.raises(NotFound, match="s-nope"):
        read_session(store, "s-nope")


def test_highlight_window_marks_the_cited_records_around_the_match():
    decoded = "record zero text\nrecord one holds the quote here\nrecord two"
    quote = decoded.index("the quote")
    cited = [(17, 48)]  # record one
    w = highlight.highlight_window(decoded, [(quote, quote + 9)], cited=cited, context=20)
    kinds = {text: kind for text, kind in w.segments}
    assert kinds["the quote"] == "match"
    assert kinds["record one holds "] == "cited" and kinds[" here"] == "cited"
    assert all(kind != "cited" for text, kind in w.segments if "zero" in text or "two" in text)


def test_sqlite_moves_re_judged_sessions_in_the_charts_from_the_listing_index(tmp_path) -> None:
    # Where the tally cannot answer, the charts move each session with a verdict in force from its groups at ask to its groups in
    # force; both queries must read the listing index alone, never a session's row (its audit
    # record): by id, or for an indexed expression SQLite does not take from the index in a join.
    from sqlalchemy import event, insert

    from pipeline.store.schema import VerdictInForce

    store = _store_with(Store(f"sqlite:///{tmp_path / 'plan.db'}"), 6)
    ids = [r.id for r in review_queue.queue_rows(store, review_queue.QueueFilter(SessionFilter(verdicts=["PASS"]),
                                                                   needs_person=False, reviewed=None))]
    with store.engine.begin() as conn:
        conn.execute(insert(VerdictInForce), [{"session_id": sid, "verdict": "REJECT", "gatekeeper_status": "fail",
                                               "failed_rules": ["evidence.invocation_ref"], "rules_version": 1,
                                               "ungated": False} for sid in ids[:2]])
    ran: list[tuple[str, object]] = []
    event.listen(store.engine, "before_cursor_execute", lambda _c, _cur, sql, params, _ctx, _many: ran.append(
        (sql, params)) if sql.startswith("SELECT") and "GROUP BY" in sql and "verdict_in_force" in sql else None)
    since = SessionFilter(since=datetime(2026, 1, 1, tzinfo=UTC))  # a day range: the tally cannot answer
    for q in (review_queue.QueueFilter(since), review_queue.QueueFilter(since, needs_person=False, reviewed=None)):
        ran.clear()
        stats = review_queue.queue_stats(store, q)
        assert len(ran) == 2
        for sql, params in list(ran):
            with store.engine.connect() as conn:
                plan = " | ".join(r[3] for r in conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {sql}", params))
            # The join's reads are the index's alone (the scan without a join, like the queue's own
            # scan, reads the groups as the index's expressions).
            covering = "COVERING " if "JOIN" in sql else ""
            assert f"SCAN diagnosis_session USING {covering}INDEX ix_session_listing" in plan, plan
            assert "SEARCH diagnosis_session" not in plan, plan
    assert stats.total == 6 and sum((Counter({v: n}) for _, v, n in stats.per_day), Counter()) == {
        "REJECT": 4, "LOW_CONFID": 2}
    assert stats.failed_rules == {"evidence.excerpt_similarity": 4, "evidence.invocation_ref": 4}


def test_an_unlocated_excerpt_is_shown_beside_the_records_nearest_to_it() -> None:
    output = json.dumps({"logs": [
        {"timestamp": "2024-05-01T10:00:01Z", "service": "api-gateway", "level": "INFO", "message": "GET /health 200"},
        {"timestamp": "2024-05-01T10:00:02Z", "service": "payment-service", "level": "ERROR",
         "message": "upstream bank-gw timed out after 3000 ms"},
        {"timestamp": "2024-05-01T10:00:03Z", "service": "payment-service", "level": "WARN", "message": "retrying order 123"},
    ]})
    # A paraphrase the matcher did not place: the timeout record comes first, numbered as cited.
    near = outputs.nearest_records(output, "PAYMENT-SERVICE: bank gateway timed out after 3000ms", k=2)
    assert [n.number for n in near] == [1, 2]
    assert near[0].score > near[1].score and "timed out after 3000 ms" in near[0].line
    assert outputs.nearest_records(output, "   ") == []


# --- the queue's exports and the editor check ------------------------------------------------


def test_queue_exports_give_the_cli_list_and_bundles_signed_with_this_homes_key(settings, store, tmp_path) -> None:
    import zipfile
    from io import BytesIO

    from pipeline.bundles.provenance import check_signature, public_key_text, signing_key
    from pipeline.frontends.views.sessions import queue_exports

    sid = run_session("payment API times out since 10:00, what's going on?", settings=settings, store=store).session_id
    q = review_queue.QueueFilter(needs_person=False, reviewed=None)
    csv_file, zip_file = queue_exports(settings, store, q)
    assert (csv_file.kind, csv_file.file_name, zip_file.kind, zip_file.file_name) == (
        "csv", "sessions.csv", "zip", "session-bundles.zip")
    assert csv_file.build() == review_queue.export_csv(store, q)
    with zipfile.ZipFile(BytesIO(zip_file.build())) as zf:
        [name] = zf.namelist()
        bundle = json.loads(zf.read(name))
    assert bundle["session"]["id"] == sid
    own = public_key_text(signing_key(settings).public_key())
    assert check_signature(bundle, {own}).provenance == "verified"


def test_a_home_without_a_key_exports_unsigned_bundles(settings, store) -> None:
    import zipfile
    from io import BytesIO

    from pipeline.bundles.provenance import check_signature
    from pipeline.frontends.views.sessions import queue_exports

    run_session("payment API times out since 10:00, what's going on?", settings=settings, store=store)
    # A folder nobody may create, root included: no key exists and none can be made there.
    keyless = settings.model_copy(update={"provenance": settings.provenance.model_copy(
        update={"key_file": Path("/proc/workbench-no-key/key.pem")})})
    _, zip_file = queue_exports(keyless, store, review_queue.QueueFilter(needs_person=False, reviewed=None))
    with zipfile.ZipFile(BytesIO(zip_file.build())) as zf:
        bundle = json.loads(zf.read(zf.namelist()[0]))
    assert check_signature(bundle, set()).reason == "unsigned"


@pytest.mark.parametrize(("editors", "signed_in", "login", "rules", "label"), [
    # Nobody configured: anyone applies; reviewers type a name (None).
    ((), "", False, (True, "", ()), None),
    # Login without editors: any signed-in user labels, nobody signed in may not.
    ((), "ann@x", True, (True, "ann@x", ()), (True, "ann@x", ())),
    ((), "", True, (True, "", ()), (False, "", ("not_logged_in",))),
    # Editors listed: only they apply and label; the reasons name what is missing.
    (("lead@x",), "lead@x", True, (True, "lead@x", ()), (True, "lead@x", ())),
    (("lead@x",), "ann@x", True, (False, "", ("editors_only", "not_editor")), (False, "", ("not_editor",))),
    (("lead@x",), "", True, (False, "", ("editors_only", "not_logged_in")), (False, "", ("not_logged_in",))),
    (("lead@x",), "", False, (False, "", ("editors_only", "not_logged_in", "auth_missing")),
     (False, "", ("not_logged_in",))),
])
def test_editor_check_decides_who_applies_rules_and_who_labels(settings, editors, signed_in, login, rules,
                                                               label) -> None:
    from pipeline.frontends.access import label_access, rules_access

    s = settings.model_copy(update={"ui": settings.ui.model_copy(update={"editors": list(editors)})})
    r = rules_access(s, signed_in, login_configured=login)
    assert (r.allowed, r.who, r.why) == rules and r.editors == editors
    lab = label_access(s, signed_in, login_configured=login)
    assert (None if lab is None else (lab.allowed, lab.who, lab.why)) == label
