"""The metrics collector over the store (the scrape through a real Prometheus is
test_metrics_prometheus.py): each ended session counts once, late-committed end events too;
stored sessions count by their verdict in force; a store that does not answer is a series, not
a failed scrape; the counts come off an index."""

from __future__ import annotations

from typing import Any

from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import create_engine
from sqlalchemy.orm import Session

from pipeline.core.config import Settings
from pipeline.runs.session import run_session
from pipeline.store import Store
from pipeline.store.schema import SessionEventRow, VerdictInForce
from pipeline.telemetry.metrics import Metrics


def _samples(metrics: Metrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    body, content_type = metrics.exposition()
    assert content_type.startswith("text/plain")
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(body.decode()) for s in family.samples}


def _finished(metrics: Metrics) -> float:
    return sum(v for (name, _), v in _samples(metrics).items() if name == "workbench_sessions_finished_total")


def _event(store: Store, **columns: Any) -> None:
    with Session(store.engine) as db, db.begin():
        db.add(SessionEventRow(**columns))


def test_each_ended_session_counts_once_even_when_its_end_event_commits_late(settings: Settings,
                                                                             store: Store) -> None:
    earlier = run_session("payment API times out since 10:00", settings=settings, store=store)
    metrics = Metrics(store)  # counters start here: the session before is stored, not "finished since"
    start = max(_ids(store))
    assert _finished(metrics) == 0
    _event(store, id=start + 50, session_id=earlier.session_id, stage="note", data={})  # ids handed out ahead

    ran = run_session("order-service memory keeps growing", settings=settings, store=store)
    samples = _samples(metrics)
    assert _finished(metrics) == 1
    assert samples[("workbench_sessions_finished_total", (("status", "completed"), ("verdict", ran.verdict)))] == 1
    assert samples[("workbench_stage_seconds_count", (("stage", "verification"),))] == 1
    assert samples[("workbench_store_up", ())] == 1
    completed = sum(v for (name, labels), v in samples.items()
                    if name == "workbench_sessions" and ("status", "completed") in labels)
    assert completed == 2  # the store's gauge holds every stored session

    # A rules apply re-judged the session: the gauge shows the verdict in force, the counter
    # keeps what the session ended with.
    moved_to = "REJECT" if ran.verdict != "REJECT" else "PASS"
    with Session(store.engine) as db, db.begin():
        db.add(VerdictInForce(session_id=ran.session_id, verdict=moved_to, gatekeeper_status="fail",
                              failed_rules=[], rules_version=1))
    samples = _samples(metrics)
    assert samples[("workbench_sessions", (("status", "completed"), ("verdict", moved_to)))] >= 1
    assert samples[("workbench_sessions_finished_total", (("status", "completed"), ("verdict", ran.verdict)))] == 1
    assert sum(v for (name, labels), v in samples.items()
               if name == "workbench_sessions" and ("status", "completed") in labels) == 2

    # An end event whose id was taken before the last one but committed after it.
    _event(store, id=start + 10, session_id=earlier.session_id, stage="done", data={})
    assert _finished(metrics) == 2
    assert _finished(metrics) == 2  # and never twice


def _ids(store: Store) -> list[int]:
    with Session(store.engine) as db:
        return [row[0] for row in db.query(SessionEventRow.id).all()]


def test_a_store_that_does_not_answer_is_reported_not_raised(settings: Settings, store: Store) -> None:
    metrics = Metrics(store)
    store.engine = create_engine("sqlite:////nonexistent-dir/workbench.db")
    samples = _samples(metrics)
    assert samples[("workbench_store_up", ())] == 0
    assert not any(name.startswith("workbench_sessions") for name, _ in samples)
    assert any(name == "process_resident_memory_bytes" for name, _ in samples)


def test_sessions_are_counted_from_an_index_not_from_their_rows(store: Store) -> None:
    from sqlalchemy import text

    with store.engine.connect() as conn:
        plan = " ".join(str(r[-1]) for r in conn.execute(text(
            "EXPLAIN QUERY PLAN SELECT status, verdict, count(*) FROM diagnosis_session GROUP BY status, verdict")))
    assert "COVERING INDEX ix_session_status_verdict" in plan
