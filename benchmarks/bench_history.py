"""History at scale: the columnar replay against the per-session replay.

    python benchmarks/bench_history.py --sessions 1000000 --naive 10000 [--trouble 0.05] [--db URL] [--e2e]
    python benchmarks/bench_history.py --sessions 100000 --trouble 0.5 --rejudge [--db URL]
    python benchmarks/bench_history.py --db URL --measure e2e|rejudge|columnar|listing [--naive N]
    python benchmarks/bench_history.py --db URL --grow 10   (the seeded store, ten times over)
    python benchmarks/bench_history.py --db URL --measure settle   (outcomes at ask as the shipped rules judge them)
    python benchmarks/bench_history.py --db URL --measure unsettle (every verdict at ask rotated: the worst case)
    python benchmarks/bench_history.py --db URL --measure rejudge --page   (with the Rules page's loaded columns)

Builds the store itself: a few offline sessions are run for real, `VARIANTS` perturbed copies of
them (scores, entity misses, invented words, hunks, a speculative phrase, a fabricated id, digest
quotes) get their gate rows from the real derivation, and the rest are bulk-inserted clones of
the variants (own ids, own tool invocations, the variant's gate rows). Reported: seeding time,
cold load, warm threshold replay (several thresholds), peak RSS, `workbench replay --rules DIR`
end to end in a fresh process, and the per-session replay on the first `--naive` sessions.
With --rejudge: an apply and a rollback each followed by the re-judge of every stored session
(pipeline/runs/rulebook.py), phase by phase, with the Sessions page read from another process meanwhile.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import func, select, text

from pipeline.store import Store, tally
from pipeline.store.schema import DiagnosisSession, ToolInvocationRow

VARIANTS = 200
_PLACEHOLDER = 7_770_000_000  # invocation ids in a variant's JSON text, replaced per clone
_FEATURE_KEYS = ("key", "sources", "entities", "hunks", "before", "caps", "invented", "other_match", "quote")
_SOURCE_KEYS = ("score", "covered", "gap", "invocation_id")
_EV_KEYS = ("executor_structured_output", "executor_output_parse_status", "claim_checks", "gatekeeper_result",
            "question_coverage")


def templates(store: Store, session_ids: list[str] | None = None) -> list[dict[str, Any]]:
    """Completed sessions (all, or these in this order) as clone templates, trimmed to what a replay reads."""
    out = []
    query = select(DiagnosisSession.__table__).where(DiagnosisSession.status == "completed")
    if session_ids is not None:
        query = query.where(DiagnosisSession.id.in_(session_ids))
    with store.engine.connect() as conn:
        for row in conn.execute(query.order_by(DiagnosisSession.created_at, DiagnosisSession.id)).mappings():
            invs = conn.execute(select(ToolInvocationRow.id, ToolInvocationRow.tool_name,
                                       ToolInvocationRow.model_tool_name, ToolInvocationRow.status)
                                .where(ToolInvocationRow.session_id == row["id"]).order_by(ToolInvocationRow.id)).all()
            ev = (row["self_evaluation"] or {}).get("verifier_evaluation", {})
            out.append({"id": row["id"], "question": row["question"], "shape": row["shape"], "verdict": row["verdict"],
                        "digests": row["evidence_digests"], "features": _trim(row["gatekeeper_features"] or {}),
                        "ev": {k: ev.get(k) for k in _EV_KEYS}, "invocations": [tuple(i) for i in invs]})
    if session_ids is not None:
        order = {sid: n for n, sid in enumerate(session_ids)}
        out.sort(key=lambda t: order[t["id"]])
    return out


def _trim(features: dict[str, Any]) -> dict[str, Any]:
    """Features without the spans and offsets only the Trace page draws."""
    out = {}
    for target, entry in features.items():
        kept = {k: v for k, v in entry.items() if k in _FEATURE_KEYS or target == "$"}
        if "sources" in kept:
            kept["sources"] = {n: {k: v for k, v in s.items() if k in _SOURCE_KEYS} for n, s in kept["sources"].items()}
        out[target] = kept
    return out


def mutate(t: dict[str, Any], rng: random.Random, trouble_rate: float) -> dict[str, Any]:
    """A plausible other session: scores jitter; `trouble_rate` of them have one kind of trouble
    (every rule kind is exercised) while the others stay clean, as most of a real history does."""
    t = copy.deepcopy(t)
    trouble = rng.choice(["score", "entity", "invented", "hunk", "before", "quote", "phrase", "fabricated"]) \
        if rng.random() < trouble_rate else None
    bindings = [(k, e) for k, e in t["features"].items() if k.startswith("claims[")]
    picked = rng.choice(bindings)[0] if bindings else None
    for target, entry in t["features"].items():
        if target.startswith("digests[") and entry.get("quote", {}).get("score") is not None:
            low = 0.3 if trouble == "quote" else 0.85
            entry["quote"]["score"] = rng.choice([1.0, round(rng.uniform(low, 1.0), 4)])
        if not target.startswith("claims["):
            continue
        out = entry["sources"].get("output")
        if out and out.get("score") is not None and rng.random() < 0.5:
            out["score"] = round(rng.uniform(0.2 if trouble == "score" else 0.75, 1.0), 4)
            out["covered"] = 1.0 if rng.random() < 0.4 else round(rng.uniform(0.3, 1.0), 4)
            out["gap"] = rng.randrange(0, 600)
        if target != picked:
            continue
        if trouble == "entity":
            entry["entities"] = [*entry.get("entities", []), {
                "kind": rng.choice(["service", "error_code", "number", "percentage"]), "token": "svc-9",
                "value": "svc-9", "elsewhere": rng.random() < 0.5, "nearby": ["svc-1"], "score": round(rng.random(), 4)}]
        elif trouble == "invented":
            entry["invented"] = [rng.choice(["zzqx", "abc", "假造数据", "虚"])]
        elif trouble == "hunk":
            entry["hunks"] = [*entry.get("hunks", []), {"ex": "up", "added": "not up", "out": "down", "gap": "5",
                                                         "score": round(rng.uniform(0.4, 1.0), 4)}]
        elif trouble == "before":
            entry["before"] = ["no "]
    structured = t["ev"]["executor_structured_output"]
    claims = structured.get("claims", []) if isinstance(structured, dict) else []
    if claims and trouble == "phrase":
        claims[0]["claim_text"] = "可能 " + str(claims[0].get("claim_text", ""))
    if claims and claims[0].get("evidence_bindings") and trouble == "fabricated":
        claims[0]["evidence_bindings"][0]["source_invocation_ids"] = [999_999_999]
    t["ev"]["gatekeeper_result"] = {**(t["ev"]["gatekeeper_result"] or {}),
                                    "status": rng.choice(["pass", "pass", "warn", "fail"])}
    t["verdict"] = rng.choice(["PASS", "PASS", "LOW_CONFID", "REJECT"])
    return t


def _text_template(t: dict[str, Any]) -> tuple[str, str, str]:
    """(audit, digests, features) JSON with each invocation id as a placeholder number."""
    ids = {inv[0]: _PLACEHOLDER + k for k, inv in enumerate(t["invocations"])}

    def swap(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: ([ids.get(i, i) for i in v] if k == "source_invocation_ids" and isinstance(v, list)
                         else swap(v)) for k, v in value.items()}
        if isinstance(value, list):
            return [swap(v) for v in value]
        return value

    ev = json.dumps({"verifier_evaluation": swap(t["ev"])}, ensure_ascii=False)
    return ev, json.dumps(swap(t["digests"]), ensure_ascii=False), json.dumps(t["features"], ensure_ascii=False)


def insert_sessions(store: Store, items: list[dict[str, Any]], n: int, prefix: str,
                    gate_rows: list[GateRows] | None = None,
                    audit: bool = True) -> list[str]:
    """n sessions cycling through `items`, in bulk, each with its own invocations (and gate rows).
    audit=False leaves out the JSON audit record (~15 KB a session): a store that measures the
    arrays, the listing and the charts at 1 M sessions without writing 15 GB first."""
    pg = store.engine.dialect.name == "postgresql"
    j = (lambda p: f"CAST(:{p} AS JSON)") if pg else (lambda p: f":{p}")
    session_sql = text(
        "INSERT INTO diagnosis_session (id, created_at, updated_at, question, shape, provider, model, status, stage, "
        "verdict, gatekeeper_status, failed_rules, services, rounds, evidence_digests, self_evaluation, "
        "gatekeeper_features, timings_ms, prompt_tokens, completion_tokens, cost_usd) VALUES (:id, :at, :at, :q, "
        f":shape, 'offline', 'bench', 'completed', 'done', :verdict, :gate, {j('failed')}, '', 1, {j('digests')}, "
        f"{j('ev')}, {j('features')}, {j('timings')}, 0, 0, 0)")
    inv_sql = text("INSERT INTO tool_invocation (id, session_id, round, tool_name, model_tool_name, arguments, status, "
                   "output, output_preview, output_bytes, latency_ms, stored_cut_bytes, created_at) VALUES (:id, :sid, "
                   f"1, :tool, :model, {j('args')}, :status, '', '', 0, 1.0, 0, :at)")
    texts = [_text_template(t) for t in items]
    ids: list[str] = []
    # A bulk write holds the queue tally's per-row triggers and regroups it once: on
    # PostgreSQL a transaction that moves a few tally rows per session makes each row a
    # chain of versions every later move walks (quadratic; 438 s for this seed at 100,000).
    with store.engine.begin() as conn, tally.bulk_write(conn):
        next_inv = (conn.execute(select(func.max(ToolInvocationRow.id))).scalar() or 0) + 1
        next_seq = (conn.execute(text("SELECT max(seq) FROM gate_session")).scalar() or 0) + 1
        start = datetime(2026, 1, 1, tzinfo=UTC)
        step = 20_000
        for lo in range(0, n, step):
            sessions, invs, gate_s, gate_b, gate_c = [], [], [], [], []
            for i in range(lo, min(n, lo + step)):
                k = i % len(items)
                t, (ev, digests, features) = items[k], texts[k] if audit else ("{}", "[]", "{}")
                sid = f"{prefix}-{i:08d}"
                for m, inv in enumerate(t["invocations"] if audit else ()):  # nothing cites them without JSON
                    ev = ev.replace(str(_PLACEHOLDER + m), str(next_inv))
                    digests = digests.replace(str(_PLACEHOLDER + m), str(next_inv))
                    invs.append({"id": next_inv, "sid": sid, "tool": inv[1], "model": inv[2], "args": "{}",
                                 "status": inv[3], "at": start + timedelta(seconds=i)})
                    next_inv += 1
                gate = t["ev"]["gatekeeper_result"] or {}
                sessions.append({"id": sid, "at": start + timedelta(seconds=i), "q": t["question"], "shape": t["shape"],
                                 "verdict": t["verdict"], "gate": gate.get("status"),
                                 "failed": json.dumps(gate.get("failed_rules", [])), "digests": digests, "ev": ev,
                                 "features": features, "timings": "{}"})
                ids.append(sid)
                if gate_rows is not None:
                    values, bindings, claims = gate_rows[k]
                    gate_s.append({**values, "seq": next_seq, "session_id": sid,
                                   "clean_unbacked": json.dumps(values["clean_unbacked"])})
                    gate_cols = list(gate_s[0])
                    gate_b.extend({"seq": next_seq, **dict(zip(_BINDING_COLS, b, strict=True))} for b in bindings)
                    gate_c.extend({"seq": next_seq, **dict(zip(_CLAIM_COLS, c, strict=True))} for c in claims)
                    next_seq += 1
            conn.execute(session_sql, sessions)
            if invs:
                conn.execute(inv_sql, invs)
            if gate_rows is not None:
                conn.execute(text(f"INSERT INTO gate_session ({', '.join(gate_cols)}) VALUES ("
                                  + ", ".join(j(c) if c == "clean_unbacked" else f":{c}" for c in gate_cols) + ")"),
                             gate_s)
                for table, rows in (("gate_binding", gate_b), ("gate_claim", gate_c)):
                    if rows:
                        conn.execute(text(f"INSERT INTO {table} ({', '.join(rows[0])}) VALUES "
                                          f"({', '.join(':' + c for c in rows[0])})"), rows)
        if pg:  # explicit ids leave the sequences behind
            for table, column in (("tool_invocation", "id"), ("gate_session", "seq")):
                conn.execute(text(f"SELECT setval(pg_get_serial_sequence('{table}', '{column}'), "
                                  f"(SELECT max({column}) FROM {table}))"))
    return ids


_BINDING_COLS = ("claim", "binding", "out_score", "out_covered", "out_split", "quote_score", "summary_score",
                 "invented", "entity_score", "entity_low", "entity_points", "entity_fail", "text_flag")
_CLAIM_COLS = ("claim", "untouched", "hit", "entity_hit", "direct_core", "text_hit")


GateRows = tuple[dict[str, Any], list[tuple[Any, ...]], list[tuple[Any, ...]]]


def gate_rows_of(store: Store, session_ids: list[str]) -> list[GateRows]:
    """Each session's gate_session values, gate_binding rows and gate_claim rows, to clone."""
    out = []
    with store.engine.connect() as conn:
        for sid in session_ids:
            s = conn.execute(text("SELECT * FROM gate_session WHERE session_id = :s"), {"s": sid}).mappings().one()
            b = conn.execute(text(f"SELECT {', '.join(_BINDING_COLS)} FROM gate_binding WHERE seq = :q "
                                  "ORDER BY claim, binding"), {"q": s["seq"]}).all()
            c = conn.execute(text(f"SELECT {', '.join(_CLAIM_COLS)} FROM gate_claim WHERE seq = :q ORDER BY claim"),
                             {"q": s["seq"]}).all()
            values = {k: v for k, v in s.items() if k not in ("seq", "session_id")}
            if isinstance(values["clean_unbacked"], str):
                values["clean_unbacked"] = json.loads(values["clean_unbacked"])
            out.append((values, [tuple(r) for r in b], [tuple(r) for r in c]))
    return out


