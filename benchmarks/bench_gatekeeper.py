"""Gatekeeper benchmark: excerpt checks against the naive baseline, verdict accuracy, history replay.

    python benchmarks/bench_gatekeeper.py [--sessions 10000] [--seed 7] [--parts 12345]

1. Excerpt check per binding on synthetic log-JSON outputs of 1 KB .. 10 MB, against
   `rapidfuzz.fuzz.partial_ratio(excerpt, whole_output)` in the same run. An output is prepared
   (folded, indexed, its words listed) when a session stores it; "prepare" is that cost, "cold"
   the first binding checked against a freshly prepared output, "warm" the later ones.
2. Verdict accuracy on a labelled set: faithful excerpts (verbatim and reformatted) must pass,
   mutated ones (number / service / error code swapped, negation added, fabricated) must not.
   The baseline passes an excerpt when partial_ratio / 100 >= the same passThreshold.
3. N synthetic sessions (~10 bindings each): full gatekeeper run (outcomes persisted as JSON, as
   the store keeps them), then replays of all of them from the stored outcomes: the first one,
   then after threshold, word-list and switch edits, against re-running with the features cache.
4. A 10,000-character excerpt that matches nothing against a 1 MB output of long lines: the
   gatekeeper check plus the verifier payload's window search.
5. Quotes by reference on a 10 MB output: a binding citing the record it quotes
   (source_record_ids) against the same binding without the citation, cold (the output stored
   but never read: no records, no fold) and warm (read before), beside partial_ratio in the
   same run. The cited check reads the output's records once, then folds only the cited ones.

Times are CPU seconds of this process (time.process_time), so other work on shared cores does
not inflate them.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

from rapidfuzz import fuzz

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pipeline.core.contracts import ExecutorOutput, ParseStatus, ToolInvocation  # noqa: E402
from pipeline.gatekeeper import GateContext, gate_verdict, load_rules, run_gatekeeper  # noqa: E402
from pipeline.gatekeeper.features import compute_features, prepare_output  # noqa: E402
from pipeline.gatekeeper.folding import fold  # noqa: E402
from pipeline.gatekeeper.prepared import OutputCache, PreparedOutput  # noqa: E402
from pipeline.replay.per_session import ReplayInput, replay  # noqa: E402
from pipeline.stages.verifier import build_payload  # noqa: E402

# CPU time of this process, not wall time: the cores are shared, and another process's work
# would otherwise count against whichever side happened to run beside it.
_clock = time.process_time
RULES = load_rules(Path(__file__).resolve().parent.parent / "rules")
SERVICES = ["payment-service", "order-service", "inventory-service", "user-service", "api-gateway", "bank-gateway"]
CODES = ["E_PAY_TIMEOUT", "E_DB_POOL", "E_STOCK_LOW", "E_AUTH_EXPIRED", "E_RATE_LIMIT"]
TEMPLATES = [
    "Request timeout after {ms}ms calling {svc2}, order_id=ord-{oid}",
    "HTTP {status} upstream error; error code {code}, retry {n} of 3",
    "HikariPool-1 connection pool usage {pct}% (active {n} / max 50)",
    "支付接口调用超时，订单号: {oid} 处理失败，耗时 {ms}ms",
    "库存服务返回错误码 {code}，请求 {rid} 重试 {n} 次",
    "GC pause {ms}ms on {svc2}, heap {pct}% used",
]


def _message(rng: random.Random) -> str:
    return rng.choice(TEMPLATES).format(
        ms=rng.randint(100, 9999), svc2=rng.choice(SERVICES), oid=rng.randint(10000, 99999),
        status=rng.choice([500, 502, 503, 504]), code=rng.choice(CODES), n=rng.randint(1, 9),
        pct=f"{rng.uniform(10, 99):.1f}", rid=f"req-{rng.randint(1000, 9999)}",
    )


def _records(rng: random.Random, n: int) -> list[dict]:
    return [
        {"timestamp": f"2024-05-01T10:{i // 60 % 60:02d}:{i % 60:02d}Z", "service": rng.choice(SERVICES),
         "level": rng.choice(["ERROR", "WARN", "INFO"]), "message": _message(rng)}
        for i in range(n)
    ]


def _output_of_size(rng: random.Random, size: int) -> tuple[str, list[dict]]:
    records = _records(rng, max(1, size // 150))
    text = json.dumps({"logs": records}, ensure_ascii=False)
    while len(text.encode()) > size and len(records) > 1:
        records = records[: int(len(records) * size / len(text.encode()))] or records[:1]
        text = json.dumps({"logs": records}, ensure_ascii=False)
    return text, records


def _verbatim(rng: random.Random, record: dict) -> str:
    """A stretch of the message that cuts no number or word (a cut number is a misquote)."""
    msg = record["message"]
    a = rng.randint(0, max(0, len(msg) // 5))
    b = len(msg) - rng.randint(0, len(msg) // 6)
    while 0 < a < len(msg) and msg[a - 1].isascii() and msg[a - 1].isalnum() and msg[a].isalnum():
        a -= 1
    while b < len(msg) and msg[b - 1].isascii() and msg[b - 1].isalnum() and msg[b].isalnum():
        b += 1
    return msg[a:b]


def _reformatted(rng: random.Random, record: dict) -> str:
    text = _verbatim(rng, record)
    text = text.replace(", ", ",   ").replace("，", ", ").replace(": ", "：")
    return text.upper() if rng.random() < 0.5 else "..." + text.replace(" ", "  ") + "..."


def _mutations(rng: random.Random, record: dict) -> dict[str, str | None]:
    msg = record["message"]
    out: dict[str, str | None] = {}
    digits = [tok for tok in msg.replace(",", " ").replace("%", " ").split() if any(c.isdigit() for c in tok)]
    if digits:
        tok = rng.choice(digits)
        swapped = "".join(str((int(c) + 3) % 10) if c.isdigit() else c for c in tok)
        out["number swapped"] = msg.replace(tok, swapped, 1)
    svc = next((s for s in SERVICES if s in msg), None)
    out["service swapped"] = msg.replace(svc, next(s for s in SERVICES if s != svc), 1) if svc else None
    code = next((c for c in CODES if c in msg), None)
    out["error code swapped"] = msg.replace(code, next(c for c in CODES if c != code), 1) if code else None
    if "失败" in msg:
        out["negation added"] = msg.replace("失败", "未失败", 1)
    elif "timeout " in msg:
        out["negation added"] = msg.replace("timeout ", "no timeout ", 1)
    else:
        out["negation added"] = None
    out["fabricated"] = rng.choice([
        "Kafka consumer lag reached 2000000 messages on topic payments",
        "数据库主从切换完成，复制延迟 0 秒",
        "Redis cluster failover triggered by node 10.0.3.7",
        "certificate for api.example.com expired at 09:58",
    ])
    return out


def _structured(bindings: list[tuple[str, list[int], str]]) -> dict:
    claims = []
    for n in range(0, len(bindings), 3):
        group = bindings[n : n + 3]
        claims.append({
            "claim_id": f"claim-{n // 3 + 1}", "claim_type": "symptom",
            "claim_text": f"{group[0][0][:40]} 表明 payment-service 请求超时",
            "support_level": "direct",
            "evidence_bindings": [
                {"source_type": "tool_trace", "tool_name": tool, "source_invocation_ids": ids, "evidence_excerpt": ex}
                for ex, ids, tool in group
            ],
        })
    return {"answer_version": "executor_evidence_v2", "claims": claims}


def _timed(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = _clock()
        fn()
        times.append(_clock() - start)
    return statistics.median(times)


def bench_sizes(rng: random.Random) -> None:
    print("\n1. Excerpt check per binding (median CPU ms; ratio = naive / ours)")
    print("prepare = fold, index and word list of the output, done when it is stored (off the check);")
    print("cold = the first binding checked against a freshly prepared output, warm = later ones.")
    print(f"{'output':>8} {'kind':>12} {'naive':>9} {'prepare':>9} {'ours cold':>10} {'ours warm':>10} {'x cold':>8} "
          f"{'x warm':>8}")
    for label, size in [("1 KB", 1_000), ("100 KB", 100_000), ("1 MB", 1_000_000), ("10 MB", 10_000_000)]:
        output, records = _output_of_size(rng, size)
        inv = ToolInvocation(id=1, session_id="b", tool_name="query_logs", model_tool_name="queryLogs", output=output)
        invocations = {1: inv}
        repeat = 3 if size >= 10_000_000 else 7
        prepared: list[OutputCache] = []
        # Loop variables are bound as defaults: each lambda runs within its iteration, but says so.
        prepare = _timed(lambda out=prepared, text=output: out.append(_prepared_cache(text)), repeat)

        def check(excerpt: str, cache: OutputCache, invocations: dict[int, ToolInvocation] = invocations) -> None:
            compute_features(invocations, ExecutorOutput.read(_structured([(excerpt, [1], "query_logs")])), None,
                             outputs=cache)

        for kind, make in KINDS:
            excerpts = [make(rng, rng.choice(records)) for _ in range(repeat)]
            it = iter(excerpts * 3)
            naive = _timed(lambda it=it, text=output: fuzz.partial_ratio(next(it), text), repeat)
            fresh = iter([_prepared_cache(output) for _ in range(repeat)])
            it = iter(excerpts * 3)
            cold = _timed(lambda it=it, fresh=fresh: check(next(it), next(fresh)), repeat)
            warm_cache = prepared[0]
            check(excerpts[0], warm_cache)
            it = iter(excerpts * 3)
            warm = _timed(lambda it=it, cache=warm_cache: check(next(it), cache), repeat)
            print(f"{label:>8} {kind:>12} {naive * 1e3:9.2f} {prepare * 1e3:9.1f} {cold * 1e3:10.2f} {warm * 1e3:10.2f} "
                  f"{naive / cold:8.1f} {naive / warm:8.1f}")


def bench_cited(rng: random.Random) -> None:
    print("\n5. Cited vs uncited records on a 10 MB output (median CPU ms per binding; ratio = naive / ours)")
    print("cold = the output stored but never read in this process; warm = read (and, uncited, folded) before.")
    output, records = _output_of_size(rng, 10_000_000)
    invocations = {1: ToolInvocation(id=1, session_id="b", tool_name="query_logs", model_tool_name="queryLogs",
                                     output=output)}
    repeat = 5

    def check(excerpt: str, number: int | None, cache: OutputCache) -> None:
        binding = {"source_type": "tool_trace", "tool_name": "query_logs", "source_invocation_ids": [1],
                   "evidence_excerpt": excerpt}
        if number is not None:
            binding["source_record_ids"] = [f"1#{number}"]
        structured = {"answer_version": "executor_evidence_v2", "claims": [
            {"claim_id": "c1", "claim_type": "symptom", "claim_text": "x", "support_level": "direct",
             "evidence_bindings": [binding]}]}
        features = compute_features(invocations, ExecutorOutput.read(structured), None, outputs=cache)
        found = features["claims[0].evidence_bindings[0]"]["sources"]["output"]
        assert found["covered"] == 1.0, (excerpt, found)  # a faithful quote, found either way

    print(f"{'kind':>12} {'naive':>9} {'uncited cold':>13} {'cited cold':>11} {'uncited warm':>13} "
          f"{'cited warm':>11} {'x cited warm':>13}")
    for kind, make in KINDS[:2]:
        picks = [rng.randrange(len(records)) for _ in range(repeat)]
        quotes = [(make(rng, records[n]), n) for n in picks]
        it = iter(quotes * 2)
        naive = _timed(lambda it=it: fuzz.partial_ratio(next(it)[0], output), repeat)
        row = [naive]
        for cited in (False, True):
            fresh = iter([OutputCache() for _ in range(repeat)])
            it = iter(quotes * 2)
            row.append(_timed(lambda it=it, fresh=fresh, cited=cited: check(*_cite(next(it), cited), next(fresh)), repeat))
        warm_cache = _prepared_cache(output)
        for cited in (False, True):
            check(*_cite(quotes[0], cited), warm_cache)
            it = iter(quotes * 2)
            row.append(_timed(lambda it=it, cited=cited, cache=warm_cache: check(*_cite(next(it), cited), cache), repeat))
        naive, uncited_cold, cited_cold, uncited_warm, cited_warm = row
        print(f"{kind:>12} {naive * 1e3:9.2f} {uncited_cold * 1e3:13.1f} {cited_cold * 1e3:11.1f} "
              f"{uncited_warm * 1e3:13.2f} {cited_warm * 1e3:11.2f} {naive / cited_warm:13.0f}")


def _cite(quote: tuple[str, int], cited: bool) -> tuple[str, int | None]:
    return quote[0], quote[1] if cited else None


def _prepared_cache(output: str) -> OutputCache:
    cache = OutputCache()
    prepare_output(1, output, cache)
    return cache


def _invented(rng: random.Random, record: dict) -> str:
    words = _verbatim(rng, record).split(" ")
    at = len(words) // 2
    return " ".join([*words[:at], rng.choice(["because the replica lagged", "因为主库切换"]), *words[at:]])


def _adjacent(rng: random.Random, record: dict) -> str:
    return f"{record['service']} {record['level']} {record['message']}"


KINDS = [
    ("verbatim", _verbatim),
    ("reformatted", _reformatted),
    ("swapped", lambda r, rec: _mutations(r, rec)["number swapped"] or rec["message"]),
    ("invented", _invented),
    ("fields", _adjacent),
]


def bench_long_miss(rng: random.Random) -> None:
    """A 10,000-character excerpt that matches nothing, against 1 MB of long lines: gatekeeper plus
    the verifier payload's window search, per check (target: <= 1 s)."""
    words = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 9))) for _ in range(4000)]
    lines = [{"timestamp": f"2024-05-01T10:00:{i % 60:02d}Z", "service": rng.choice(SERVICES), "level": "INFO",
              "message": " ".join(rng.choice(words) for _ in range(1500))} for i in range(100)]
    output = json.dumps({"logs": lines})[:1_000_000]
    output = output[: output.rfind("}") + 1] + "]}"
    inv = ToolInvocation(id=1, session_id="b", tool_name="query_logs", model_tool_name="queryLogs", output=output)
    excerpt = " ".join("".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ") for _ in range(9)) for _ in range(1000))[:10_000]
    structured = _structured([(excerpt, [1], "query_logs")])
    cache = _prepared_cache(output)
    took = []
    for _ in range(3):
        start = _clock()
        outcome = run_gatekeeper(GateContext("b", ExecutorOutput.read(structured), {1: inv}, {1: inv}.get), RULES,
                                 outputs=cache)
        build_payload(question="q", raw_output=json.dumps(structured), parse_status=ParseStatus(status="valid"),
                      structured=outcome.normalized, invocations=[inv], digests=None,
                      gatekeeper_result=outcome.result, retry_context=None, features=outcome.features)
        took.append(_clock() - start)
    print(f"\n4. A 10,000-character excerpt matching nothing, 1 MB output of {len(lines)} long lines: "
          f"gatekeeper + verifier payload {statistics.median(took):.3f} s per check (target <= 1 s)")


def bench_accuracy(rng: random.Random) -> None:
    output, records = _output_of_size(rng, 100_000)
    inv = ToolInvocation(id=1, session_id="b", tool_name="query_logs", model_tool_name="queryLogs", output=output)
    ctx_of = lambda s: GateContext("b", ExecutorOutput.read(s), {1: inv}, {1: inv}.get)  # noqa: E731
    threshold = RULES.get("evidence.excerpt_similarity").params.passThreshold
    folded = f" {PreparedOutput(output).folded} "
    cases: list[tuple[str, str, bool]] = []
    for _ in range(60):
        record = rng.choice(records)
        cases.append(("faithful verbatim", _verbatim(rng, record), True))
        cases.append(("faithful reformatted", _reformatted(rng, record), True))
        for kind, text in _mutations(rng, record).items():
            # A "mutation" that another record holds verbatim is a faithful quote of that record.
            if text is not None and f" {fold(text)} " not in folded:
                cases.append((kind, text, False))
    stats: dict[str, list[int]] = {}
    for kind, excerpt, faithful in cases:
        outcome = run_gatekeeper(ctx_of(_structured([(excerpt, [1], "query_logs")])), RULES)
        ours_pass = gate_verdict(outcome.result, RULES) == "PASS"
        naive_pass = fuzz.partial_ratio(excerpt, output) / 100 >= threshold
        row = stats.setdefault(kind, [0, 0, 0, 0])
        row[0] += 1
        row[1] += ours_pass == faithful
        row[2] += (outcome.result.status == "pass") == faithful
        row[3] += naive_pass == faithful
    print(f"\n2. Verdict accuracy on {len(cases)} labelled excerpts (100 KB output; naive passes at partial_ratio >= "
          f"{threshold})")
    print("ours = verdict PASS iff faithful; ours flagged = gatekeeper status pass iff faithful (warn counts)")
    print(f"{'case':>22} {'n':>5} {'ours':>8} {'flagged':>8} {'naive':>8}")
    total = [0, 0, 0, 0]
    for kind, row in stats.items():
        total = [t + r for t, r in zip(total, row, strict=True)]
        print(f"{kind:>22} {row[0]:5d} {row[1] / row[0]:8.1%} {row[2] / row[0]:8.1%} {row[3] / row[0]:8.1%}")
    print(f"{'all':>22} {total[0]:5d} {total[1] / total[0]:8.1%} {total[2] / total[0]:8.1%} {total[3] / total[0]:8.1%}")


def _sessions(rng: random.Random, n: int):
    inv_id = 0
    for s in range(n):
        sid = f"s{s}"
        logs_records = _records(rng, 20)
        alerts = [{"alertname": "HighLatency", "service": rng.choice(SERVICES), "status": "firing",
                   "description": _message(rng)} for _ in range(5)]
        logs = ToolInvocation(id=inv_id + 1, session_id=sid, tool_name="query_logs", model_tool_name="queryLogs",
                              output=json.dumps({"logs": logs_records}, ensure_ascii=False))
        metrics = ToolInvocation(id=inv_id + 2, session_id=sid, tool_name="query_metrics",
                                 model_tool_name="queryMetrics",
                                 output=json.dumps({"alerts": alerts}, ensure_ascii=False))
        inv_id += 2
        bindings = []
        for _ in range(10):
            if rng.random() < 0.7:
                record, inv = rng.choice(logs_records), logs
            else:
                record, inv = {"message": rng.choice(alerts)["description"]}, metrics
            roll = rng.random()
            if roll < 0.8:
                excerpt = _verbatim(rng, record)
            elif roll < 0.92:
                excerpt = _reformatted(rng, record)
            else:
                excerpt = next(t for t in _mutations(rng, record).values() if t)
            bindings.append((excerpt, [inv.id], inv.tool_name))
        yield sid, _structured(bindings), {logs.id: logs, metrics.id: metrics}


def _timed_once(fn) -> tuple[float, object]:
    start = _clock()
    value = fn()
    return _clock() - start, value


def bench_history(rng: random.Random, n: int) -> None:
    sessions = list(_sessions(rng, n))
    bindings = sum(len(c["evidence_bindings"]) for _, s, _ in sessions for c in s["claims"])
    everyone = {i: inv for _, _, invs in sessions for i, inv in invs.items()}

    def full_run() -> list[tuple[str, str, str]]:
        # As the pipeline does it: one session at a time, the outcome persisted as JSON columns.
        stored = []
        for sid, s, invs in sessions:
            o = run_gatekeeper(GateContext(sid, ExecutorOutput.read(s), invs, everyone.get), RULES)
            stored.append((json.dumps(o.features), o.normalized.model_dump_json() if o.normalized else "null", o.result.model_dump_json(),
                           gate_verdict(o.result, RULES)))
        return stored

    full, stored = _timed_once(full_run)

    def load() -> list[ReplayInput]:
        # What pipeline.replay.inputs does with the store's rows.
        inputs = []
        for (sid, _, invs), (features, normalized, result, verdict) in zip(sessions, stored, strict=True):
            gate = json.loads(result)
            inputs.append(ReplayInput(
                sid, json.loads(normalized), "valid", {i: (inv.session_id, inv.tool_name) for i, inv in invs.items()},
                json.loads(features), None, gate["status"], verdict, None, gate["failed_rules"], gate["warnings"]))
        return inputs

    load_time, inputs = _timed_once(load)
    first, _ = _timed_once(lambda: replay(inputs, RULES))
    edits = {
        "threshold": [RULES.with_params("evidence.excerpt_similarity", passThreshold=p, warnThreshold=w)
                      for p, w in ((0.9, 0.6), (0.8, 0.5), (0.95, 0.7), (0.7, 0.4), (0.6, 0.3))],
        "entity threshold": [RULES.with_params("evidence.excerpt_entities", minLocatedScore=x) for x in (0.7, 0.9)],
        "word list": [RULES.with_params("claim.hallucination_phrases", blacklist=[*RULES.get(
            "claim.hallucination_phrases").params.blacklist, w]) for w in ("超时", "timeout")],
        "rule switch / impact": [RULES.with_rule("schema.executor_v2", enabled=False),
                                 RULES.with_rule("evidence.excerpt_entities", verdict_impact="low_confid_on_fail")],
    }
    timings: dict[str, list[float]] = {}
    changed = 0
    for kind, variants in edits.items():
        for rules in variants:
            took, rows = _timed_once(lambda rules=rules: replay(inputs, rules))
            timings.setdefault(kind, []).append(took)
            changed = max(changed, sum(r.changed for r in rows))
    tuned = edits["threshold"][0]
    sample = sessions[: max(1, n // 10)]
    cached = _timed(lambda: [run_gatekeeper(GateContext(sid, ExecutorOutput.read(s), invs, everyone.get), tuned,
                                            features_cache=f)
                             # sample is the first tenth of the sessions, so the zip stops early on purpose
                             for (sid, s, invs), f in zip(sample, (i.features for i in inputs), strict=False)], 1) * n / len(sample)
    threshold = statistics.median(timings["threshold"])
    print(f"\n3. History: {n} sessions, {bindings} bindings")
    print(f"{'step':>48} {'seconds':>9} {'target':>8}")
    print(f"{'full gatekeeper run (features computed)':>48} {full:9.2f} {'<= 10':>8}")
    print(f"{'load replay inputs from stored JSON':>48} {load_time:9.2f}")
    print(f"{'first replay (session facts built)':>48} {first:9.2f}")
    for kind, took in timings.items():
        label = f"replay after {kind} change (median of {len(took)})"
        target = "<= 0.5" if kind == "threshold" else "<= 1"
        print(f"{label:>48} {statistics.median(took):9.2f} {target:>8}   max {max(took):.2f}")
    print(f"{'naive replay: run_gatekeeper + features_cache':>48} {cached:9.2f}   (extrapolated from {len(sample)})")
    print(f"replay after a threshold change: x{full / threshold:.0f} faster than the full run, "
          f"x{cached / threshold:.0f} faster than re-running with the cache; up to {changed} sessions change")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--parts", default="12345", help="which parts to run, e.g. 3")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    if "1" in args.parts:
        bench_sizes(rng)
    if "2" in args.parts:
        bench_accuracy(rng)
    if "4" in args.parts:
        bench_long_miss(rng)
    if "5" in args.parts:
        bench_cited(rng)
    if "3" in args.parts:
        if "1" not in args.parts:
            # The fold tables are built once per process (~1 s); part 1 builds them otherwise.
            PreparedOutput("\u00e9").folded  # noqa: B018
            fold("\u00e9")
        bench_history(rng, args.sessions)


if __name__ == "__main__":
    main()
