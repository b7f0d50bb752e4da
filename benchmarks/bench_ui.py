"""Workbench pages in headless Chromium against big stores, each beside a naive baseline.

1. Trace page of one session with 100 claims citing 5 tool outputs of 1 MB each (target <= 3 s).
   Baseline: locating every excerpt in its full output with rapidfuzz partial_ratio at render
   time, the way a page would without the cached gatekeeper features.
2. Sessions page over 10,000 stored sessions (target <= 2 s).
   Baseline: loading every row and counting the charts in Python.
3. Rules preview over the same 10,000 sessions (target <= 1 s).
   Baseline: rebuilding the replay inputs from the store for each preview instead of caching them.

4. --demo-pages: first open of every page on the demo store (target <= 1.5 s median each) in a new
   browser profile (--ways fresh,tab adds a new tab of a browser that opened the workbench before),
   with a second process busy on one core meanwhile (a Python busy loop pinned to CPU 0; --idle
   leaves it out), so a 2-core machine has one core for the server and the browser.

Run: python benchmarks/bench_ui.py [--trace-only | --demo-pages [--repeat N] [--ways fresh,tab] [--idle]]
(needs /usr/bin/chromium; uses a temp WORKBENCH_HOME)
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from playwright.sync_api import sync_playwright
from rapidfuzz import fuzz
from sqlalchemy import insert, select

from pipeline.core.config import load_settings
from pipeline.core.contracts import ExecutorOutput
from pipeline.frontends.views import highlight, outputs
from pipeline.frontends.views import trace as trace_view
from pipeline.gatekeeper import load_rules
from pipeline.gatekeeper.features import compute_features
from pipeline.replay.inputs import replay_inputs
from pipeline.replay.per_session import replay
from pipeline.runs import review_queue
from pipeline.runs.session import run_session
from pipeline.store import Store
from pipeline.store.record import read_session
from pipeline.store.schema import DiagnosisSession, ToolInvocationRow
from pipeline.tools.incidents import load_worlds

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SERVICES = ["payment-service", "order-service", "api-gateway", "inventory-service", "cart-service"]


# --- data ----------------------------------------------------------------------------------------


def _big_output(rng: random.Random, n_bytes: int, tag: int) -> tuple[str, list[str]]:
    logs, size = [], 0
    while size < n_bytes:
        svc = rng.choice(SERVICES)
        msg = (f"req {rng.randrange(10**6)} {svc} upstream timeout after {rng.randrange(100, 5000)}ms "
               f"order_id={rng.randrange(10**5)} shard={tag}")
        logs.append({"timestamp": f"2026-11-28T10:{rng.randrange(60):02d}:{rng.randrange(60):02d}Z",
                     "service": svc, "level": "WARN", "message": msg})
        size += len(msg) + 90
    logs.append({"timestamp": "2026-11-28T10:59:59Z", "service": "api-gateway", "level": "WARN",
                 "message": "<script>alert(1)</script> user-agent probe"})
    return json.dumps({"logs": logs, "total": len(logs)}, ensure_ascii=False), [r["message"] for r in logs]


def build_trace_session(store: Store) -> str:
    """One session: 5 invocations of ~1 MB, 100 claims quoting them (some quotes altered)."""
    rng = random.Random(7)
    sid = store.create_session(question="bench: 100 claims over 5 MB of logs", world=None, shape="single",
                               provider="offline", model="bench")
    invs, messages = {}, {}
    for k in range(5):
        output, msgs = _big_output(rng, 1_000_000, k)
        inv = store.add_invocation(session_id=sid, round=1, tool_name="query_logs", model_tool_name="queryLogs",
                                   arguments={"service": SERVICES[k]}, status="ok", output=output, error=None,
                                   latency_ms=3.0)
        invs[inv.id], messages[inv.id] = inv, msgs
    claims, checks = [], []
    ids = list(invs)
    for i in range(100):
        inv_id = ids[i % 5]
        excerpt = rng.choice(messages[inv_id][:-1])
        if i % 4 == 3:  # a swapped service: fuzzy match plus an entity miss
            excerpt = excerpt.replace("timeout", "timed out", 1).replace(excerpt.split()[2], "billing-service", 1)
        claims.append({"claim_id": f"claim-{i + 1}", "claim_type": "observation", "support_level": "direct",
                       "claim_text": f"Observed: {excerpt}",
                       "evidence_bindings": [{"tool_name": "query_logs", "source_invocation_ids": [inv_id],
                                              "evidence_excerpt": excerpt}]})
        checks.append({"claim_id": f"claim-{i + 1}",
                       "verification": "direct_observation" if i % 4 != 3 else "external_unknown", "detail": ""})
    structured = {"answer_version": "executor_evidence_v2", "claims": claims, "hypotheses": [],
                  "recommended_actions": [], "missing_info": []}
    features = compute_features(invs, ExecutorOutput.read(structured), None)
    errors = [{"rule_id": "evidence.excerpt_entities", "target": f"claims[{i}].evidence_bindings[0]",
               "message": "excerpt says billing-service, the cited output does not hold it"}
              for i in range(3, 100, 4)]
    evaluation = {
        "verdict": "REJECT", "groundedness_score": 0.75, "claim_checks": checks, "rationale": "bench",
        "executor_output_parse_status": {"status": "valid"}, "executor_structured_output": structured,
        "gatekeeper_result": {"status": "fail", "failed_rules": ["evidence.excerpt_entities"], "warnings": [],
                              "errors": errors},
        "verifier_verdict": "PASS", "verdict_guard_reasons": ["gatekeeper rule failed"],
        "composer_input": {"original_query": "bench", "verdict": "REJECT",
                           "allowed_claims": [{"claim_id": c["claim_id"], "claim_type": "observation",
                                               "claim_text": c["claim_text"]} for c in claims[:3]]},
        "composer_filtered": [], "composer_guard": {"status": "pass", "violations": []},
    }
    store.update_session(sid, status="completed", stage="done", verdict="REJECT", gatekeeper_status="fail",
                         failed_rules=["evidence.excerpt_entities"], groundedness=0.75, final_answer="bench answer",
                         executor_raw_output=json.dumps(structured), gatekeeper_features=features,
                         self_evaluation={"verifier_evaluation": evaluation, "rounds": []})
    return sid


def _remap(value: Any, id_map: dict[int, int]) -> Any:
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if k == "source_invocation_ids" and isinstance(v, list):
                out[k] = [id_map.get(i, i) for i in v]
            elif k == "invocation_id" and isinstance(v, int):
                out[k] = id_map.get(v, v)
            else:
                out[k] = _remap(v, id_map)
        return out
    if isinstance(value, list):
        return [_remap(v, id_map) for v in value]
    return value


def build_history(store: Store, settings: Any, n: int) -> None:
    """n sessions cloned from real offline runs of every bundled question (each clone gets its own
    invocation rows, outputs left out: replay reads cached features, never an output)."""
    templates = []
    for world in load_worlds(settings.incidents_dir):
        for q in (*world.questions_en, *world.questions_zh):
            templates.append(run_session(q, settings=settings, store=store).session_id)
    rows = [store.get_session(s) for s in templates]
    metas = {s: store.invocation_meta(s) for s in templates}
    next_id = 1_000_000
    start = datetime(2026, 10, 1, tzinfo=UTC)
    sessions, invocations = [], []
    for i in range(n - len(templates)):
        row = rows[i % len(rows)]
        sid = f"s-bench{i:06d}"
        id_map = {}
        for m in metas[row["id"]]:
            id_map[m["id"]] = next_id
            invocations.append({"id": next_id, "session_id": sid, "round": m["round"], "tool_name": m["tool_name"],
                                "model_tool_name": m["model_tool_name"], "arguments": m["arguments"],
                                "status": m["status"], "output": "", "output_preview": "", "output_bytes": 0,
                                "latency_ms": m["latency_ms"]})
            next_id += 1
        clone = {k: v for k, v in row.items() if k not in ("id", "created_at", "updated_at")}
        for key in ("audit", "gatekeeper_features", "evidence_digests"):
            clone[key] = _remap(row[key], id_map)
        clone.update(id=sid, created_at=start + timedelta(minutes=13 * i), updated_at=start + timedelta(minutes=13 * i),
                     groundedness=min(1.0, max(0.0, (row["groundedness"] or 0) - (i % 7) * 0.05)))
        sessions.append(clone)
    with store.engine.begin() as conn:
        for chunk in range(0, len(sessions), 1000):
            conn.execute(insert(DiagnosisSession), sessions[chunk:chunk + 1000])
        for chunk in range(0, len(invocations), 5000):
            conn.execute(insert(ToolInvocationRow), invocations[chunk:chunk + 5000])


# --- measuring -----------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(home: Path, root: Path = ROOT) -> tuple[subprocess.Popen, str]:
    """A workbench server on `root`'s pages and engine (another checkout for --compare)."""
    port = _free_port()
    env = {**os.environ, "WORKBENCH_HOME": str(home), "WORKBENCH_CONFIG": str(home / "none.yaml"),
           "PYTHONPATH": str(root)}
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
                             "--server.address", "127.0.0.1", "--server.headless", "true"],
                            cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    for _ in range(200):
        try:
            urllib.request.urlopen(base + "/_stcore/health", timeout=1)
            return proc, base
        except OSError:
            time.sleep(0.2)
    raise RuntimeError("streamlit did not start")