def seed_variants(store: Store, count: int, rng: random.Random, trouble: float = 0.35) -> list[str]:
    """`count` perturbed copies of the store's completed sessions, with gate rows derived for real."""
    from pipeline.core.config import load_settings
    from pipeline.replay.history import backfill
    from pipeline.runs.rulebook import rules_in_force

    base = templates(store)
    ids = insert_sessions(store, [mutate(base[i % len(base)], rng, trouble) for i in range(count)], count, "v")
    backfill(store, rules_in_force(load_settings(), store)[0])
    return ids


def _rss_mb() -> float:
    """This process's peak RSS (VmHWM: unlike ru_maxrss, not inherited from the parent across exec)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _timed(fn: Any) -> tuple[Any, float]:
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def seed(url: str, sessions: int, trouble: float, audit: bool = True) -> None:
    from pipeline.core.config import load_settings
    from pipeline.runs.session import run_session

    store = Store(url)
    settings = load_settings()
    for q in ("payment API times out, what's going on?", "支付接口最近出现超时，帮我排查", "order-service CPU is high",
              "redis latency spikes on cart-service"):
        run_session(q, settings=settings, store=store)
    variants, took = _timed(lambda: seed_variants(store, VARIANTS, random.Random(13), trouble))
    print(f"variants: {len(variants)} derived in {took:.1f} s (trouble rate {trouble})")
    clones = max(0, sessions - VARIANTS - 4)
    _, took = _timed(lambda: insert_sessions(store, templates(store, variants), clones, "h",
                                             gate_rows_of(store, variants), audit))
    print(f"seeded {clones} clones in {took:.1f} s")


def grow(url: str, times: int) -> None:
    """The store's sessions and their gate rows copied by the database (INSERT ... SELECT) until
    there are `times` as many, each copy with ids of its own. The Python seeding builds every row
    in this process: a million sessions took over an hour on the loaded 2-core machine, where
    copies made by the database take minutes."""
    store = Store(url)
    pg = store.engine.dialect.name == "postgresql"
    # The copy numbers 1 .. times - 1: PostgreSQL's generate_series, a recursive CTE on SQLite.
    series = (f"generate_series(1, {times - 1}) AS g(k)" if pg else "g")
    lead = "" if pg else f"WITH RECURSIVE g(k) AS (SELECT 1 UNION ALL SELECT k + 1 FROM g WHERE k < {times - 1}) "
    start = time.perf_counter()
    with store.engine.begin() as conn, tally.bulk_write(conn):
        top = conn.execute(text("SELECT max(seq) FROM gate_session")).scalar() or 0
        copied = {"id": "id || '-' || g.k", "session_id": "session_id || '-' || g.k", "seq": f"seq + g.k * {top}"}
        for table in ("diagnosis_session", "gate_session", "gate_binding", "gate_claim"):
            columns = (list(conn.execute(text("SELECT column_name FROM information_schema.columns WHERE "
                                              "table_name = :t ORDER BY ordinal_position"), {"t": table}).scalars())
                       if pg else [r[1] for r in conn.execute(text(f"PRAGMA table_info({table})"))])
            listed = ", ".join(f'"{c}"' for c in columns)
            chosen = ", ".join(copied.get(c, f'{table}."{c}"') for c in columns)
            conn.execute(text(f"{lead}INSERT INTO {table} ({listed}) SELECT {chosen} FROM {table} CROSS JOIN {series}"))
        if pg:
            conn.execute(text("SELECT setval(pg_get_serial_sequence('gate_session', 'seq'), "
                              "(SELECT max(seq) FROM gate_session))"))
    # As autovacuum leaves a table that has settled: statistics, and the visibility map that lets
    # the (status, id) index answer the replay's session list without the heap.
    with store.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("VACUUM ANALYZE" if pg else "ANALYZE"))
        sessions = conn.execute(select(func.count()).select_from(DiagnosisSession)).scalar_one()
    print(f"grown to {sessions} sessions in {time.perf_counter() - start:.1f} s")


def settle(url: str) -> None:
    """The realistic case: every session's outcome at ask set to what the shipped rules judge
    (verdict, gatekeeper status and failed rules on the session, the same and the failed and
    warned rules on its gate row), where the seed drew them at random. Then the re-judge under
    the version in force (the shipped rules, after --measure rejudge) holds no row in force, and
    a threshold move changes what it changes to the shipped rules' verdicts: a few percent."""
    import numpy as np

    from pipeline.core.config import load_settings
    from pipeline.replay.columns import rule_bits
    from pipeline.replay.history import GateColumnCache
    from pipeline.runs import rulebook

    store = Store(url)
    settings = load_settings()
    rules = rulebook.rules_of(settings, store, 0)
    start = time.perf_counter()
    result = GateColumnCache(store, kept=0).replay(rules)
    names, ids, o = result.names.reverse(), result.arrays.session_ids, result.outcomes
    listed = {int(b): rule_bits(rules, int(b)) for b in np.unique(result.new_failed | result.new_warned)}
    failed = {int(b): rule_bits(rules, int(b)) for b in np.unique(result.new_failed)}
    rows = []
    for i in np.flatnonzero(result.clean | result.judged).tolist():
        status, verdict = names[result.new_status[i]], names[result.new_verdict[i]]
        both = ",".join(sorted(listed[int(result.new_failed[i] | result.new_warned[i])]))
        if (status, verdict, both) != (names[o["status"][i]], names[o["old_v"][i]], names[o["rules"][i]]):
            rows.append((ids[i], verdict, status, json.dumps(failed[int(result.new_failed[i])]), both))
    for r in result.exact.values():
        rows.append((r.session_id, r.projected_verdict, r.new_status, json.dumps(list(r.result.failed_rules)),
                     ",".join(sorted({*r.result.failed_rules, *r.result.warnings}))))
    judged = time.perf_counter() - start
    pg = store.engine.dialect.name == "postgresql"
    with store.engine.begin() as conn, tally.bulk_write(conn):
        conn.exec_driver_sql("CREATE TEMP TABLE settled (id text PRIMARY KEY, verdict text, status text, "
                             "failed text, listed text)")
        if pg:
            with conn.connection.driver_connection.cursor() as cursor, cursor.copy("COPY settled FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
        else:
            conn.exec_driver_sql("INSERT INTO settled VALUES (?, ?, ?, ?, ?)", rows)
        as_json = "CAST(settled.failed AS JSON)" if pg else "settled.failed"
        conn.exec_driver_sql(f"UPDATE diagnosis_session SET verdict = settled.verdict, gatekeeper_status = "
                             f"settled.status, failed_rules = {as_json} FROM settled WHERE diagnosis_session.id = settled.id")
        conn.exec_driver_sql("UPDATE gate_session SET old_verdict = settled.verdict, old_status = settled.status, "
                             "old_rules = settled.listed FROM settled WHERE gate_session.session_id = settled.id")
        conn.exec_driver_sql("DROP TABLE settled")
    if pg:
        with store.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text("VACUUM ANALYZE"))
    took = time.perf_counter() - start
    # Under the shipped rules now in force nothing differs from its outcome at ask: no row left.
    done = rulebook.rejudge(settings, store)
    print(f"settled {len(rows)} of {result.total} sessions to the shipped rules' outcome in {took:.0f} s "
          f"(judged in {judged:.0f} s); re-judged under version {done.version}: {done.differing} differ")


