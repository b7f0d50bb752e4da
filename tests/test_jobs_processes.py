"""Sessions outlive the process that ran them: real processes killed with SIGKILL mid-session,
and the PostgreSQL queue with real `workbench worker` processes (procrastinate)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers import own_postgres, postgres_schema
from sqlalchemy import text

from pipeline.core.config import Settings, load_settings
from pipeline.jobs import make_queue, submit_session
from pipeline.store import Store
from pipeline.store.lease import reap
from tests.stub_openai import PipelineModel, StubOpenAI, StubReply

pytestmark = pytest.mark.slow

QUESTION = "Order 123 payment failed with ERR_TIMEOUT from the gateway, what happened?"
DEADLINE_S = 180.0  # a loaded CI machine: worker start-up alone takes seconds
JOBS = {"heartbeat_s": 0.2, "lease_s": 2.0, "concurrency": 2}


def _slow_model(delay_s: float) -> Any:
    """The pipeline model answering each call after `delay_s`: a session spans seconds."""
    model = PipelineModel()

    def respond(request: Any) -> StubReply:
        reply = model(request)
        reply.delay_s = delay_s
        return reply

    return respond


def _wait_for(what: str, check: Any) -> Any:
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.1)
    pytest.fail(f"timed out waiting for {what}")


def _env(tmp_path: Path, stub: StubOpenAI, database_url: str | None = None, jobs: dict[str, Any] = JOBS
         ) -> dict[str, str]:
    config = tmp_path / "workbench.yaml"
    config.write_text(yaml.safe_dump({"jobs": jobs, "openai": {"max_retries": 0}}), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL",)}
    env.update(WORKBENCH_CONFIG=str(config), WORKBENCH_PROVIDER="openai", OPENAI_BASE_URL=stub.base_url,
               OPENAI_MODEL="stub-model", WORKBENCH_HOME=str(tmp_path / "home"))
    if database_url:
        env["DATABASE_URL"] = database_url
    return env


def _settings(env: dict[str, str]) -> Settings:
    return load_settings(env["WORKBENCH_CONFIG"], provider="openai", home=env["WORKBENCH_HOME"],
                         database_url=env.get("DATABASE_URL"),
                         openai={"base_url": env["OPENAI_BASE_URL"], "model": "stub-model", "max_retries": 0})


def _workbench(env: dict[str, str], *args: str, log: Path | None = None) -> subprocess.Popen[bytes]:
    # A process that logs much (a worker through an outage) writes to a file: an unread pipe fills and blocks it.
    err = log.open("wb") if log else subprocess.PIPE
    return subprocess.Popen([sys.executable, "-m", "pipeline", *args], env=env, stdout=subprocess.DEVNULL, stderr=err)


def _mid_session(store: Store) -> str | None:
    """The id of a session that has called tools but not finished."""
    for sid in store.session_ids():
        row = store.get_session(sid)
        if row["status"] == "running" and store.invocations(sid):
            return sid
    return None


def test_sigkill_mid_session_leaves_an_interrupted_session_that_runs_again(tmp_path: Path) -> None:
    with StubOpenAI(responder=_slow_model(0.3)) as stub:
        env = _env(tmp_path, stub)
        settings = _settings(env)
        store = Store(settings.db_url)
        proc = _workbench(env, "ask", QUESTION, "--world", "gateway-timeout")
        sid = _wait_for("the session to call its tools", lambda: _mid_session(store))
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        stage = store.get_session(sid)["stage"]
        assert store.get_session(sid)["status"] == "running"  # nobody said otherwise yet

        # The next start (here: `workbench sessions`) reaps once the lease has lapsed.
        def listed_interrupted() -> bool:
            out = subprocess.run([sys.executable, "-m", "pipeline", "sessions", "--json"], env=env,
                                 capture_output=True, text=True, check=True).stdout
            return '"status": "interrupted"' in out and sid in out
        _wait_for("the reaper to mark the session interrupted", listed_interrupted)
        row = store.get_session(sid)
        assert (row["status"], row["stage"]) == ("interrupted", stage)
        assert f"stage {stage}" in row["error"]

        again = subprocess.run([sys.executable, "-m", "pipeline", "rerun", sid], env=env,
                               capture_output=True, text=True, timeout=DEADLINE_S)
        assert again.returncode == 0, again.stderr
        (new,) = [store.get_session(s) for s in store.session_ids() if store.get_session(s)["rerun_of"] == sid]
        assert new["status"] == "completed" and new["verdict"]
        assert not reap(store, settings.jobs.lease_s)  # nothing left running


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A fresh schema on the test PostgreSQL, as a DATABASE_URL."""
    with postgres_schema("t") as url:
        yield url


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_postgres_workers_run_queued_sessions_and_retry_a_killed_workers_job(tmp_path: Path, pg_url: str) -> None:
    with StubOpenAI(responder=_slow_model(0.3)) as stub:
        env = _env(tmp_path, stub, pg_url)
        settings = _settings(env)
        store = Store(settings.db_url)
        queue = make_queue(settings, store)
        assert type(queue).__name__ == "ProcrastinateQueue"
        ids = [submit_session(queue, settings, store, QUESTION, world_id="gateway-timeout") for _ in range(3)]
        queue.close()
        assert {store.get_session(s)["status"] for s in ids} == {"queued"}

        doomed = _workbench(env, "worker", "--concurrency", "1")
        victim = _wait_for("a worker to take a session", lambda: _mid_session(store))
        os.kill(doomed.pid, signal.SIGKILL)
        doomed.wait()

        survivor = _workbench(env, "worker", "--concurrency", "2")
        try:
            def settled() -> bool:
                rows = [store.get_session(s) for s in store.session_ids()]
                return all(r["status"] in ("completed", "failed", "interrupted") for r in rows) and any(
                    r["rerun_of"] == victim and r["status"] == "completed" for r in rows)
            _wait_for("the surviving worker to finish every session", settled)
        finally:
            _stop(survivor)
        rows = {s: store.get_session(s) for s in store.session_ids()}
    assert rows[victim]["status"] == "interrupted"
    for sid in ids:
        if sid != victim:
            assert rows[sid]["status"] == "completed", rows[sid]["error"]
    # None lost: every queued question ended completed, directly or through its rerun.
    reruns = {r["rerun_of"]: r for r in rows.values() if r["rerun_of"]}
    assert reruns[victim]["status"] == "completed"