def _stop(proc: subprocess.Popen) -> None:
    """A loaded machine can take longer than a polite wait to stop a server: then it is killed."""
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _settle(pg) -> None:
    """The run indicator shows only after a moment: look twice, 250 ms apart."""
    for _ in range(2):
        pg.wait_for_function("() => !document.querySelector('[data-testid=stStatusWidget]')", timeout=120_000)
        pg.wait_for_timeout(250)


def _load(pg, url: str, ready: str) -> float:
    """Seconds from navigation to the page's last element drawn (the settle pause not counted)."""
    t = time.perf_counter()
    pg.goto(url)
    pg.wait_for_selector(ready, timeout=120_000)
    drawn = time.perf_counter() - t
    _settle(pg)
    return drawn


def _timed(fn: Any, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def trace_only(repeat: int) -> None:
    """Trace first open only, each time on a fresh server (an empty cache), the median reported:
    a quick before/after for the Trace page without seeding 10,000 sessions."""
    home = Path(tempfile.mkdtemp(prefix="wb-bench-"))
    os.environ["WORKBENCH_HOME"] = str(home)
    os.environ["WORKBENCH_CONFIG"] = str(home / "none.yaml")
    sid = build_trace_session(Store(load_settings().db_url))
    firsts, repeats, floors = [], [], []
    for _ in range(repeat):
        proc, base = _start(home)
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=CHROMIUM_ARGS)
                pg = browser.new_page(viewport={"width": 1440, "height": 1800})
                _load(pg, base + "/", "text=Ask a diagnosis question")  # server warm-up (imports, jieba)
                # The frontend's own load on a page with little on it: what no Trace change can cut.
                floors.append(_load(pg, base + "/", "text=Ask a diagnosis question"))
                firsts.append(_load(pg, f"{base}/trace?session={sid}", "text=Review this session"))
                repeats.append(_load(pg, f"{base}/trace?session={sid}", "text=Review this session"))
                browser.close()
        finally:
            _stop(proc)
    print(f"Trace first open, median of {repeat}: {statistics.median(firsts):.2f} s "
          f"({', '.join(f'{x:.2f}' for x in firsts)}); repeat open {statistics.median(repeats):.2f} s; "
          f"Ask page open {statistics.median(floors):.2f} s; "
          f"load average {os.getloadavg()[0]:.1f}")