def measure_columnar(url: str) -> None:
    """In its own process, so the peak RSS is the replay's alone."""
    from pipeline.core.config import load_settings
    from pipeline.replay.history import GateColumnCache
    from pipeline.runs.rulebook import rules_in_force

    store = Store(url)
    rules = rules_in_force(load_settings(), store)[0]
    history = GateColumnCache(store)
    arrays, cold = _timed(lambda: history.refresh(rules))
    first, took = _timed(lambda: history.replay(rules))
    print(f"cold load: {len(arrays.session_ids)} sessions, {len(arrays.b_score)} bindings in {cold:.1f} s; "
          f"first replay {took:.1f} s (loads the exact path's {len(first.exact)} sessions)")
    sim, ent = "evidence.excerpt_similarity", "evidence.excerpt_entities"
    candidates = [(f"passThreshold={p}", rules.with_params(sim, passThreshold=p, warnThreshold=0.3))
                  for p in (0.45, 0.5, 0.55, 0.5)]
    # Thresholds that cross many stored scores: those sessions take the exact path.
    candidates += [("passThreshold=0.8 warnThreshold=0.6", rules.with_params(sim, passThreshold=0.8, warnThreshold=0.6)),
                   ("minLocatedScore=0.9", rules.with_params(ent, minLocatedScore=0.9)),
                   ("passThreshold=0.8 warnThreshold=0.6 again", rules.with_params(sim, passThreshold=0.8,
                                                                                   warnThreshold=0.6))]
    for label, candidate in candidates:
        result, took = _timed(lambda c=candidate: history.replay(c))
        print(f"warm replay {label}: {took:.3f} s, settled by arrays {result.total - len(result.exact)}, "
              f"exact path {len(result.exact)}; {result.summary()}")
    # On SQLite the tables are read by three child processes (pipeline/replay/arrow.py), each
    # with its own memory: the largest child's peak, counted three times, bounds theirs.
    child = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"columnar peak rss: {_rss_mb():.0f} MB" + (f"; Arrow reader children <= 3 x {child:.0f} MB"
                                                        if url.startswith("sqlite") else ""))


