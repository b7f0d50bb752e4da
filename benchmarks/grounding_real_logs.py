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

- faithful: passed = share neither flagged nor kept from PASS (goal >= 99.5%);
- mutated: caught = share flagged (goal >= 98% for every class), and how many end PASS (goal 0);
- every case: location agreed = the verifier payload's window shows the quote in the lines where
  the gatekeeper's matcher located it, and calls it found exactly when the gatekeeper found it by
  structure (goal 100%).

The goals hold for each genre of log on its own (one-line, JSON per line, web access, multi-line
trace, CI console); --by genre prints the genres side by side. The held-out genres (key=value audit,
database server log, slow query log, Redis server log) have their own corpus:
--corpus real_logs_corpus_held_out.jsonl. With --offline-verifier the bundle
carries no verifier output and the offline verifier judges each claim on the payload's windows.

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

from real_logs_corpus import ALL_GENRES, CORPUS, FAITHFUL, GENRE_OF, MUTATED, SHAPES, SYSTEMS, lines, norm, output_text  # noqa: E402

from pipeline.bundles.check import check_bundle  # noqa: E402
from pipeline.bundles.session_bundle import SessionBundle, parse_bundle  # noqa: E402
from pipeline.core.config import Settings  # noqa: E402
from pipeline.gatekeeper import RuleSet, load_rules  # noqa: E402
from pipeline.gatekeeper.features import located_lines  # noqa: E402
from pipeline.llm import make_provider  # noqa: E402
from pipeline.runs.judge import Evaluation  # noqa: E402
from pipeline.stages.verifier import build_payload  # noqa: E402

GOALS = {"faithful passed": 0.995, "mutated caught": 0.98, "mutated ending PASS": 0, "location agreed": 1.0}
SESSION = "real-logs"


@dataclass
class Outcome:
    case: dict
    flagged: bool
    ends_pass: bool
    findings: list[str]
    agrees: bool = True  # the verifier's window shows the quote where the gatekeeper located it


def load_cases(path: Path = CORPUS, genres: tuple[str, ...] = tuple(ALL_GENRES)) -> list[dict]:
    """The corpus's cases of these genres, each with its system's genre."""
    cases = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [{**c, "genre": GENRE_OF[c["system"]]} for c in cases if GENRE_OF[c["system"]] in genres]


@cache
def _invocation(system: str, shape: str) -> dict[str, Any]:
    number = list(SYSTEMS).index(system) * len(SHAPES) + SHAPES.index(shape) + 1
    return {"id": number, "session_id": SESSION, "tool_name": "query_logs", "model_tool_name": "queryLogs",
            "arguments": {"source": f"loghub/{system}"}, "status": "ok", "output": output_text(system, shape)}


def bundle_of(case: dict, *, cite_records: bool = False, judged: bool = True) -> dict[str, Any]:
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
    bundle: dict[str, Any] = {
        "bundle_version": 1,
        "session": {"id": SESSION, "question": f"What do the {case['system']} logs show?", "shape": "single",
                    "provider": "yardstick", "model": "none"},
        "tool_invocations": [inv],
        "executor_raw_output": json.dumps(executor, ensure_ascii=False),
        "verifier_output": {"verdict": "PASS", "groundedness_score": 1.0,
                            "claim_checks": [{"claim_id": "c1", "verification": "direct_observation"}]},
        "composer_output": {"answer_summary": excerpt, "user_facing_answer": excerpt},
    }
    if not judged:
        del bundle["verifier_output"]  # the offline verifier judges the claim on the payload's windows
    return bundle


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


def run_cases(cases: list[dict], rules: RuleSet | None = None, *, cite_records: bool = False,
              judged: bool = True) -> list[Outcome]:
    """Check every case; with judged=False the bundle carries no verifier output and the offline
    verifier judges the claim on the windows of the payload (what a deployment without a model does)."""
    settings = Settings()
    rules = rules or load_rules(ROOT / "rules")
    provider = make_provider(settings)
    results = []
    for case in cases:
        bundle = parse_bundle(bundle_of(case, cite_records=cite_records, judged=judged))
        ev = check_bundle(bundle, settings=settings, rules=rules, provider=provider)
        gate = ev.gatekeeper_result
        unbacked = bool(gate.unbacked_claims)
        findings = [f"{e.rule_id}: {e.message}" for e in gate.errors] + (["claim unbacked"] if unbacked else [])
        agrees = _agrees(ev, bundle)
        if not agrees:
            findings.append("the verifier's window and the gatekeeper's location differ")
        results.append(Outcome(case, bool(gate.errors) or unbacked, ev.verdict == "PASS", findings, agrees))
    return results