def _busy_core() -> subprocess.Popen:
    """A second process busy on one core: a Python busy loop pinned to CPU 0."""
    proc = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(proc.pid, {0})
    return proc


def demo_pages(repeat: int, ways: tuple[str, ...] = ("fresh",), busy: bool = True) -> None:
    """First open of every page on the demo store (`workbench demo`), the median of `repeat` fresh
    servers per way of opening, after one warm-up open of Ask (server imports, and in a tab the
    frontend's chunks as a browser that opened the workbench before holds them):
    - tab: each page in a new tab of that browser (a new Streamlit session, the page's first run);
    - fresh: each page in a new browser profile (nothing cached, every chunk fetched and compiled).
    Drawn = the sidebar's language switch and the page's title are on screen and no script runs.
    With `busy`, a busy loop holds one core from before the first server starts to the end."""
    home, paths = _demo_pages()
    opens: dict[tuple[str, str], list[float]] = {(way, name): [] for way in ways for name in paths}
    loads: list[float] = []
    hog = _busy_core() if busy else None
    try:
        _open_pages(home, paths, ways, repeat, opens, loads)
    finally:
        if hog is not None:
            hog.kill()
            hog.wait()
    print(f"First open (s), target 1.5, {'one core busy' if busy else 'no extra load'}, "
          f"load average {min(loads):.1f}-{max(loads):.1f} on {os.cpu_count()} cores:")
    for way in ways:
        print(f"  {way}, median of {repeat}: "
              + ", ".join(f"{name} {statistics.median(opens[(way, name)]):.2f}" for name in paths))
        print("    all: " + "; ".join(f"{name} " + " ".join(f"{x:.2f}" for x in opens[(way, name)]) for name in paths))