def measure_tiled(url: str, times: int) -> None:
    """The array half at `times` x the stored history: the arrays of the store repeated, the
    clearing test and the outcome counts timed on them (the exact path is not included)."""
    import dataclasses

    import numpy as np

    from pipeline.core.config import load_settings
    from pipeline.replay.columns import maybe_flagged
    from pipeline.replay.history import load_arrays
    from pipeline.runs.rulebook import rules_in_force

    store = Store(url)
    rules = rules_in_force(load_settings(), store)[0]
    arrays, outcomes, _ = load_arrays(store)
    n = len(arrays.session_ids)
    tiled = dataclasses.replace(
        arrays, session_ids=arrays.session_ids * times,
        b_session=np.concatenate([arrays.b_session + k * n for k in range(times)]),
        **{f.name: np.tile(getattr(arrays, f.name), times) for f in dataclasses.fields(arrays)
           if f.name not in ("session_ids", "keys", "b_session")})
    codes = {k: np.tile(v, times) for k, v in outcomes.items()}
    del arrays, outcomes
    for p in (0.45, 0.5, 0.55):
        candidate = rules.with_params("evidence.excerpt_similarity", passThreshold=p, warnThreshold=0.3)

        def run(c: Any = candidate) -> int:
            clean = ~maybe_flagged(tiled, c)
            np.unique(codes["status"][clean], return_counts=True)
            np.unique(codes["old_v"][clean].astype(np.int64) * 65536 + codes["verdict"][clean], return_counts=True)
            return int(clean.sum())

        cleared, took = _timed(run)
        print(f"arrays x{times}: {len(tiled.session_ids)} sessions, {len(tiled.b_score)} bindings, passThreshold={p}:"
              f" {took:.3f} s, {cleared} cleared")
    print(f"tiled peak rss: {_rss_mb():.0f} MB")


