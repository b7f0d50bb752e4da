"""Evidence backends: runbook search latency and log-file scan throughput.

1. lookup_knowledge over 1,000 generated runbooks (Chinese and English), p50/p95 per query,
   against a naive baseline that scores every document by raw term counts on each query.
2. LogFiles keyword scan over ~200 MB of generated log files, in MB/s, against `grep -F -i -c`
   on the same files and a naive Python loop (decode, lower, test every line).

    python benchmarks/bench_backends.py [--mb 200] [--docs 1000]
"""

from __future__ import annotations

import argparse
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pipeline.core.config import BackendSettings  # noqa: E402
from pipeline.tools.knowledge import KnowledgeBase, tokenize  # noqa: E402
from pipeline.tools.logfiles import LogFiles  # noqa: E402
from pipeline.tools.queries import KnowledgeQuery, LogQuery, NoData  # noqa: E402

SERVICES = ["payment-service", "order-service", "api-gateway", "user-service", "inventory-service", "notification-service"]
ZH_TERMS = ["CPU使用率", "线程数", "连接池", "数据库", "超时", "重启", "内存泄漏", "磁盘", "告警", "延迟", "限流", "扩容",
            "回滚", "发布", "证书", "网关", "慢查询", "死锁", "缓存击穿", "消息积压", "垃圾回收", "负载均衡"]
EN_TERMS = ["timeout", "connection", "pool", "exhausted", "latency", "restart", "rollback", "deploy", "certificate",
            "memory", "leak", "disk", "full", "queue", "backlog", "gc", "pause", "throttle", "scale", "replica",
            "upstream", "502", "503", "hikaripool", "redis", "kafka", "lag", "oom", "killed", "dns"]


def _sentence(rng: random.Random) -> str:
    if rng.random() < 0.5:
        return "，".join(rng.sample(ZH_TERMS, 3)) + f"，检查 {rng.choice(SERVICES)} 的{rng.choice(ZH_TERMS)}。"
    return " ".join(rng.sample(EN_TERMS, 6)) + f" on {rng.choice(SERVICES)}."


def make_runbooks(root: Path, n: int, rng: random.Random) -> None:
    for i in range(n):
        sections = []
        for s in range(rng.randint(3, 6)):
            paras = "\n\n".join(" ".join(_sentence(rng) for _ in range(rng.randint(2, 5))) for _ in range(rng.randint(1, 3)))
            sections.append(f"## {rng.choice(ZH_TERMS)} {rng.choice(EN_TERMS)} {s}\n\n{paras}")
        (root / f"runbook-{i:04d}.md").write_text(f"# Runbook {i}: {rng.choice(ZH_TERMS)}\n\n" + "\n\n".join(sections), encoding="utf-8")


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def bench_knowledge(n_docs: int, n_queries: int, rng: random.Random) -> list[tuple[str, str, str, str]]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        make_runbooks(root, n_docs, rng)
        t0 = time.perf_counter()
        kb = KnowledgeBase.from_folder(root)
        build_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        KnowledgeBase.from_folder(root)
        cached_s = time.perf_counter() - t0
        queries = [
            f"{rng.choice(SERVICES)} {rng.choice(ZH_TERMS)} {rng.choice(EN_TERMS)} {rng.choice(ZH_TERMS)}怎么处理"
            for _ in range(n_queries)
        ]

        indexed: list[float] = []
        for q in queries:
            t0 = time.perf_counter()
            try:
                kb.lookup_knowledge(KnowledgeQuery(query=q, top_k=3))
            except NoData:
                pass
            indexed.append(time.perf_counter() - t0)

        # Naive: documents held in memory (lower-cased once), every query counts every term in every doc.
        docs = [p.read_text(encoding="utf-8").lower() for p in sorted(root.glob("*.md"))]
        naive: list[float] = []
        for q in queries:
            t0 = time.perf_counter()
            terms = set(tokenize(q))
            scored = [(sum(d.count(t) for t in terms), i) for i, d in enumerate(docs)]
            sorted(scored, reverse=True)[:3]
            naive.append(time.perf_counter() - t0)

    ms = 1000.0
    return [
        ("runbooks / blocks", f"{n_docs} / {len(kb.blocks)}", "", ""),
        ("index build (s), cached reopen (ms)", f"{build_s:.2f}", f"{cached_s * ms:.1f}", ""),
        ("lookup p50 (ms)", f"{pct(indexed, 50) * ms:.2f}", f"{pct(naive, 50) * ms:.2f}", f"{pct(naive, 50) / pct(indexed, 50):.1f}x"),
        ("lookup p95 (ms)", f"{pct(indexed, 95) * ms:.2f}", f"{pct(naive, 95) * ms:.2f}", f"{pct(naive, 95) / pct(indexed, 95):.1f}x"),
    ]