def _open_pages(home: Path, paths: dict[str, str], ways: tuple[str, ...], repeat: int,
                opens: dict[tuple[str, str], list[float]], loads: list[float]) -> None:
    for rep in range(repeat):
        # Each repetition starts the round at another page: the first page after the warm-up
        # also meets what the server still does after its first run (the warm imports).
        names = list(paths)
        order = names[rep % len(names):] + names[:rep % len(names)]
        for way in ways:
            proc, base = _start(home)
            try:
                with sync_playwright() as p:
                    browser = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=CHROMIUM_ARGS)
                    context = browser.new_context(viewport={"width": 1280, "height": 1600})
                    warm = context.new_page()
                    _load(warm, base + "/", "[data-testid=stMain] h1")
                    warm.close()
                    for name in order:
                        path = paths[name]
                        pg = context.new_page() if way == "tab" else browser.new_page(viewport={"width": 1280, "height": 1600})
                        t = time.perf_counter()
                        pg.goto(base + path)
                        pg.locator("[data-testid=stSidebar]").get_by_text("Language", exact=True).wait_for(timeout=120_000)
                        pg.locator("[data-testid=stMain] h1").first.wait_for(timeout=120_000)
                        _settle(pg)
                        opens[(way, name)].append(time.perf_counter() - t - 0.5)  # the settle pauses not counted
                        pg.close()
                    browser.close()
            finally:
                _stop(proc)
            loads.append(os.getloadavg()[0])


def _cpu_by_process(cdp: Any) -> dict[int, float]:
    return {p["id"]: p["cpuTime"] for p in cdp.send("SystemInfo.getProcessInfo")["processInfo"]}