def measure_naive(url: str, count: int) -> tuple[float, float]:
    from pipeline.core.config import load_settings
    from pipeline.replay.inputs import SessionInputCache
    from pipeline.replay.per_session import replay, summarize
    from pipeline.runs.rulebook import rules_in_force

    store = Store(url)
    rules = rules_in_force(load_settings(), store)[0].with_params("evidence.excerpt_similarity", passThreshold=0.55,
                                                                   warnThreshold=0.3)
    ids = store.session_ids()[:count]
    cpu = time.process_time()
    inputs, load = _timed(lambda: SessionInputCache(store).inputs(ids))
    rows, took = _timed(lambda: replay(inputs, rules))
    cpu = time.process_time() - cpu
    print(f"naive at {len(ids)}: load {load:.1f} s, replay {took:.2f} s ({cpu:.1f} s of CPU), peak rss {_rss_mb():.0f} MB; "
          f"{summarize(rows)}")
    return load + took, cpu


def measure_e2e(url: str, naive: int) -> None:
    """`workbench replay --rules DIR` (passThreshold 0.5 -> 0.55) in a fresh process over the
    store, then the per-session baseline on its first `naive` sessions in this same run, scaled
    to the store's size: the ratio of the two."""
    from pipeline.core.config import load_settings

    store = Store(url)
    with store.engine.connect() as conn:
        sessions = conn.execute(select(func.count()).select_from(DiagnosisSession)).scalar_one()
    work = Path(tempfile.mkdtemp(prefix="bench-history-rules-"))
    rules_dir = work / "rules"
    shutil.copytree(load_settings().rules_dir, rules_dir)
    meta = rules_dir / "metadata.yaml"
    meta.write_text(meta.read_text(encoding="utf-8").replace("passThreshold: 0.5", "passThreshold: 0.55"),
                    encoding="utf-8")
    print(f"replay on {store.engine.dialect.name}, {sessions} sessions, load average {os.getloadavg()[0]:.2f}")
    from pipeline.replay.column_files import files_root

    files = files_root(store)
    # Before the column files (every table from the store), then with none yet (read from the
    # store and written), then with them current: the same replay each time.
    for label, env in (("from the store (before the column files)", {"WORKBENCH_COLUMNS_DIR": "off"}),
                       ("column files written", {}), ("column files current", {})):
        if label == "column files written" and files is not None:
            shutil.rmtree(files, ignore_errors=True)
        t = time.perf_counter()
        proc = subprocess.run(["/usr/bin/time", "-f", "%M %U %S", sys.executable, "-m", "pipeline", "replay",
                               "--rules", str(rules_dir)], capture_output=True, text=True, check=False,
                              env={**os.environ, "DATABASE_URL": url, **env})
        took = time.perf_counter() - t
        # CPU seconds (its Arrow reader processes included) as well as wall time: on a shared
        # machine the wall time is mostly the wait for a core.
        peak, user, system = proc.stderr.split()[-3:]
        print(f"  workbench replay --rules DIR, {label}: {took:.1f} s end to end, "
              f"{float(user) + float(system):.1f} s of CPU, peak {int(peak) / 1024:.0f} MB: "
              f"{proc.stdout.strip()[:120] or proc.stderr[-500:]}")
    if files is not None:
        size = sum(f.stat().st_size for f in files.glob("*.parquet"))
        print(f"  column files: {size / 2**20:.0f} MB in {files}")
    shutil.rmtree(work, ignore_errors=True)
    if naive:
        wall, cpu = (seconds * sessions / naive for seconds in measure_naive(url, naive))
        print(f"  per-session baseline scaled to {sessions}: {wall:.0f} s, {cpu:.0f} s of CPU; {wall / took:.0f}x the "
              f"wall time, {cpu / (float(user) + float(system)):.0f}x the CPU; load average {os.getloadavg()[0]:.2f}")


