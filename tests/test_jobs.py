"""Sessions, eval runs and batch checks as jobs on the in-process pool (SQLite).

The PostgreSQL queue (procrastinate workers) and killed processes are in test_jobs_processes.py.
"""

from __future__ import annotations

import json
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pydantic import TypeAdapter
from sqlalchemy import update
from sqlalchemy.orm import Session

from pipeline.bundles.session_bundle import export_bundle
from pipeline.core.config import Settings, load_settings
from pipeline.core.events import SessionEvent
from pipeline.jobs import make_queue, submit_job, submit_rerun, submit_session
from pipeline.jobs.local import LocalQueue
from pipeline.jobs.records import get_job
from pipeline.jobs.tasks import run_diagnosis
from pipeline.store import Store
from pipeline.store.lease import ended, events, reap, rerun_session
from pipeline.store.schema import DiagnosisSession
from tests.stub_openai import PipelineModel, StubOpenAI, StubReply

QUESTION = "payment API times out since 10:00, what's going on?"


def _age(store: Store, session_id: str, seconds: float) -> None:
    """Pretend the row's last heartbeat was `seconds` ago (its worker went quiet)."""
    with Session(store.engine) as db, db.begin():
        db.execute(update(DiagnosisSession).where(DiagnosisSession.id == session_id)
                   .values(heartbeat_at=datetime.now(UTC) - timedelta(seconds=seconds)))


def test_a_queued_session_runs_on_the_pool_and_its_stage_events_are_stored(settings: Settings, store: Store) -> None:
    queue = make_queue(settings, store)
    assert isinstance(queue, LocalQueue)
    sid = submit_session(queue, settings, store, QUESTION)
    assert store.get_session(sid)["status"] in ("queued", "running", "completed")
    queue.close()
    row = store.get_session(sid)
    assert (row["status"], row["stage"], row["trigger"]) == ("completed", "done", {"kind": "manual"})
    assert row["verdict"] and row["provider"] == "offline" and row["model"] != "queued"
    stages = [stage for _, stage, _ in events(store, sid)]
    assert stages[0] == "session" and stages[-1] == "done"
    assert {"planner", "tool", "collector", "diagnosis", "verification"} <= set(stages)
    tool_ids = [data["id"] for _, stage, data in events(store, sid) if stage == "tool"]
    assert tool_ids == [inv.id for inv in store.invocations(sid)]
    # Each stored event is its model's fields, in their order: what a page reads is what the session typed.
    for _, stage, data in events(store, sid):
        event = TypeAdapter(SessionEvent).validate_python({"type": stage, **data})
        assert json.dumps(json.loads(json.dumps(event.data(), default=str))) == json.dumps(data)
    # A follower that saw the first three events gets exactly the rest.
    seen = events(store, sid)[2][0]
    assert [e[1] for e in events(store, sid, after=seen)] == stages[3:]
    # The same job delivered again does not run the session twice.
    assert run_diagnosis(settings, store, sid) is None
    assert len(store.invocations(sid)) == len(tool_ids)


def test_a_lapsed_lease_is_interrupted_at_its_stage_and_runs_again_as_a_new_session(settings: Settings,
                                                                                 store: Store) -> None:
    sid = store.create_session(question=QUESTION, world=None, shape="split", provider="offline", model="x")
    store.update_session(sid, stage="diagnosis")
    fresh = store.create_session(question=QUESTION, world=None, shape="split", provider="offline", model="x")
    _age(store, sid, settings.jobs.lease_s + 1)
    _age(store, fresh, 0)
    assert reap(store, settings.jobs.lease_s) == [sid]
    row = store.get_session(sid)
    assert (row["status"], row["stage"]) == ("interrupted", "diagnosis")
    assert "stage diagnosis" in row["error"]
    assert store.get_session(fresh)["status"] == "running"

    queue = LocalQueue(settings, store)
    again = submit_rerun(queue, store, sid)
    queue.close()
    new = store.get_session(again)
    assert (new["status"], new["rerun_of"], new["question"]) == ("completed", sid, QUESTION)
    assert store.get_session(sid)["status"] == "interrupted"  # the first attempt stays as it ended