def _server_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def _probe_open(browser: Any, url: str, server_pid: int) -> dict[str, float]:
    """One first open in a new browser profile, with what it cost: elements drawn, DOM nodes,
    websocket messages and bytes from the server, bytes fetched, and CPU seconds spent by all of
    Chromium's processes and by the server (CPU time, unlike wall time, barely moves with the
    machine's load; Chromium's own TaskDuration is wall time of its tasks and does)."""
    system = browser.new_browser_cdp_session()
    context = browser.new_context(viewport={"width": 1280, "height": 1600})
    pg = context.new_page()
    cdp = context.new_cdp_session(pg)
    cdp.send("Network.enable")
    got = {"frames": 0.0, "ws_bytes": 0.0, "fetched": 0.0}

    def on_frame(payload: Any) -> None:
        got["frames"] += 1
        got["ws_bytes"] += len(payload)

    def on_finished(event: dict[str, Any]) -> None:
        got["fetched"] += event.get("encodedDataLength", 0)

    pg.on("websocket", lambda ws: ws.on("framereceived", on_frame))
    cdp.on("Network.loadingFinished", on_finished)
    cpu, server = _cpu_by_process(system), _server_cpu(server_pid)
    t = time.perf_counter()
    pg.goto(url, timeout=120_000)
    pg.locator("[data-testid=stSidebar]").get_by_text("Language", exact=True).wait_for(timeout=120_000)
    pg.locator("[data-testid=stMain] h1").first.wait_for(timeout=120_000)
    _settle(pg)
    got["open_s"] = time.perf_counter() - t - 0.5
    got["server_cpu"] = _server_cpu(server_pid) - server
    got["browser_cpu"] = sum(v - cpu.get(pid, 0.0) for pid, v in _cpu_by_process(system).items())
    got["elements"] = pg.locator("[data-testid=stElementContainer]").count()
    got["nodes"] = pg.evaluate("() => document.getElementsByTagName('*').length")
    context.close()
    system.detach()
    return got


PROBE_COLUMNS = (("open_s", "open s", "{:.2f}"), ("browser_cpu", "browser CPU s", "{:.2f}"),
                 ("server_cpu", "server CPU s", "{:.2f}"), ("elements", "elements", "{:.0f}"), ("nodes", "DOM nodes", "{:.0f}"),
                 ("frames", "ws msgs", "{:.0f}"), ("ws_bytes", "ws kB", "{:.0f}"), ("fetched", "fetched kB", "{:.0f}"))


def _demo_pages() -> tuple[Path, dict[str, str]]:
    """A fresh workbench home holding the demo set (this process's environment points at it), and
    each page's path, Trace on the demo's last session."""
    from pipeline.eval.demo import run_demo

    home = Path(tempfile.mkdtemp(prefix="wb-bench-"))
    os.environ["WORKBENCH_HOME"] = str(home)
    os.environ["WORKBENCH_CONFIG"] = str(home / "none.yaml")
    settings = load_settings()
    sid = run_demo(settings, Store(settings.db_url))[-1]
    return home, {"Ask": "/", "Sessions": "/sessions", "Trace": f"/trace?session={sid}", "Rules": "/rules", "Eval": "/eval"}