def _first_open_before_0007(store: Store, q: Any) -> int:
    """The Sessions page's first open as it read the store before migration 0007 (the naive
    baseline): PASS sessions with findings out of every audit record (FindingsIndex's first
    refresh), the store's count, a count and three chart queries, then two queue pages that each
    count the queue again."""
    import dataclasses

    from sqlalchemy import Integer, Text, cast, or_

    from pipeline.runs.review_queue import EVAL_LABEL
    from pipeline.store import SessionFilter
    from pipeline.store.schema import ReviewRow

    s = DiagnosisSession
    ev = ("verifier_evaluation",)
    found = set()
    with store.engine.connect() as conn:
        for sid, verdict, gate, guard, filtered in conn.execute(select(
                s.id, s.verdict, s.gatekeeper_status, s.self_evaluation[(*ev, "composer_guard")],
                s.self_evaluation[(*ev, "composer_filtered")])) if q.needs_person else ():
            if verdict == "PASS" and gate == "pass" and (
                    bool(isinstance(guard, dict) and guard.get("used_template")) or bool(filtered)):
                found.add(sid)
    store.list_sessions(SessionFilter(), limit=1)
    query = store.filtered_query(dataclasses.replace(q.base, reviewed=None))
    if q.needs_person:
        query = query.where(or_(s.verdict.in_(("LOW_CONFID", "REJECT")), s.status.in_(("failed", "interrupted")),
                                s.gatekeeper_status.in_(("warn", "fail")), s.id.in_(found)))
    if not q.include_eval:
        query = query.where(s.id.not_in(select(ReviewRow.session_id).where(ReviewRow.label == EVAL_LABEL)))
    if q.reviewed is not None:
        people = select(ReviewRow.session_id).where(ReviewRow.claim_id.is_(None), ReviewRow.label != EVAL_LABEL)
        query = query.where(s.id.in_(people) if q.reviewed else s.id.not_in(people))
    sub = query.subquery()
    day, bucket = func.date(sub.c.created_at), cast(sub.c.groundedness * 10, Integer)
    with store.engine.connect() as conn:
        total = conn.execute(select(func.count()).select_from(sub)).scalar_one()
        conn.execute(select(day, sub.c.verdict, func.count()).group_by(day, sub.c.verdict).order_by(day)).all()
        conn.execute(select(cast(sub.c.failed_rules, Text), func.count()).where(sub.c.failed_rules.is_not(None))
                     .group_by(cast(sub.c.failed_rules, Text))).all()
        conn.execute(select(bucket, func.count()).where(sub.c.groundedness.is_not(None)).group_by(bucket)).all()
        for limit in (1, 50):
            conn.execute(select(func.count()).select_from(sub)).scalar_one()
            conn.execute(select(sub.c.id, sub.c.question).order_by(sub.c.created_at.desc()).limit(limit)).all()
    return int(total)