def _all_settled(store: Store) -> bool:
    """Every session ended and procrastinate holds no job to do; False while the server is down."""
    try:
        rows = [store.get_session(s) for s in store.session_ids()]
        with store.engine.connect() as conn:
            pending = conn.execute(text("SELECT count(*) FROM procrastinate_jobs WHERE status IN ('todo', 'doing')"))
            return pending.scalar_one() == 0 and all(r["status"] in ("completed", "failed", "interrupted") for r in rows)
    except Exception:  # noqa: BLE001 - the server is stopped or starting
        return False


def test_a_database_stopped_under_a_live_worker_runs_each_alert_group_once(tmp_path: Path) -> None:
    """PostgreSQL stopped for several leases while a worker runs queued sessions, then started
    again: the live worker's sessions are not reaped as a stopped worker's, and each group key
    ends as exactly one completed session."""
    with own_postgres() as pg, StubOpenAI(responder=_slow_model(0.3)) as stub:
        # The outage is half a lease, as a 20 s one is under the default 60 s lease.
        env = _env(tmp_path, stub, pg.url, jobs={**JOBS, "lease_s": 8.0})
        settings = _settings(env)
        store = Store(settings.db_url)
        queue = make_queue(settings, store)
        keys = ["group-a", "group-b"]
        for key in keys:
            submit_session(queue, settings, store, QUESTION, world_id="gateway-timeout",
                           trigger={"kind": "alertmanager"}, trigger_key=key)
        queue.close()
        worker = _workbench(env, "worker", "--concurrency", "2", log=tmp_path / "worker.log")
        try:
            _wait_for("the worker to be mid-session", lambda: _mid_session(store))
            pg.stop()
            time.sleep(settings.jobs.lease_s / 2)
            pg.start()
            _wait_for("every session and job to settle", lambda: _all_settled(store))
            time.sleep(2 * settings.jobs.lease_s)  # a late reaper round would show up here
            assert _all_settled(store)
        finally:
            _stop(worker)
        rows = [store.get_session(s) for s in store.session_ids()]
        store.engine.dispose()
    for key in keys:
        done = [r for r in rows if r["trigger_key"] == key and r["status"] == "completed"]
        assert len(done) == 1, [(r["id"], r["status"], r["error"]) for r in rows if r["trigger_key"] == key]
    assert sum(r["status"] == "completed" for r in rows) == len(keys)
    assert not [r for r in rows if "worker stopped" in (r["error"] or "")], rows
