"""Check the real-log grounding corpus through `workbench check` and report per class.

    python benchmarks/grounding_real_logs.py [--show 5] [--by system] [--by shape] [--cite-records]

Every case becomes a session bundle, as another agent would export one: a single tool invocation
whose output is the system's log slice (plain text or a log query's JSON, per the case), and an
executor answer with one direct claim whose evidence excerpt is the case's quote, citing that
invocation (with --cite-records, naming the quoted records too). The bundle carries a verifier
that accepts the claim (the most lenient one), so the verdict is what the deterministic half of
the product makes of the quote. The bundle is read by `parse_bundle` and checked by
`check_bundle`, the functions behind `workbench check`.

A case is *flagged* when the gatekeeper reports an error on it or leaves its claim unbacked; it
*ends PASS* when the checked session's verdict is PASS. Per class:

- faithful: passed = share neither flagged nor kept from PASS (goal >= 99%);
- mutated: caught = share flagged (goal >= 98% for every class), and how many end PASS (goal 0).

With --cite-records one class is added: each exact quote citing a record half the slice away
that does not say it (a quote found only outside its cited records must fail).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from real_logs_corpus import CORPUS, FAITHFUL, MUTATED, SHAPES, SYSTEMS, lines, norm, output_text  # noqa: E402

from pipeline.bundles.check import check_bundle  # noqa: E402
from pipeline.bundles.session_bundle import parse_bundle  # noqa: E402
from pipeline.core.config import Settings  # noqa: E402
from pipeline.gatekeeper import RuleSet, load_rules  # noqa: E402
from pipeline.llm import make_provider  # noqa: E402

GOALS = {"faithful passed": 0.99, "mutated caught": 0.98, "mutated ending PASS": 0}
SESSION = "real-logs"


@dataclass
class Outcome:
    case: dict
    flagged: bool
    ends_pass: bool
    findings: list[str]


def load_cases(path: Path = CORPUS) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@cache
def _invocation(system: str, shape: str) -> dict[str, Any]:
    number = list(SYSTEMS).index(system) * len(SHAPES) + SHAPES.index(shape) + 1
    return {"id": number, "session_id": SESSION, "tool_name": "query_logs", "model_tool_name": "queryLogs",
            "arguments": {"source": f"loghub/{system}"}, "status": "ok", "output": output_text(system, shape)}


def bundle_of(case: dict, *, cite_records: bool = False) -> dict[str, Any]:
    """The session bundle that quotes the case's excerpt as evidence from its log; with
    `cite_records`, the binding also names the records it quotes (the line, and the next one
    for a quote over adjacent records), as docs/spec.md#record-citations allows."""
    inv = _invocation(case["system"], case["shape"])
    excerpt = case["excerpt"]
    binding: dict[str, Any] = {"source_type": "tool_trace", "tool_name": inv["tool_name"],
                               "source_invocation_ids": [inv["id"]], "evidence_excerpt": excerpt}
    if cite_records:
        record = case["line"] - 1  # records are numbered from 0, one per line of the slice
        quoted = (record, record + 1) if case["class"] == "adjacent records" else (record,)
        binding["source_record_ids"] = [f"{inv['id']}#{n}" for n in quoted]
    executor = {"answer_version": "executor_evidence_v2", "claims": [{
        "claim_id": "c1", "claim_type": "symptom", "claim_text": excerpt, "support_level": "direct",
        "evidence_bindings": [binding]}], "hypotheses": [], "recommended_actions": [], "missing_info": []}
    return {
        "bundle_version": 1,
        "session": {"id": SESSION, "question": f"What do the {case['system']} logs show?", "shape": "single",
                    "provider": "yardstick", "model": "none"},
        "tool_invocations": [inv],
        "executor_raw_output": json.dumps(executor, ensure_ascii=False),
        "verifier_output": {"verdict": "PASS", "groundedness_score": 1.0,
                            "claim_checks": [{"claim_id": "c1", "verification": "direct_observation"}]},
        "composer_output": {"answer_summary": excerpt, "user_facing_answer": excerpt},
    }


MISCITED = "exact, another record cited"