def make_logs(root: Path, total_mb: int, rng: random.Random) -> int:
    levels = ["INFO"] * 8 + ["WARN", "ERROR"]
    words = EN_TERMS + ["request", "handled", "ok", "user", "cache", "hit", "miss", "GET", "POST", "/api/pay"]
    per_file = total_mb * 1024 * 1024 // len(SERVICES)
    for service in SERVICES:
        # A pool of distinct lines, written in shuffled repetitions: realistic variety at disk speed.
        pool = []
        for i in range(20000):
            msg = " ".join(rng.choices(words, k=rng.randint(6, 14)))
            if i % 997 == 0:
                msg += " NeedleCode=E_PAYMENT_LOCK"
            pool.append(msg)
        with (root / f"{service}.log").open("w", encoding="utf-8") as fh:
            written, second = 0, 0
            while written < per_file:
                rng.shuffle(pool)
                chunk = []
                for msg in pool:
                    second += 1
                    h, rem = divmod(second // 20, 3600)
                    chunk.append(f"2026-11-28T{h % 24:02d}:{rem // 60:02d}:{rem % 60:02d}Z {rng.choice(levels)} {msg}\n")
                text = "".join(chunk)
                fh.write(text)
                written += len(text)
    return sum(p.stat().st_size for p in root.iterdir())


def bench_logs(total_mb: int, rng: random.Random) -> list[tuple[str, str, str, str]]:
    keyword = "needlecode=e_payment_lock"
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        size = make_logs(root, total_mb, rng)
        files = sorted(str(p) for p in root.iterdir())
        mb = size / 1024 / 1024
        backend = LogFiles(BackendSettings(kind="files", path=tmp, limit=500))

        # One untimed pass each so every contender reads from the page cache.
        subprocess.run(["cat", *files], stdout=subprocess.DEVNULL, check=True)
        t0 = time.perf_counter()
        out = backend.query_logs(LogQuery(keywords=[keyword], limit=500))
        ours_s = time.perf_counter() - t0

        rows = [("log files / MB", f"{len(files)} / {mb:.0f}", "", ""), ("matching lines", str(out["total"]), "", "")]
        grep = shutil.which("grep")
        if grep:
            t0 = time.perf_counter()
            res = subprocess.run([grep, "-F", "-i", "-c", keyword, *files], capture_output=True, text=True, check=False)
            grep_s = time.perf_counter() - t0
            grep_count = sum(int(line.rsplit(":", 1)[1]) for line in res.stdout.splitlines())
            rows.append(("grep -F -i -c matches", str(grep_count), "", ""))
            rows.append(("keyword scan MB/s (vs grep -F -i)", f"{mb / ours_s:.0f}", f"{mb / grep_s:.0f}", f"{grep_s / ours_s:.2f}x"))

        t0 = time.perf_counter()
        naive_hits = 0
        for path in files:
            with open(path, "rb") as fh:
                for raw in fh:
                    if keyword in raw.decode("utf-8", errors="replace").lower():
                        naive_hits += 1
        naive_s = time.perf_counter() - t0
        rows.append(("keyword scan MB/s (vs naive Python loop)", f"{mb / ours_s:.0f}", f"{mb / naive_s:.0f}", f"{naive_s / ours_s:.2f}x"))

        t0 = time.perf_counter()
        out = backend.query_logs(LogQuery(level="ERROR", limit=500))
        lvl_s = time.perf_counter() - t0
        rows.append((f"level>=ERROR scan MB/s ({out['total']} lines)", f"{mb / lvl_s:.0f}", "", ""))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=int, default=200)
    parser.add_argument("--docs", type=int, default=1000)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    rng = random.Random(20261128)
    tokenize("预热 jieba")  # the dictionary load is a one-off, not a query cost

    rows = bench_knowledge(args.docs, args.queries, rng) + bench_logs(args.mb, rng)
    header = ("measure", "ours", "baseline", "ratio")
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(4)]
    for r in [header, tuple("-" * w for w in widths), *rows]:
        print("  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)))


if __name__ == "__main__":
    main()