def measure_listing(url: str, runs: int = 3) -> None:
    """The Sessions page's first open, as pages/sessions.py reads the store: the queue's count and
    charts off the tally, one page of rows (the store's count only when the queue is
    empty). Median of `runs`, against the grouped scan the page made before migration 0019 and
    the naive baseline (the reads before migration 0007, run once), in the same run and on the
    same store: the latter reads every audit record (minutes at a million sessions with their
    JSON). And the tally's regrouping, the re-judge's cost for it."""
    import statistics
    from dataclasses import replace

    from pipeline.runs.review_queue import QueueFilter, queue_rows, queue_stats
    from pipeline.store import SessionFilter
    from pipeline.store.schema import VerdictInForce

    store = Store(url)

    def first_open(q: QueueFilter) -> int:
        stats = queue_stats(store, q)
        if not stats.total:
            store.list_sessions(SessionFilter(), limit=1)
        queue_rows(store, q, limit=50)
        return stats.total

    with store.engine.connect() as conn:
        moved = conn.execute(select(func.count()).select_from(VerdictInForce)).scalar_one()
    print(f"sessions page on {store.engine.dialect.name}, {moved} sessions with a verdict in force, "
          f"load average {os.getloadavg()[0]:.2f}")
    for name, q in (("queue", QueueFilter()), ("all sessions", QueueFilter(needs_person=False, reviewed=None))):
        stats_s = [_timed(lambda q=q: queue_stats(store, q))[1] for _ in range(runs)]
        rows_s = [_timed(lambda q=q: queue_rows(store, q, limit=50))[1] for _ in range(runs)]
        now = [_timed(lambda q=q: first_open(q)) for _ in range(runs)]
        # Before migration 0019, in the same run: the grouped scan of the listing index that moves
        # the sessions in force, which a day range the tally has no column for still takes.
        scanned = replace(q, base=SessionFilter(since=datetime(1970, 1, 1, tzinfo=UTC)))
        scan_s = [_timed(lambda q=scanned: first_open(q)) for _ in range(runs)]
        counted, naive = _timed(lambda q=q: _first_open_before_0007(store, q))
        assert {n for n, _ in now} == {n for n, _ in scan_s}, "the tally and the scan count differently"
        # The reads before 0007 knew no verdict in force: they count the same only without one.
        assert moved or {n for n, _ in now} == {counted}, "the page and the reads before 0007 count differently"
        took, scan = statistics.median(t for _, t in now), statistics.median(t for _, t in scan_s)
        print(f"  {name} ({counted} sessions): first open {took:.2f} s, median of {runs} (count and charts "
              f"{statistics.median(stats_s):.2f} s, first page {statistics.median(rows_s):.3f} s); "
              f"before 0019 (the scan) {scan:.2f} s, {scan / took:.1f}x; before 0007 {naive:.2f} s")
    def regroup() -> None:
        with store.engine.begin() as conn, tally.bulk_write(conn):
            pass

    _, took = _timed(regroup)
    print(f"  the tally regrouped as a re-judge does at its end: {took:.2f} s; peak rss {_rss_mb():.0f} MB")


def measure_pages(url: str, seconds: float) -> None:
    """The Sessions page's reads (count and charts, first page of rows) over and over for
    `seconds`, in its own process, while another re-judges: the slowest and the median."""
    import statistics

    from pipeline.runs.review_queue import QueueFilter, queue_rows, queue_stats

    store = Store(url)
    took: list[float] = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        took.append(_timed(lambda: (queue_stats(store, QueueFilter()), queue_rows(store, QueueFilter(), limit=50)))[1])
    print(f"    pages meanwhile: {len(took)} first opens of Sessions, median {statistics.median(took):.2f} s, "
          f"slowest {max(took):.2f} s")


def unsettle(url: str) -> None:
    """The worst case, made from any seeded store: every session's verdict at ask rotated
    (PASS -> REJECT -> LOW_CONFID -> PASS, on the session and its gate row), so a re-judge under
    rules that judge as the ones at ask writes a row for every session, and no row in force left."""
    store = Store(url)
    start = time.perf_counter()
    rotate = "CASE {c} WHEN 'PASS' THEN 'REJECT' WHEN 'REJECT' THEN 'LOW_CONFID' ELSE 'PASS' END"
    with store.engine.begin() as conn, tally.bulk_write(conn):  # regrouped once (insert_sessions says why)
        conn.exec_driver_sql(f"UPDATE diagnosis_session SET verdict = {rotate.format(c='verdict')} WHERE verdict IS NOT NULL")
        conn.exec_driver_sql(f"UPDATE gate_session SET old_verdict = {rotate.format(c='old_verdict')}")
        conn.exec_driver_sql("DELETE FROM verdict_in_force")
    if store.engine.dialect.name == "postgresql":
        with store.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text("VACUUM ANALYZE"))
    print(f"every verdict at ask rotated, rows in force emptied, in {time.perf_counter() - start:.0f} s")