def test_a_session_has_ended_for_the_queue_only_when_no_rerun_of_it_is_under_way(settings: Settings,
                                                                                    store: Store) -> None:
    """What the PostgreSQL worker's orphan sweep retries (pipeline.jobs.pg): a job still `doing`
    for a session that ended, and no rerun of it queued or running."""
    done = store.create_session(question=QUESTION, world=None, shape="split", provider="offline", model="x")
    store.update_session(done, status="completed")
    failed = store.create_session(question=QUESTION, world=None, shape="split", provider="offline", model="x")
    store.update_session(failed, status="failed")
    running = store.create_session(question=QUESTION, world=None, shape="split", provider="offline", model="x")
    assert ended(store, [done, failed, running, "s-none"]) == {done, failed}
    rerun_session(store, failed, owned=False)  # its retry is under way: the job is not an orphan
    assert ended(store, [done, failed, running]) == {done}


def test_a_pool_that_dies_leaves_its_queued_rows_to_the_reaper(settings: Settings, store: Store) -> None:
    blocker = threading.Event()
    queue = LocalQueue(settings, store, concurrency=1)
    queue.defer = lambda kind, ref: blocker  # type: ignore[method-assign]  # the process "dies" before running it
    sid = submit_session(queue, settings, store, QUESTION)
    _age(store, sid, settings.jobs.lease_s + 1)
    LocalQueue(settings, store).close()  # the next start reaps
    assert store.get_session(sid)["status"] == "interrupted"
    queue.close()


def _openai(stub: StubOpenAI, **jobs: Any) -> Settings:
    return load_settings(provider="openai", openai={"base_url": stub.base_url, "model": "stub-model", "max_retries": 0},
                         jobs=jobs)


def test_a_transient_endpoint_failure_is_retried_as_a_new_session() -> None:
    model = PipelineModel()
    outage = {"left": 1}

    def responder(request: Any) -> StubReply:
        if outage["left"]:
            outage["left"] -= 1
            return StubReply(status=503, body={"error": {"message": "overloaded", "type": "server_error"}})
        return model(request)

    with StubOpenAI(responder=responder) as stub:
        settings = _openai(stub, retries=1)
        store = Store(settings.db_url)
        queue = LocalQueue(settings, store)
        first = submit_session(queue, settings, store, QUESTION, world_id="gateway-timeout")
        queue.close()
    failed = store.get_session(first)
    assert failed["status"] == "failed" and "503" in failed["error"]
    (retry,) = [r for r in _all(store) if r["rerun_of"] == first]
    assert retry["status"] == "completed" and retry["verdict"]


def _all(store: Store) -> list[dict[str, Any]]:
    return [store.get_session(sid) for sid in store.session_ids()]


def test_llm_requests_to_one_endpoint_never_exceed_the_cap() -> None:
    model = PipelineModel()
    lock = threading.Lock()
    state = {"now": 0, "peak": 0}

    def responder(request: Any) -> StubReply:
        with lock:
            state["now"] += 1
            state["peak"] = max(state["peak"], state["now"])
        time.sleep(0.05)  # long enough for concurrent sessions to overlap
        with lock:
            state["now"] -= 1
        return model(request)

    with StubOpenAI(responder=responder) as stub:
        settings = _openai(stub, concurrency=6, llm_concurrency=2)
        store = Store(settings.db_url)
        queue = LocalQueue(settings, store)
        ids = [submit_session(queue, settings, store, QUESTION, world_id="gateway-timeout") for _ in range(6)]
        queue.close()
    assert all(store.get_session(sid)["status"] == "completed" for sid in ids)
    assert state["peak"] == 2


def test_a_job_whose_args_are_not_its_kinds_shape_fails_saying_which(settings: Settings, store: Store) -> None:
    queue = LocalQueue(settings, store)
    bad = submit_job(queue, store, "check", {"bundles": "not a list"})
    queue.close()
    row = get_job(store, bad)
    assert row.status == "failed" and row.error is not None and "bundles" in row.error and row.result is None


@pytest.mark.slow  # the whole eval suite again, as a job (test_eval_suite runs it in the fast lane)
def test_eval_run_and_batch_check_are_jobs_with_stored_results(settings: Settings, store: Store,
                                                               tmp_path: Path) -> None:
    from pipeline.runs.session import run_session

    checked = run_session(QUESTION, settings=settings, store=store)
    bundle = export_bundle(store, checked.session_id)
    queue = LocalQueue(settings, store)
    check_id = submit_job(queue, store, "check", {"bundles": [bundle, bundle]})
    eval_id = submit_job(queue, store, "eval", {})
    queue.close()
    check = get_job(store, check_id)
    assert check.status == "completed", check.error
    reports = check.result["reports"]
    assert len(reports) == 2 and reports[0]["gatekeeper_result"]["status"] in ("pass", "warn", "fail")
    evaluation = get_job(store, eval_id)
    assert evaluation.status == "completed", evaluation.error
    assert evaluation.result["results"] and all("passed" in r for r in evaluation.result["results"])