def miscited(cases: list[dict]) -> list[dict]:
    """Each exact quote again, its binding citing a line half the slice away that does not say it:
    with record citations, a quote found only outside the records it cites must fail."""
    out = []
    for case in cases:
        if case["class"] != "exact":
            continue
        slice_lines = lines(case["system"])
        other = (case["line"] - 1 + len(slice_lines) // 2) % len(slice_lines)
        if norm(case["excerpt"]) not in norm(slice_lines[other]):
            out.append({**case, "id": case["id"] + "/miscited", "class": MISCITED, "faithful": False,
                        "line": other + 1})
    return out


def run_cases(cases: list[dict], rules: RuleSet | None = None, *, cite_records: bool = False) -> list[Outcome]:
    settings = Settings()
    rules = rules or load_rules(ROOT / "rules")
    provider = make_provider(settings)
    results = []
    for case in cases:
        bundle = parse_bundle(bundle_of(case, cite_records=cite_records))
        ev = check_bundle(bundle, settings=settings, rules=rules, provider=provider)
        gate = ev.gatekeeper_result
        unbacked = bool(gate.unbacked_claims)
        findings = [f"{e.rule_id}: {e.message}" for e in gate.errors] + (["claim unbacked"] if unbacked else [])
        results.append(Outcome(case, bool(gate.errors) or unbacked, ev.verdict == "PASS", findings))
    return results


def summarize(results: list[Outcome], key: str = "class") -> dict[str, dict[str, float]]:
    """Per class (or system, or shape): n, and passed (faithful) or caught and ends_pass (mutated)."""
    groups: dict[tuple[bool, str], list[Outcome]] = defaultdict(list)
    for r in results:
        groups[(r.case["faithful"], r.case[key])].append(r)
    order = {"class": (*FAITHFUL, *MUTATED, MISCITED), "system": tuple(SYSTEMS), "shape": SHAPES}[key]
    table: dict[str, dict[str, float]] = {}
    for faithful in (True, False):
        for name in order:
            rows = groups.get((faithful, name))
            if rows:
                label = name if key == "class" else f"{name} {'faithful' if faithful else 'mutated'}"
                table[label] = _row(rows, faithful)
        every = [r for r in results if r.case["faithful"] == faithful]
        if every:
            table["all faithful" if faithful else "all mutated"] = _row(every, faithful)
    return table


def _row(rows: list[Outcome], faithful: bool) -> dict[str, float]:
    if faithful:
        return {"n": len(rows), "passed": sum(not r.flagged and r.ends_pass for r in rows) / len(rows)}
    return {"n": len(rows), "caught": sum(r.flagged for r in rows) / len(rows),
            "ends_pass": sum(r.ends_pass for r in rows)}


def misses(table: dict[str, dict[str, float]]) -> list[str]:
    """The rows of a per-class table that miss a goal."""
    out = []
    for name, row in table.items():
        if "passed" in row and row["passed"] < GOALS["faithful passed"]:
            out.append(f"{name}: passed {row['passed']:.1%} < {GOALS['faithful passed']:.0%}")
        if "caught" in row and row["caught"] < GOALS["mutated caught"]:
            out.append(f"{name}: caught {row['caught']:.1%} < {GOALS['mutated caught']:.0%}")
        if row.get("ends_pass"):
            out.append(f"{name}: {int(row['ends_pass'])} mutated quote(s) end PASS")
    return out


def print_table(table: dict[str, dict[str, float]]) -> None:
    print(f"| {'class':<28} | {'n':>5} | {'faithful passed':>15} | {'mutation caught':>15} | {'mutated ending PASS':>19} |")
    print(f"|{'-' * 30}|{'-' * 7}|{'-' * 17}|{'-' * 17}|{'-' * 21}|")
    for name, row in table.items():
        passed = f"{row['passed']:.1%}" if "passed" in row else ""
        caught = f"{row['caught']:.1%}" if "caught" in row else ""
        ends = f"{int(row['ends_pass'])}" if "ends_pass" in row else ""
        print(f"| {name:<28} | {int(row['n']):>5} | {passed:>15} | {caught:>15} | {ends:>19} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--show", type=int, default=0, help="print this many misjudged cases per class")
    parser.add_argument("--cite-records", action="store_true",
                        help="bindings also cite the records they quote (source_record_ids), and every exact "
                             "quote is checked once more citing another record")
    parser.add_argument("--by", choices=("system", "shape"), action="append", default=[],
                        help="also print the table per system or per output shape")
    args = parser.parse_args()
    cases = load_cases(args.corpus)
    results = run_cases(cases + miscited(cases) if args.cite_records else cases, cite_records=args.cite_records)
    table = summarize(results)
    print_table(table)
    for key in args.by:
        print()
        print_table(summarize(results, key=key))
    if args.show:
        shown: dict[str, int] = defaultdict(int)
        for r in results:
            wrong = (r.flagged or not r.ends_pass) if r.case["faithful"] else not r.flagged
            if wrong and shown[r.case["class"]] < args.show:
                shown[r.case["class"]] += 1
                print(f"\n[{r.case['class']}] {r.case['id']} ({r.case['shape']})\n  excerpt: {r.case['excerpt']!r}"
                      f"\n  findings: {r.findings}")
    missed = misses(table)
    print("\ngoals met" if not missed else "\ngoals missed:\n  " + "\n  ".join(missed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
