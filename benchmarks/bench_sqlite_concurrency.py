"""Parallel asks on one SQLite file against the same asks in sequence, in the same run.

N `workbench ask` processes (the offline provider, bundled questions) share one fresh workbench
home, so one SQLite file: first one after another, then all at once. The ratio parallel wall
time / sequential wall time says what sharing the file costs: on 2 cores the CPU alone bounds
the parallel run near the sequential one, so a ratio far above 1 is lock waiting. Goal: <= 1.5.

    python benchmarks/bench_sqlite_concurrency.py [--asks 8] [--repeat 1]
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
QUESTIONS = [
    ("cpu-saturation", "payment API times out since 10:00, what's going on?"),
    ("db-pool-exhaustion", "Users can't place order: create order fails with 500s since about 08:15, what is happening?"),
    ("gateway-timeout", "Order 123 payment failed with ERR_TIMEOUT from the gateway, what happened?"),
    ("jvm-oom", "Stock lookups have been intermittently failing since about 13:20, why?"),
    ("redis-latency", "The cart page is very slow and add to cart times out since 19:30, why?"),
    ("bad-deploy", "Checkout submission returns HTTP 500 since about 16:20, what's wrong?"),
    ("cpu-saturation", "支付接口从10点左右开始大量超时，帮我排查一下原因"),
    ("db-pool-exhaustion", "下单接口从八点多开始大量报错，订单列表也打不开，帮我排查"),
]


def _ask(home: Path, world: str, question: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "WORKBENCH_HOME": str(home), "PYTHONPATH": str(ROOT),
           "WORKBENCH_CONFIG": str(home / "none.yaml")}
    env.pop("DATABASE_URL", None)
    return subprocess.Popen([sys.executable, "-m", "pipeline", "ask", "--world", world, question], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _finish(proc: subprocess.Popen[bytes]) -> None:
    _, err = proc.communicate()
    if proc.returncode != 0:
        raise SystemExit(f"an ask failed: {err.decode(errors='replace')[-500:]}")


def run(asks: int) -> tuple[float, float, dict[str, int]]:
    """(sequential seconds, parallel seconds, session statuses) for `asks` asks on fresh homes."""
    plan = [QUESTIONS[i % len(QUESTIONS)] for i in range(asks)]
    with tempfile.TemporaryDirectory() as tmp:
        seq_home, par_home = Path(tmp) / "seq", Path(tmp) / "par"
        for home in (seq_home, par_home):  # the schema made before the clock starts, as in use
            _finish(_ask(home, *QUESTIONS[0]))
        started = time.perf_counter()
        for world, question in plan:
            _finish(_ask(seq_home, world, question))
        sequential = time.perf_counter() - started
        started = time.perf_counter()
        for proc in [_ask(par_home, world, question) for world, question in plan]:
            _finish(proc)
        parallel = time.perf_counter() - started
        with sqlite3.connect(par_home / "workbench.db") as db:
            statuses = dict(db.execute("SELECT status, count(*) FROM diagnosis_session GROUP BY status").fetchall())
    return sequential, parallel, statuses


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--asks", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    print(f"{'asks':>5} {'sequential s':>13} {'parallel s':>11} {'ratio':>6}  sessions (parallel home)")
    for _ in range(args.repeat):
        sequential, parallel, statuses = run(args.asks)
        print(f"{args.asks:5d} {sequential:13.1f} {parallel:11.1f} {parallel / sequential:6.2f}  {statuses}")


if __name__ == "__main__":
    main()