def _agrees(ev: Evaluation, bundle: SessionBundle) -> bool:
    """Whether the verifier payload's window shows the quote where the gatekeeper located it: the
    same lines, and "found" exactly when the gatekeeper found it by structure."""
    source = ev.features.get("claims[0].evidence_bindings[0]", {}).get("sources", {}).get("output") or {}
    payload = build_payload(question=bundle.session.question, raw_output=bundle.executor_raw_output,
                            parse_status=ev.parse_status, structured=ev.output, invocations=bundle.tool_invocations,
                            digests=None, gatekeeper_result=ev.gatekeeper_result, retry_context=None,
                            features=ev.features)
    window = payload["cited_evidence"][0]["bindings"][0]["windows"][0]
    inv = bundle.tool_invocations[0]
    where = located_lines(inv.id, inv.output, source.get("spans") or [])
    shown = [line.strip("…") for line in window.get("anchor", [])]
    same_lines = all(any(s in line for line in where) for s in shown) and len(shown) == len(where[: len(shown)])
    return bool(window.get("found")) == (source.get("covered") == 1.0) and (not where or same_lines)


def summarize(results: list[Outcome], key: str = "class") -> dict[str, dict[str, float]]:
    """Per class (or system, or shape): n, and passed (faithful) or caught and ends_pass (mutated)."""
    groups: dict[tuple[bool, str], list[Outcome]] = defaultdict(list)
    for r in results:
        groups[(r.case["faithful"], r.case[key])].append(r)
    order = {"class": (*FAITHFUL, *MUTATED, MISCITED), "system": tuple(SYSTEMS), "shape": SHAPES,
             "genre": tuple(ALL_GENRES)}[key]
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


def per_genre(results: list[Outcome]) -> dict[str, dict[str, dict[str, float]]]:
    """The per-class table of each genre of log: the goals hold genre by genre."""
    return {genre: summarize([r for r in results if r.case["genre"] == genre])
            for genre in ALL_GENRES if any(r.case["genre"] == genre for r in results)}


def _row(rows: list[Outcome], faithful: bool) -> dict[str, float]:
    agree = sum(r.agrees for r in rows) / len(rows)
    if faithful:
        return {"n": len(rows), "passed": sum(not r.flagged and r.ends_pass for r in rows) / len(rows), "agree": agree}
    return {"n": len(rows), "caught": sum(r.flagged for r in rows) / len(rows),
            "ends_pass": sum(r.ends_pass for r in rows), "agree": agree}


def misses(table: dict[str, dict[str, float]]) -> list[str]:
    """The rows of a per-class table that miss a goal."""
    out = []
    for name, row in table.items():
        if "passed" in row and row["passed"] < GOALS["faithful passed"]:
            out.append(f"{name}: passed {row['passed']:.1%} < {GOALS['faithful passed']:.1%}")
        if "caught" in row and row["caught"] < GOALS["mutated caught"]:
            out.append(f"{name}: caught {row['caught']:.1%} < {GOALS['mutated caught']:.0%}")
        if row.get("ends_pass"):
            out.append(f"{name}: {int(row['ends_pass'])} mutated quote(s) end PASS")
        if row.get("agree", 1.0) < GOALS["location agreed"]:
            out.append(f"{name}: the verifier and the gatekeeper agree on {row['agree']:.1%} of locations")
    return out


def print_table(table: dict[str, dict[str, float]]) -> None:
    print(f"| {'class':<28} | {'n':>5} | {'faithful passed':>15} | {'mutation caught':>15} | {'mutated ending PASS':>19} "
          f"| {'location agreed':>15} |")
    print(f"|{'-' * 30}|{'-' * 7}|{'-' * 17}|{'-' * 17}|{'-' * 21}|{'-' * 17}|")
    for name, row in table.items():
        passed = f"{row['passed']:.1%}" if "passed" in row else ""
        caught = f"{row['caught']:.1%}" if "caught" in row else ""
        ends = f"{int(row['ends_pass'])}" if "ends_pass" in row else ""
        print(f"| {name:<28} | {int(row['n']):>5} | {passed:>15} | {caught:>15} | {ends:>19} | {row['agree']:>15.1%} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--show", type=int, default=0, help="print this many misjudged cases per class")
    parser.add_argument("--cite-records", action="store_true",
                        help="bindings also cite the records they quote (source_record_ids), and every exact "
                             "quote is checked once more citing another record")
    parser.add_argument("--by", choices=("system", "shape", "genre"), action="append", default=[],
                        help="also print the table per system, output shape or genre of log")
    parser.add_argument("--genre", choices=tuple(ALL_GENRES), action="append", default=[],
                        help="check only the cases of this genre of log (default: every genre)")
    parser.add_argument("--offline-verifier", action="store_true",
                        help="let the offline verifier judge each claim instead of the bundle's accepting one")
    args = parser.parse_args()
    cases = load_cases(args.corpus, tuple(args.genre) or tuple(ALL_GENRES))
    results = run_cases(cases + miscited(cases) if args.cite_records else cases, cite_records=args.cite_records,
                        judged=not args.offline_verifier)
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
    missed = [f"{genre}: {miss}" for genre, t in per_genre(results).items() for miss in misses(t)]
    print("\ngoals met" if not missed else "\ngoals missed:\n  " + "\n  ".join(missed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
