"""Foreign agents' prose answers, audited as imported traces, per class.

    python benchmarks/foreign_answers.py [--show]

The set is data (benchmarks/data/foreign_answers.yaml, written by hand over the bundled
incidents' records); this script only builds each answer's OTLP/JSON trace (an AGENT root with
the question and the answer, a TOOL span for the world's WARN/ERROR logs and one for its alerts)
and measures what the workbench makes of it: read_trace -> trace_bundle -> check_bundle with the
offline provider and the shipped rules, as `workbench import-trace` judges it, nothing stored.

An answer is *flagged* when any of its claims is not verified (the verdict policy's corrected
claim check is not direct_observation / reasonable_inference), a gatekeeper rule fails, or a
hypothesis is judged overstated_as_fact. Goals: faithful kept (not flagged) >= 95%, each unfaithful
class caught (flagged) >= 95%, over all answers ("all"); the held-out batch was written after the
first batch's misses had been fixed in the engine, so its line shows how far those fixes carry,
held-out-2 likewise after instances were told from services, held-out-3 (instances of every shape,
right and swapped) before instance swaps were fixed, and held-out-4 (faithful answers that paraphrase,
small number changes, quotes no record holds, guesses with and without a hedge, near-name and
victim/culprit swaps) from the records alone, before any engine change for it, and held-out-5 (other agents'
styles: markdown, bullets, timelines, rounded and converted numbers, ranges, backtick quotes that hold a cause,
hedges and stated gaps, beside wrong writers, wrong pods, unstated links and causes no fed record holds) likewise,
from the WARN/ERROR logs and alerts alone, as are held-out-7 (Slack notes, postmortems, key: value cards, runbook checks), held-out-8 (status updates, quoted replies, tables, emoji lists, unit conversions), held-out-9 (ReAct final answers, findings/evidence/next-steps sections, tool-call citations, pasted log blocks, handoffs, confidence lines, recommended actions), held-out-10 (short chat replies, long markdown reports, step-by-step walkthroughs, two causes weighed with a hedge, inline quoted lines, zh/en mixed prose, timelines, affected/not-affected lists, closing recommendations), held-out-11 (incident-commander updates with owners, 5-whys chains, Jira-ticket bodies, PagerDuty ack/resolve notes, Q&A FAQs, ranked hypotheses with evidence for/against, log-grep transcripts with counts, pods compared in prose, pipe tables, sums and shares worked out, relative times) and held-out-12 (terse agent final answers after tool calls, Observations/Conclusion sections, customer-facing status-page notes, Slack thread replies quoting a colleague, diff-style before/after comparisons of two time windows, corrections of the question's premise, second-person walkthroughs, zh 周报 paragraphs, numbers in other units than the records', lists of what the output does not hold) and held-out-13 (function-calling agents' final messages citing tool call ids, JSON-shaped answers, Impact/Timeline/Root cause/Contributing factors RCAs, Grafana-panel descriptions, ✅/❌ runbook checklists, alternating zh/en sentences, ISO-8601 times with +08:00 versions, percentages as fractions, durations in mixed units, multi-line log blocks quoted in code fences, paraphrases with synonyms, a ReAct ending). The last line counts the answers
whose findings blame the schema (none should: the shape is the prose reader's, not the agent's).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pipeline.bundles.check import check_bundle  # noqa: E402
from pipeline.bundles.trace_import import read_trace  # noqa: E402
from pipeline.bundles.trace_session import trace_bundle  # noqa: E402
from pipeline.core.config import load_settings  # noqa: E402
from pipeline.gatekeeper import load_rules  # noqa: E402
from pipeline.llm import make_provider  # noqa: E402

SET = Path(__file__).resolve().parent / "data" / "foreign_answers.yaml"
VERIFIED = {"direct_observation", "reasonable_inference"}
GOAL = 0.95


def tool_outputs(world: str) -> tuple[str, str]:
    """The world's WARN/ERROR log lines and its alerts, in the seed's shape: every line with its host,
    as the bundled log tool returns them, so an answer that counts lines or names a pod can be held
    to them."""
    here = ROOT / "data" / "incidents" / world
    logs = []
    for line in (here / "logs.jsonl").read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        if rec["level"] in ("WARN", "ERROR"):
            logs.append({"timestamp": rec["ts"], "service": rec["service"], "level": rec["level"],
                         "message": rec["message"], "host": rec.get("host")})
    alerts = json.loads((here / "alerts.json").read_text(encoding="utf-8"))
    return (json.dumps({"logs": logs, "total": len(logs), "truncated": False}, ensure_ascii=False),
            json.dumps({"alerts": alerts, "total": len(alerts)}, ensure_ascii=False))


def _attr(key: str, value: str) -> dict[str, Any]:
    return {"key": key, "value": {"stringValue": value}}


def otlp_trace(n: int, question: str, answer: str, logs: str, alerts: str) -> str:
    trace_id = f"{n:032x}"
    root = {"traceId": trace_id, "spanId": f"{n:08x}00000000", "name": "agent", "startTimeUnixNano": "1",
            "endTimeUnixNano": "9", "attributes": [_attr("openinference.span.kind", "AGENT"),
                                                   _attr("input.value", question), _attr("output.value", answer)]}
    tools = [{"traceId": trace_id, "spanId": f"{n:08x}0000000{i}", "parentSpanId": root["spanId"], "name": name,
              "startTimeUnixNano": str(i * 2), "endTimeUnixNano": str(i * 2 + 1),
              "attributes": [_attr("openinference.span.kind", "TOOL"), _attr("tool.name", name),
                             _attr("tool.parameters", "{}"), _attr("output.value", output)]}
             for i, (name, output) in enumerate((("query_logs", logs), ("query_metrics", alerts)), start=1)]
    return json.dumps({"resourceSpans": [{"resource": {"attributes": [_attr("service.name", "foreign-agent")]},
                                          "scopeSpans": [{"spans": [root, *tools]}]}]}, ensure_ascii=False)


def cases(doc: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, str], dict[str, str]]]:
    """(batch, world, question, answer) for every answer: the first batch by world, then the held-out one."""
    for world, spec in doc.items():
        if world != "held-out":
            for case in spec["answers"]:
                yield "first", world, spec["question"], case
    for spec in doc.get("held-out", []):
        for case in spec["answers"]:
            yield spec.get("batch", "held-out"), spec["world"], spec["question"], case


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--show", action="store_true", help="print every answer the goal counts against")
    args = parser.parse_args()
    settings = load_settings()
    rules, provider = load_rules(settings.rules_dir), make_provider(settings)
    flagged: dict[tuple[str, str], list[bool]] = defaultdict(list)
    verdicts: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    misses = []
    # Every answer here is prose: the schema the gatekeeper reads is this workbench's reading of it,
    # so a schema finding would blame the agent for a shape it never wrote.
    schema_blamed = 0
    for n, (batch, world, question, case) in enumerate(cases(yaml.safe_load(SET.read_text(encoding="utf-8"))), 1):
        logs, alerts = tool_outputs(world)
        text = otlp_trace(n, question[case["lang"]], case["text"], logs, alerts)
        bundle, _ = trace_bundle(read_trace(text, 10**8, 10**7))
        ev = check_bundle(bundle, settings=settings, rules=rules, provider=provider)
        checks = [c.verification for c in ev.verifier_output.claim_checks]
        bad = (any(c not in VERIFIED for c in checks) or bool(ev.gatekeeper_result.failed_rules)
               or any(h.verification == "overstated_as_fact" for h in ev.verifier_output.hypothesis_checks))
        label = case["label"]
        schema_blamed += "schema.executor_v2" in ev.gatekeeper_result.failed_rules
        for key in ((batch, label), ("all", label)):
            flagged[key].append(bad)
            verdicts[key][ev.verdict] += 1
        if bad == (label == "faithful"):
            misses.append((batch, world, label, case["text"], checks, ev.gatekeeper_result.failed_rules))
    ok = True
    for (batch, label), marks in sorted(flagged.items(), key=lambda kv: (kv[0][0] != "all", kv[0][0], kv[0][1])):
        share = (marks.count(False) if label == "faithful" else marks.count(True)) / len(marks)
        ok &= share >= GOAL or batch != "all"
        what = "kept" if label == "faithful" else "caught"
        print(f"{batch:9} {label:16} n={len(marks):3}  {what} {share:6.1%}  verdicts {dict(verdicts[batch, label])}")
    print(f"prose answers failing schema.executor_v2: {schema_blamed}")
    if args.show:
        for batch, world, label, text, checks, failed in misses:
            print(f"- [{batch} {label}] {world}: {text}\n    checks {checks} failed {failed}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
