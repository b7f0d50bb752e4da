"""Offline session end to end, persistence included, over every bundled incident question.

Reports p50 / p95 per session (target p50 <= 100 ms) for the workbench path (SQLite in WAL
mode with NORMAL sync, rules parsed once per version, world files and runbook index cached)
against a naive baseline in the same run: SQLite's default rollback journal with a full sync on
every stage commit, the rules YAML parsed per session and every cache dropped, as a
straightforward implementation would do. Run: python benchmarks/bench_session.py [--rounds N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pipeline.core.config import load_settings  # noqa: E402
from pipeline.runs.session import run_session  # noqa: E402
from pipeline.store import Store  # noqa: E402
from pipeline.tools.incidents import load_worlds  # noqa: E402


def _drop_caches() -> None:
    import gc

    from pipeline.runs import rulebook
    from pipeline.text import primitives
    from pipeline.tools import bundled, incidents, knowledge

    rulebook.parsed_rules.cache_clear()
    bundled._logs.cache_clear()
    bundled._alerts.cache_clear()
    incidents.load_worlds.cache_clear()
    primitives.extract_entities.cache_clear()
    primitives.keywords.cache_clear()
    for name in dir(knowledge):
        obj = getattr(knowledge, name)
        if hasattr(obj, "cache_clear"):
            obj.cache_clear()
    gc.collect()


def _naive_store(path: Path) -> Store:
    from pipeline.store import engine

    real = engine._sqlite_pragmas
    engine._sqlite_pragmas = lambda conn, rec: conn.execute("PRAGMA synchronous=FULL")
    try:
        return Store(f"sqlite:///{path}")
    finally:
        engine._sqlite_pragmas = real


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as home:
        settings = load_settings(home=home)
        store = Store(settings.db_url)
        naive_store = _naive_store(Path(home) / "naive.db")
        questions = [q for w in load_worlds(settings.incidents_dir) for q in (*w.questions_zh, *w.questions_en)]
        run_session(questions[0], settings=settings, store=store)  # import + jieba dictionary load
        results: dict[str, list[float]] = {"workbench": [], "naive": []}
        for _ in range(args.rounds):
            for q in questions:
                t = time.perf_counter()
                run_session(q, settings=settings, store=store)
                results["workbench"].append((time.perf_counter() - t) * 1000)
            for q in questions:
                _drop_caches()
                t = time.perf_counter()
                run_session(q, settings=settings, store=naive_store)
                results["naive"].append((time.perf_counter() - t) * 1000)
    print(f"{len(questions)} questions x {args.rounds} rounds, SQLite store, offline provider, split shape")
    print(f"{'path':<14} {'p50 ms':>8} {'p95 ms':>8} {'mean ms':>8}")
    for name, values in results.items():
        print(f"{name:<14} {statistics.median(values):8.1f} {_pct(values, 0.95):8.1f} {statistics.mean(values):8.1f}")
    ours, naive = statistics.median(results["workbench"]), statistics.median(results["naive"])
    print(f"naive / workbench p50 ratio: {naive / ours:.1f}x; target p50 <= 100 ms: {'met' if ours <= 100 else 'NOT met'}")


if __name__ == "__main__":
    main()
