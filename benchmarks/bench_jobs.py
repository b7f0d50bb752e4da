"""Load benchmark of the PostgreSQL job queue, loopback only.

N sessions are queued at once through procrastinate; `workbench worker` processes run them
against the local OpenAI-compatible stub (tests/stub_openai.py), which answers every call after
--delay seconds (7 calls per session). For each worker count it reports throughput, queue wait
(queued -> first stage event) p50/p95, and sessions lost (must be 0). With --kill, one of two
workers is killed with SIGKILL a third of the way through: its sessions must end `interrupted`
and be run again by the survivor (rerun_of), none lost.

    DATABASE_URL_TEST=postgresql+psycopg://... python benchmarks/bench_jobs.py \\
        [--sessions 200] [--delay 2] [--workers 1 2 4] [--concurrency 8] [--kill]
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import yaml
from sqlalchemy import create_engine, text

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pipeline.core.config import load_settings  # noqa: E402
from pipeline.jobs import make_queue, submit_session  # noqa: E402
from pipeline.store import Store  # noqa: E402
from tests.stub_openai import PipelineModel, StubOpenAI, StubReply  # noqa: E402

QUESTION = "Order 123 payment failed with ERR_TIMEOUT from the gateway, what happened?"
TERMINAL = ("completed", "failed", "interrupted")


def _slow(delay_s: float) -> Any:
    model = PipelineModel()

    def respond(request: Any) -> StubReply:
        reply = model(request)
        reply.delay_s = delay_s
        return reply

    return respond


def _rows(store: Store) -> list[dict[str, Any]]:
    with store.engine.connect() as conn:
        return [dict(r) for r in conn.execute(text(
            "SELECT s.id, s.status, s.rerun_of, s.created_at, s.updated_at, "
            "(SELECT min(e.created_at) FROM session_event e WHERE e.session_id = s.id) AS started "
            "FROM diagnosis_session s")).mappings()]


def _live_workers(store: Store) -> int:
    with store.engine.connect() as conn:
        return int(conn.execute(text("SELECT count(*) FROM procrastinate_workers")).scalar_one())


def run(admin_url: str, stub: StubOpenAI, *, sessions: int, workers: int, concurrency: int,
        kill: bool) -> dict[str, Any]:
    schema = f"bench_{uuid.uuid4().hex[:8]}"
    admin = create_engine(admin_url)
    with admin.begin() as conn:
        conn.execute(text(f"CREATE SCHEMA {schema}"))
    tmp = Path(tempfile.mkdtemp(prefix="bench-jobs-"))
    config = tmp / "workbench.yaml"
    jobs = {"heartbeat_s": 1.0, "lease_s": 10.0, "concurrency": concurrency, "llm_concurrency": concurrency}
    config.write_text(yaml.safe_dump({"jobs": jobs, "openai": {"max_retries": 0}}), encoding="utf-8")
    env = dict(os.environ, DATABASE_URL=f"{admin_url}?options=-csearch_path%3D{schema}",
               WORKBENCH_CONFIG=str(config), WORKBENCH_PROVIDER="openai", OPENAI_BASE_URL=stub.base_url,
               OPENAI_MODEL="stub-model", WORKBENCH_HOME=str(tmp / "home"))
    settings = load_settings(str(config), database_url=env["DATABASE_URL"], provider="openai",
                             openai={"base_url": stub.base_url, "model": "stub-model"})
    store = Store(settings.db_url)
    procs: list[subprocess.Popen[bytes]] = []
    try:
        queue = make_queue(settings, store)  # applies procrastinate's schema
        procs = [subprocess.Popen([sys.executable, "-m", "pipeline", "worker", "--concurrency", str(concurrency)],
                                  env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                 for _ in range(workers)]
        # Queue wait is measured from a warm start: every worker is up and listening.
        while _live_workers(store) < workers:
            time.sleep(0.5)
        started = time.monotonic()
        ids = [submit_session(queue, settings, store, QUESTION, world_id="gateway-timeout") for _ in range(sessions)]
        queue.close()
        killed = False
        while True:
            rows = _rows(store)
            done = [r for r in rows if r["status"] in TERMINAL]
            if kill and not killed and len(done) >= sessions // 3:
                procs[0].send_signal(signal.SIGKILL)
                procs[0].wait()
                killed = True
            reruns = {r["rerun_of"] for r in rows if r["rerun_of"]}
            open_rows = [r for r in rows if r["status"] not in TERMINAL]
            if not open_rows and all(r["id"] in reruns for r in rows if r["status"] == "interrupted"):
                break
            time.sleep(1.0)
        elapsed = time.monotonic() - started
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                p.wait(timeout=60)
        store.engine.dispose()
    by_id = {r["id"]: r for r in rows}
    child = {r["rerun_of"]: r["id"] for r in rows if r["rerun_of"]}

    def outcome(sid: str) -> str:
        while by_id[sid]["status"] != "completed" and sid in child:
            sid = child[sid]
        return by_id[sid]["status"]

    waits = sorted((r["started"] - r["created_at"]).total_seconds() for r in rows if r["started"])
    with admin.begin() as conn:
        conn.execute(text(f"DROP SCHEMA {schema} CASCADE"))
    admin.dispose()
    return {
        "workers": workers, "sessions": sessions, "elapsed_s": round(elapsed, 1),
        "throughput_per_min": round(60 * sessions / elapsed, 1),
        "queue_wait_p50_s": round(statistics.median(waits), 1),
        "queue_wait_p95_s": round(waits[int(0.95 * (len(waits) - 1))], 1),
        "interrupted": sum(r["status"] == "interrupted" for r in rows),
        "reruns": len(child), "lost": sum(outcome(sid) != "completed" for sid in ids),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--delay", type=float, default=2.0, help="seconds the stub takes per LLM call")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--concurrency", type=int, default=8, help="jobs at once per worker")
    parser.add_argument("--kill", action="store_true", help="also: 2 workers, one killed a third of the way")
    args = parser.parse_args()
    admin_url = os.environ.get("DATABASE_URL_TEST")
    if not admin_url:
        sys.exit("set DATABASE_URL_TEST to a PostgreSQL URL (bash .ci/pg.sh prints one)")
    with StubOpenAI(responder=_slow(args.delay)) as stub:
        runs = [dict(kind="plain", **run(admin_url, stub, sessions=args.sessions, workers=w,
                                         concurrency=args.concurrency, kill=False)) for w in args.workers]
        if args.kill:
            runs.append(dict(kind="one killed", **run(admin_url, stub, sessions=args.sessions, workers=2,
                                                      concurrency=args.concurrency, kill=True)))
    cols = ["kind", "workers", "sessions", "elapsed_s", "throughput_per_min", "queue_wait_p50_s",
            "queue_wait_p95_s", "interrupted", "reruns", "lost"]
    print(" | ".join(cols))
    for r in runs:
        print(" | ".join(str(r[c]) for c in cols))


if __name__ == "__main__":
    main()
