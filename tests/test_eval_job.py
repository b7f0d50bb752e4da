"""An eval run as a job, on real SQLite and PostgreSQL: it reports n of N as it goes, a page that
did not start it (a reload, another replica) finds it, a person stops it, and a run that stops
early (cancelled, or its worker died) is kept with the sessions it made."""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import update
from sqlalchemy.orm import Session

from pipeline.core.config import ROOT, Settings, load_settings
from pipeline.eval import history, runner
from pipeline.jobs.records import create_job, get_job, report_progress, request_cancel
from pipeline.jobs.tasks import run_eval
from pipeline.store import Store
from pipeline.store.lease import reap
from pipeline.store.schema import JobRow

FIXTURES = ("01-fabricated-invocation-id", "05-number-swapped", "06-service-swapped")


@pytest.fixture
def suite_settings(tmp_path: Path, any_store: Store) -> Settings:
    suite = tmp_path / "fixtures"
    suite.mkdir()
    for name in FIXTURES:
        shutil.copy(ROOT / "data" / "fixtures" / f"{name}.yaml", suite / f"{name}.yaml")
    return load_settings().model_copy(update={"fixtures_dir": suite, "db_url": any_store.url})


def _until(condition, what: str) -> None:  # type: ignore[no-untyped-def]
    """Poll the store until `condition()` holds; a bound on polls, not a timing assertion."""
    for _ in range(600):
        if condition():
            return
        time.sleep(0.1)
    raise AssertionError(f"never: {what}")


def test_a_run_reports_progress_is_found_by_a_fresh_reader_and_stops_with_its_sessions(
        suite_settings: Settings, any_store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    # The job runs the real suite; the test holds it after the first fixture, as a slow model would.
    go_on = threading.Event()
    real = runner.iter_suite

    def held(*args, **kwargs) -> Iterator[tuple[runner.EvalResult, int]]:  # type: ignore[no-untyped-def]
        for n, item in enumerate(real(*args, **kwargs)):
            yield item
            if n == 0:
                go_on.wait(60)

    monkeypatch.setattr(runner, "iter_suite", held)
    job_id = create_job(any_store, "eval", {"who": "", "origin": "page"}, owned=True)
    (queued,) = history.active_runs(any_store)
    assert (queued.id, queued.total, queued.done, queued.stopping) == (job_id, None, 0, False)

    worker = threading.Thread(target=run_eval, args=(suite_settings, any_store, job_id))
    worker.start()
    try:
        # A reader with its own connections (a reload, another replica) sees 1 of 3 and the fixture.
        fresh = Store(any_store.url)
        _until(lambda: [(r.done, r.total) for r in history.active_runs(fresh)] == [(1, 3)], "1 of 3 reported")
        (running,) = history.active_runs(fresh)
        assert running.current == FIXTURES[0] and running.origin == "page"
        assert get_job(fresh, job_id).args["rules"] == "rules/ directory"

        assert request_cancel(fresh, job_id)
        assert history.active_runs(fresh)[0].stopping
    finally:
        go_on.set()
        worker.join(120)

    row = get_job(any_store, job_id)
    assert (row.status, row.progress_done, row.progress_total) == ("cancelled", 2, 3)
    assert not history.active_runs(any_store)
    (run,) = history.list_runs(any_store)
    assert (run.status, run.complete, run.total) == ("cancelled", False, 3)
    # The fixture in hand when the stop came finished; the third never started.
    assert [r["name"] for r in run.results] == list(FIXTURES[:2])
    for result in run.results:
        assert any_store.get_session(result["session_id"])["status"] == "completed"
    assert not request_cancel(any_store, job_id)  # it has ended: nothing to stop


def test_a_run_whose_worker_died_is_interrupted_with_what_it_made_and_a_stopped_queued_run_never_starts(
        suite_settings: Settings, any_store: Store) -> None:
    job_id = create_job(any_store, "eval", {"who": "erin", "origin": "cli"}, owned=True)
    made = {"name": FIXTURES[0], "description": "", "passed": True, "failures": [], "session_id": "s-made",
            "verdict": "REJECT", "expected": {}}
    with Session(any_store.engine) as db, db.begin():
        db.execute(update(JobRow).where(JobRow.id == job_id).values(status="running"))
    assert not report_progress(any_store, job_id, done=1, total=3, result={"results": [made]})
    with Session(any_store.engine) as db, db.begin():  # its worker went quiet
        db.execute(update(JobRow).where(JobRow.id == job_id)
                   .values(heartbeat_at=datetime.now(UTC) - timedelta(seconds=3600)))
    reap(any_store, suite_settings.jobs.lease_s)
    (run,) = history.list_runs(any_store)
    assert (run.id, run.status, run.who, run.total) == (job_id, "interrupted", "erin", 3)
    assert [r["session_id"] for r in run.results] == ["s-made"]
    assert "interrupted" in history.format_history([run])

    # Stopped while still queued: it ends at once, and a late delivery of the job runs nothing.
    queued = create_job(any_store, "eval", {}, owned=True)
    assert request_cancel(any_store, queued)
    run_eval(suite_settings, any_store, queued)
    row = get_job(any_store, queued)
    assert (row.status, row.result, row.progress_done) == ("cancelled", None, None)