def measure_rejudge(url: str, page: bool = False, pages: bool = True) -> None:
    """`workbench rules apply` then `rollback` as the engine runs them: a threshold version put in
    force and every stored session judged again under it (rulebook.rejudge), with the Sessions
    page read from another process meanwhile unless not `pages` (that reader keeps a core busy:
    on 2 cores it is the machine's load, not a quiet machine's). `page`: as the Rules page runs
    it, with the columns it loaded for its previews before the apply (the load timed apart)."""
    from pipeline.core.config import load_settings
    from pipeline.frontends.views import rules_yaml
    from pipeline.replay.history import GateColumnCache
    from pipeline.runs import rulebook

    store = Store(url)
    settings = load_settings()
    with store.engine.connect() as conn:
        sessions = conn.execute(select(func.count()).select_from(DiagnosisSession)).scalar_one()
    print(f"re-judge on {store.engine.dialect.name}, {sessions} sessions, load average {os.getloadavg()[0]:.2f}")
    with contextlib.suppress(rulebook.RulesRefused):  # from the shipped rules' text, whatever ran before
        rulebook.rollback(settings, store, 0, author="bench")
    history = GateColumnCache(store) if page else None
    if history is not None:
        _, took = _timed(lambda: history.refresh(rulebook.rules_in_force(settings, store)[0]))
        print(f"  the page's columns, loaded before the apply (not counted below): {took:.1f} s")
    in_force = rulebook.text_in_force(settings, store)
    index, meta = rules_yaml.set_rule_field(*in_force.texts, "evidence.excerpt_similarity", "params.passThreshold", 0.55)
    steps = [("apply passThreshold 0.55", lambda: rulebook.apply_rules(
                  settings, store, (index, meta), author="bench", comment="", based_on=store.rules_version())),
             ("rollback to version 0", lambda: rulebook.rollback(settings, store, 0, author="bench"))]
    for label, put_in_force in steps:
        put_in_force()
        phases: list[tuple[str, float]] = []
        start = time.perf_counter()
        reader = subprocess.Popen([sys.executable, __file__, "--measure", "pages", "--db", url, "--seconds", "20"],
                                  stdout=subprocess.PIPE, text=True) if pages else None
        def heard(phase: str, _done: int, _total: int, phases: list[tuple[str, float]] = phases,
                  start: float = start) -> None:
            phases.append((phase, time.perf_counter() - start))

        done, took = _timed(lambda: rulebook.rejudge(settings, store, on_progress=heard, history=history))
        marks = ", ".join(f"{a} {t1 - t0:.1f} s" for (a, t0), (_, t1) in zip(phases, phases[1:], strict=False)
                          if a != phases[-1][0] and t1 > t0)
        print(f"  {label}: re-judged {done.sessions} sessions in {took:.1f} s ({marks}); {done.differing} differ "
              f"from their verdict at ask and have a row; peak rss {_rss_mb():.0f} MB")
        if reader is not None:
            print(reader.communicate()[0].strip())


def _child(*args: str, env: dict[str, str] | None = None) -> None:
    proc = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True, check=False, env=env)
    print(proc.stdout.strip() or proc.stderr.strip()[-2000:])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=100_000)
    ap.add_argument("--naive", type=int, default=10_000, help="sessions for the per-session baseline (0: skip)")
    ap.add_argument("--trouble", type=float, default=0.05, help="share of variants with something to find")
    ap.add_argument("--db", help="database URL (default: a SQLite file in a temp dir)")
    ap.add_argument("--e2e", action="store_true", help="also time `workbench replay --rules DIR` in a fresh process")
    ap.add_argument("--no-audit", action="store_true",
                    help="clones without their JSON audit record: arrays, listing and charts only")
    ap.add_argument("--rejudge", action="store_true",
                    help="time the re-judge after an apply and a rollback instead of the replay and listing")
    ap.add_argument("--seconds", type=float, default=20.0, help=argparse.SUPPRESS)
    ap.add_argument("--no-pages", action="store_true",
                    help="with --measure rejudge: no Sessions page read meanwhile (it keeps a core busy)")
    ap.add_argument("--page", action="store_true",
                    help="with --measure rejudge: with the columns the Rules page loaded before the apply")
    ap.add_argument("--measure", choices=["columnar", "naive", "listing", "rejudge", "pages", "e2e", "settle", "unsettle"],
                    help="with --db of a seeded store: measure this only")
    ap.add_argument("--grow", type=int, default=0,
                    help="with --db of a seeded store: copy its sessions until there are this many times as many")
    ap.add_argument("--tile", type=int, default=0,
                    help="with --db of a seeded store: time the array half at this many times its size")
    args = ap.parse_args()
    if args.measure == "columnar":
        measure_columnar(args.db)
        return
    if args.tile:
        measure_tiled(args.db, args.tile)
        return
    if args.grow:
        grow(args.db, args.grow)
        return
    if args.measure == "listing":
        measure_listing(args.db)
        return
    if args.measure == "naive":
        measure_naive(args.db, args.naive)
        return
    if args.measure == "rejudge":
        measure_rejudge(args.db, page=args.page, pages=not args.no_pages)
        return
    if args.measure == "settle":
        settle(args.db)
        return
    if args.measure == "unsettle":
        unsettle(args.db)
        return
    if args.measure == "pages":
        measure_pages(args.db, args.seconds)
        return
    if args.measure == "e2e":
        measure_e2e(args.db, args.naive)
        return

    work = Path(tempfile.mkdtemp(prefix="bench-history-"))
    url = args.db or f"sqlite:///{work / 'history.db'}"
    seed(url, args.sessions, args.trouble, audit=not args.no_audit)
    if args.rejudge:
        _child("--measure", "rejudge", "--db", url)
    else:
        _child("--measure", "columnar", "--db", url)
        _child("--measure", "listing", "--db", url)
    if args.e2e:
        _child("--measure", "e2e", "--db", url, "--naive", str(args.naive))
    elif args.naive:
        _child("--measure", "naive", "--db", url, "--naive", str(args.naive))
    if not args.db:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
