"""`workbench eval` as a real process: it submits the suite as an eval job (the Eval page's kind),
follows it fixture by fixture, and Ctrl-C stops it, the run kept as cancelled with its sessions.
On SQLite the embedded queue runs the job inside the command; on PostgreSQL a `workbench worker`
does, and --no-wait leaves it there. The model answers each stage after a pause, so a fixture
spans seconds and the interrupt lands mid-suite."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from helpers import postgres_schema
from test_jobs_processes import JOBS, _env, _settings, _slow_model, _stop, _wait_for, _workbench

from pipeline.eval import history
from pipeline.jobs.records import get_job
from pipeline.store import Store
from tests.stub_openai import StubOpenAI

pytestmark = pytest.mark.slow

QUESTION = "Order 123 payment failed with ERR_TIMEOUT from the gateway, what happened?"
FIXTURES = 3


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest) -> Iterator[str | None]:
    """None: the embedded default (SQLite in the home, no worker); else a fresh PostgreSQL schema."""
    if request.param == "sqlite":
        yield None
        return
    with postgres_schema("t") as url:
        yield url


def _eval(env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "pipeline", "eval", *args], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def test_eval_follows_its_job_and_ctrl_c_cancels_it_keeping_its_sessions(
        tmp_path: Path, database_url: str | None) -> None:
    suite = tmp_path / "fixtures"
    suite.mkdir()
    for n in range(FIXTURES):
        (suite / f"{n:02d}-gateway.yaml").write_text(yaml.safe_dump({
            "incident": "gateway-timeout", "question": QUESTION,
            "expect": {"verdict_in": ["PASS", "LOW_CONFID", "REJECT"]}}), encoding="utf-8")
    with StubOpenAI(responder=_slow_model(0.2)) as stub:
        env = _env(tmp_path, stub, database_url)
        Path(env["WORKBENCH_CONFIG"]).write_text(yaml.safe_dump(
            {"jobs": JOBS, "openai": {"max_retries": 0}, "fixtures_dir": str(suite)}), encoding="utf-8")
        store = Store(_settings(env).db_url)
        worker = _workbench(env, "worker", "--concurrency", "2", log=tmp_path / "worker.log") if database_url else None
        try:
            if worker is None:  # nobody else would run it: the command refuses to leave
                refused = subprocess.run([sys.executable, "-m", "pipeline", "eval", "--no-wait"], env=env, text=True,
                                         capture_output=True, timeout=120)
                assert refused.returncode == 2 and refused.stdout == "", refused.stderr
                assert len(refused.stderr.splitlines()) == 1 and "--no-wait" in refused.stderr
                left = None
            else:
                done = subprocess.run([sys.executable, "-m", "pipeline", "eval", "--no-wait", "--who", "bo"], env=env,
                                      text=True, capture_output=True, timeout=120)
                assert done.returncode == 0, done.stderr
                left = done.stdout.strip()
                assert left.startswith("j-") and get_job(store, left).kind == "eval"

            proc = _eval(env, "--who", "ann")
            run = _wait_for("the followed run's first fixture", lambda: next(
                (r for r in history.active_runs(store) if r.who == "ann" and r.done >= 1), None))
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=180)
            if left is not None:  # the run left to the worker ends on its own, complete
                _wait_for("the worker to finish the run left to it",
                          lambda: get_job(store, left).status not in ("queued", "running"))
        finally:
            if worker is not None:
                _stop(worker)

    assert proc.returncode == 130, err
    assert f"[1/{FIXTURES}] 00-gateway " in err and f"eval run {run.id} cancelled after" in err, err
    (cancelled,) = [r for r in history.list_runs(store) if r.id == run.id]
    assert (cancelled.status, cancelled.who, cancelled.origin) == ("cancelled", "ann", "cli")
    assert 1 <= len(cancelled.results) < FIXTURES
    for result in cancelled.results:  # the sessions it made are stored, whole
        assert store.get_session(result["session_id"])["status"] == "completed"
    assert "00-gateway" in out  # what ran, as the table of a finished run
    if left is not None:
        (kept,) = [r for r in history.list_runs(store) if r.id == left]
        assert (kept.status, kept.who, kept.origin, len(kept.results)) == ("completed", "bo", "cli", FIXTURES)