def probe(repeat: int, roots: list[Path], busy: bool) -> None:
    """--probe: per page and per checkout (this one, and each --compare DIR, interleaved on the same
    demo store), the median of `repeat` fresh-profile first opens with what the browser did."""
    home, paths = _demo_pages()
    got: dict[tuple[Path, str], list[dict[str, float]]] = {(root, name): [] for root in roots for name in paths}
    loads = []
    hog = _busy_core() if busy else None
    try:
        for rep in range(repeat):
            names = list(paths)
            order = names[rep % len(names):] + names[:rep % len(names)]
            for root in roots:
                proc, base = _start(home, root)
                try:
                    with sync_playwright() as p:
                        browser = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=CHROMIUM_ARGS)
                        _probe_open(browser, base + "/", proc.pid)  # warm-up: the server's imports
                        for name in order:
                            got[(root, name)].append(_probe_open(browser, base + paths[name], proc.pid))
                            print(f"  {root} {name}: " + ", ".join(f"{k} {v:.2f}" for k, v in got[(root, name)][-1].items()),
                                  flush=True)
                        browser.close()
                finally:
                    _stop(proc)
                loads.append(os.getloadavg()[0])
    finally:
        if hog is not None:
            hog.kill()
            hog.wait()
    print(f"First open in a fresh profile, median of {repeat}, {'one core busy' if busy else 'no extra load'}, "
          f"load average {min(loads):.1f}-{max(loads):.1f}:")
    print(f"{'checkout':<28} {'page':<9}" + "".join(f" {label:>14}" for _, label, _ in PROBE_COLUMNS))
    for root in roots:
        for name in paths:
            runs = got[(root, name)]
            cells = []
            for key, _, fmt in PROBE_COLUMNS:
                v = statistics.median(r[key] for r in runs)
                cells.append(fmt.format(v / 1000 if key in ("ws_bytes", "fetched") else v))
            print(f"{str(root)[-28:]:<28} {name:<9}" + "".join(f" {c:>14}" for c in cells))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trace-only", action="store_true", help="measure only Trace first/repeat open")
    parser.add_argument("--repeat", type=int, default=3, help="fresh servers for --trace-only and --demo-pages (median reported)")
    parser.add_argument("--demo-pages", action="store_true", help="first open of every page on the demo store")
    parser.add_argument("--ways", default="fresh", help="--demo-pages: fresh (new profile), tab, or fresh,tab")
    parser.add_argument("--idle", action="store_true", help="--demo-pages without the busy-loop process")
    parser.add_argument("--probe", action="store_true",
                        help="first open of every page with elements, bytes and browser CPU time")
    parser.add_argument("--compare", action="append", default=[], type=Path, metavar="DIR",
                        help="--probe: also serve another checkout (e.g. `git worktree` of main), interleaved")
    args = parser.parse_args()
    if args.probe:
        probe(args.repeat, [ROOT, *args.compare], busy=not args.idle)
        return
    if args.demo_pages:
        demo_pages(args.repeat, tuple(args.ways.split(",")), busy=not args.idle)
        return
    if args.trace_only:
        trace_only(args.repeat)
        return
    n = int(os.environ.get("BENCH_SESSIONS", "10000"))
    home = Path(tempfile.mkdtemp(prefix="wb-bench-"))
    os.environ["WORKBENCH_HOME"] = str(home)
    os.environ["WORKBENCH_CONFIG"] = str(home / "none.yaml")
    settings = load_settings()
    store = Store(settings.db_url)
    t = time.perf_counter()
    trace_sid = build_trace_session(store)
    build_history(store, settings, n)
    print(f"built store: 1 session with 100 claims / 5 x 1 MB outputs and {n} sessions "
          f"in {time.perf_counter() - t:.1f} s ({home})")

    # Baselines, in-process.
    row = read_session(store, trace_sid)
    invs = {i.id: i for i in store.invocations(trace_sid)}

    def naive_trace() -> None:
        for claim in row.claims:
            b = claim.evidence_bindings[0]
            fuzz.partial_ratio_alignment(b.evidence_excerpt, invs[b.source_invocation_ids[0]].output)

    def cached_trace() -> None:
        decoded = {i: outputs.decoded_output(inv.output) for i, inv in invs.items()}
        for card in trace_view.claim_cards(row):
            for b in card.bindings:
                if b.invocation_id is not None:
                    highlight.highlight_window(decoded[b.invocation_id], b.spans,
                                           entity_tokens=highlight.nearby_tokens(b.entity_misses))

    def naive_sessions() -> None:
        # Every session row with all its columns, aggregated in Python.
        with store.engine.connect() as conn:
            rows = list(conn.execute(select(DiagnosisSession.__table__)).mappings())
        Counter((r["created_at"].date(), r["verdict"]) for r in rows)
        Counter(rule for r in rows for rule in r["failed_rules"] or [])
        rows.sort(key=lambda r: r["created_at"], reverse=True)

    # The page's default queue: needs a person, unreviewed, no eval runs.
    default = review_queue.QueueFilter()

    def sql_sessions() -> None:
        review_queue.queue_stats(store, default)
        review_queue.queue_rows(store, default, limit=50)

    rules = load_rules(settings.rules_dir).with_params("evidence.excerpt_similarity", passThreshold=0.9)
    t = time.perf_counter()
    inputs = replay_inputs(store)
    build_inputs = time.perf_counter() - t
    naive_preview = build_inputs + _timed(lambda: replay(inputs, rules), 1)
    cached_preview = _timed(lambda: replay(inputs, rules))

    # The pages, in Chromium.
    proc, base = _start(home)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=CHROMIUM_ARGS)
            pg = browser.new_page(viewport={"width": 1440, "height": 1800})
            _load(pg, base + "/", "text=Ask a diagnosis question")  # server warm-up (imports, jieba)
            trace_url = f"{base}/trace?session={trace_sid}"
            ready_trace = "text=Review this session"
            trace_cold = _load(pg, trace_url, ready_trace)
            trace_warm = min(_load(pg, trace_url, ready_trace) for _ in range(3))
            marks = pg.locator("mark.wb-match").count()
            sessions_url = base + "/sessions"
            ready_sessions = "text=sessions match"
            sessions_cold = _load(pg, sessions_url, ready_sessions)
            sessions_warm = min(_load(pg, sessions_url, ready_sessions) for _ in range(3))
            _load(pg, base + "/rules", "text=Preview impact on all stored sessions")
            # The first preview builds and caches the replay inputs of the whole history.
            t0 = time.perf_counter()
            pg.get_by_role("button", name="Preview impact on all stored sessions").click()
            pg.wait_for_selector("text=Sessions replayed", timeout=300_000)
            rules_cold = time.perf_counter() - t0
            _settle(pg)

            def click_preview() -> float:
                # A fresh browser session: no earlier result on the page, the server's cache kept.
                pg.reload()
                pg.wait_for_selector("text=Preview impact on all stored sessions", timeout=120_000)
                _settle(pg)
                t0 = time.perf_counter()
                pg.get_by_role("button", name="Preview impact on all stored sessions").click()
                pg.wait_for_selector("text=Sessions replayed", timeout=120_000)
                drawn = time.perf_counter() - t0
                _settle(pg)
                return drawn

            preview = min(click_preview() for _ in range(3))
            browser.close()
    finally:
        _stop(proc)

    naive_t, cached_t = _timed(naive_trace, 1), _timed(cached_trace)
    naive_s, sql_s = _timed(naive_sessions, 1), _timed(sql_sessions)
    print()
    print(f"{'measure':<58} {'seconds':>8} {'target':>7}")
    print(f"{'Trace page, 100 claims / 5 MB, first load (browser)':<58} {trace_cold:8.2f} {'3.0':>7}")
    print(f"{'Trace page, repeat load (browser)':<58} {trace_warm:8.2f} {'3.0':>7}   ({marks} highlights drawn)")
    print(f"{f'Sessions page, {n} sessions, first load (browser)':<58} {sessions_cold:8.2f} {'2.0':>7}")
    print(f"{'Sessions page, repeat load (browser)':<58} {sessions_warm:8.2f} {'2.0':>7}")
    print(f"{'Rules preview, first click: builds the history cache':<58} {rules_cold:8.2f} {'-':>7}")
    print(f"{f'Rules preview click, {n} sessions (browser)':<58} {preview:8.2f} {'1.0':>7}")
    print()
    print(f"{'engine work behind the page':<44} {'naive s':>8} {'ours s':>8} {'ratio':>7}")
    print(f"{'trace: locate 100 excerpts in 1 MB outputs':<44} {naive_t:8.3f} {cached_t:8.3f} {naive_t / cached_t:7.1f}x")
    print(f"{'sessions: charts + first page':<44} {naive_s:8.3f} {sql_s:8.3f} {naive_s / sql_s:7.1f}x")
    print(f"{'rules preview (naive rebuilds inputs)':<44} {naive_preview:8.3f} {cached_preview:8.3f} "
          f"{naive_preview / cached_preview:7.1f}x")


if __name__ == "__main__":
    main()
