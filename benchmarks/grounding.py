"""Run the grounding corpus through the gatekeeper and report per class.

    python benchmarks/grounding.py [--corpus benchmarks/grounding_corpus.jsonl] [--show 5]

Each case is one claim whose single binding cites the case's output with the case's excerpt,
checked by the shipped rules. A case is *flagged* when the excerpt rules (similarity, entities)
find anything on it or the claim is left unbacked; it *ends PASS* when nothing holds the session
off PASS (no failed rule, no unbacked claim). Per class:

- faithful classes: passed = share not flagged (target >= 99%);
- mutated classes: caught = share flagged (recall, target >= 97%), precision = of the flags of the
  kind that names this class (e.g. "negation" for negation added), the share on mutated cases
  rather than faithful ones, and how many end PASS (invented / fabricated: target 0).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from grounding_corpus import CORPUS, FAITHFUL, MUTATED, build_outputs  # noqa: E402

from pipeline.core.contracts import ExecutorOutput, ToolInvocation  # noqa: E402
from pipeline.gatekeeper import GateContext, RuleSet, gate_verdict, load_rules, run_gatekeeper  # noqa: E402
from pipeline.gatekeeper.features import prepare_output  # noqa: E402
from pipeline.gatekeeper.prepared import OutputCache  # noqa: E402
from pipeline.tools.registry import model_name  # noqa: E402

EXCERPT_RULES = ("evidence.excerpt_similarity", "evidence.excerpt_entities")
# The finding kind that names each mutation class (precision is measured on it).
EXPECTED_KIND = {
    "number changed": "entity", "service swapped": "entity", "error code swapped": "entity",
    "invented content": "invented", "fabricated": "invented", "negation added": "negation",
    "negation dropped": "negation", "antonym flipped": "antonym", "log level changed": "level",
}
TARGETS = {"faithful passed": 0.99, "mutated caught": 0.97}


@dataclass
class Outcome:
    case: dict
    flagged: bool
    ends_pass: bool
    kinds: set[str]
    messages: list[str]


def finding_kind(rule_id: str, message: str) -> str:
    if "invented content" in message:
        return "invented"
    if "negation" in message:
        return "negation"
    if "opposite" in message:
        return "antonym"
    if "log level" in message:
        return "level"
    return "similarity" if rule_id == "evidence.excerpt_similarity" else "entity"


def load_cases(path: Path = CORPUS) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def run_cases(cases: list[dict], rules: RuleSet) -> list[Outcome]:
    outputs = build_outputs()
    cache = OutputCache()
    ids = {name: n for n, name in enumerate(sorted(outputs), start=1)}
    invocations = {ids[name]: ToolInvocation(id=ids[name], session_id="grounding", tool_name=tool,
                                             model_tool_name=model_name(tool) or tool, output=text)
                   for name, (tool, text) in outputs.items()}
    for inv in invocations.values():
        prepare_output(inv.id, inv.output, cache)  # as a session does when it stores the output
    results = []
    for case in cases:
        inv = invocations[ids[case["output"]]]
        structured = {"answer_version": "executor_evidence_v2", "claims": [{
            "claim_id": "c1", "claim_type": "symptom", "claim_text": case["excerpt"], "support_level": "direct",
            "evidence_bindings": [{"source_type": "tool_trace", "tool_name": inv.tool_name,
                                   "source_invocation_ids": [inv.id], "evidence_excerpt": case["excerpt"]}]}]}
        outcome = run_gatekeeper(GateContext("grounding", ExecutorOutput.read(structured), {inv.id: inv}, invocations.get), rules,
                                 outputs=cache)
        errors = [e for e in outcome.result.errors if e.rule_id in EXCERPT_RULES]
        unbacked = bool(outcome.result.unbacked_claims)
        results.append(Outcome(
            case, bool(errors) or unbacked,
            gate_verdict(outcome.result, rules) == "PASS" and not unbacked,
            {finding_kind(e.rule_id, e.message) for e in errors}, [e.message for e in errors]))
    return results


def summarize(results: list[Outcome]) -> dict[str, dict[str, float]]:
    """Per class: n, and passed (faithful) or caught, precision and ends_pass (mutated)."""
    by_class: dict[str, list[Outcome]] = defaultdict(list)
    for r in results:
        by_class[r.case["class"]].append(r)
    flags_of_kind: dict[str, list[bool]] = defaultdict(list)  # kind -> [on a mutated case?]
    for r in results:
        for kind in r.kinds:
            flags_of_kind[kind].append(not r.case["faithful"])
    table: dict[str, dict[str, float]] = {}
    for cls in (*FAITHFUL, *MUTATED):
        rows = by_class.get(cls, [])
        if not rows:
            continue
        if cls in FAITHFUL:
            table[cls] = {"n": len(rows), "passed": sum(not r.flagged for r in rows) / len(rows)}
            continue
        kind = EXPECTED_KIND[cls]
        flags = flags_of_kind.get(kind, [])
        table[cls] = {"n": len(rows), "caught": sum(r.flagged for r in rows) / len(rows),
                      "precision": sum(flags) / len(flags) if flags else 1.0,
                      "ends_pass": sum(r.ends_pass for r in rows)}
    faithful = [r for r in results if r.case["faithful"]]
    mutated = [r for r in results if not r.case["faithful"]]
    table["all faithful"] = {"n": len(faithful), "passed": sum(not r.flagged for r in faithful) / len(faithful)}
    table["all mutated"] = {"n": len(mutated), "caught": sum(r.flagged for r in mutated) / len(mutated),
                            "ends_pass": sum(r.ends_pass for r in mutated)}
    return table


def print_table(table: dict[str, dict[str, float]]) -> None:
    print(f"{'class':>20} {'n':>5} {'passed':>8} {'caught':>8} {'precision':>10} {'ends PASS':>10}")
    for cls, row in table.items():
        passed = f"{row['passed']:.1%}" if "passed" in row else ""
        caught = f"{row['caught']:.1%}" if "caught" in row else ""
        precision = f"{row['precision']:.1%}" if "precision" in row else ""
        ends = f"{int(row['ends_pass'])}" if "ends_pass" in row else ""
        print(f"{cls:>20} {int(row['n']):5d} {passed:>8} {caught:>8} {precision:>10} {ends:>10}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--show", type=int, default=0, help="print this many misjudged cases per class")
    args = parser.parse_args()
    results = run_cases(load_cases(args.corpus), load_rules(ROOT / "rules"))
    print_table(summarize(results))
    if args.show:
        shown: dict[str, int] = defaultdict(int)
        for r in results:
            wrong = r.flagged if r.case["faithful"] else not r.flagged
            if wrong and shown[r.case["class"]] < args.show:
                shown[r.case["class"]] += 1
                print(f"\n[{r.case['class']}] {r.case['id']}\n  excerpt: {r.case['excerpt']}\n  findings: {r.messages}")


if __name__ == "__main__":
    main()
