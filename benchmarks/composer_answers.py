"""Run the labelled composer answers through the composer guard and report per class.

    python benchmarks/composer_answers.py [--answers tests/data/composer_answers.yaml] [--show 5]

Each answer is checked against its composer input by the same function that decides, in a
session, whether the composer's answer is shown or replaced by the fixed template. An answer is
*kept* when that function lets it through. Goals: faithful kept >= 95% (overall), unfaithful
kept 0 (every class).
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pipeline.core.contracts import ComposerGuardResult, ComposerInput, ComposerOutput, FilteredItem  # noqa: E402
from pipeline.stages.composer_guard import judge_answer  # noqa: E402
from pipeline.text.primitives import detect_language  # noqa: E402

ANSWERS = ROOT / "tests" / "data" / "composer_answers.yaml"
GOALS = {"faithful kept": 0.95, "unfaithful kept": 0.0}
_SECTIONS = ("key_facts", "other_observations", "possible_causes", "evidence_gaps")


@dataclass
class Case:
    name: str
    label: str
    cls: str
    why: str
    language: str
    composer_input: ComposerInput
    filtered: list[FilteredItem]
    services: list[str]
    output: ComposerOutput


@dataclass
class Outcome:
    case: Case
    guard: ComposerGuardResult

    @property
    def kept(self) -> bool:
        return self.guard.status == "pass"


def load_cases(path: Path = ANSWERS) -> list[Case]:
    data: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    cases = []
    for n, answer in enumerate(data["answers"]):
        source = data["inputs"][answer["in"]]
        text = answer["text"].strip()
        sections = answer.get("sections") or {}
        output = ComposerOutput(answer_summary=answer.get("summary") or text.splitlines()[0],
                                user_facing_answer=text, **{k: sections.get(k, []) for k in _SECTIONS})
        ci = ComposerInput.model_validate(source["composer_input"])
        cases.append(Case(
            name=f"{answer['in']}#{n}", label=answer["label"], cls=answer["class"], why=answer["why"],
            language=detect_language(ci.original_query), composer_input=ci,
            filtered=[FilteredItem(reason="", **f) for f in source.get("filtered") or []],
            services=list(source.get("services") or []), output=output))
    return cases


def run_cases(cases: list[Case]) -> list[Outcome]:
    return [Outcome(c, judge_answer(c.output, c.composer_input, services=c.services, filtered=c.filtered))
            for c in cases]


def summarize(results: list[Outcome]) -> dict[str, dict[str, float]]:
    """Rows "<label>: <class>", "<label>: <language>" and "<label>: all", each with n and kept (share)."""
    groups: dict[str, list[Outcome]] = defaultdict(list)
    for r in sorted(results, key=lambda r: (r.case.label, r.case.cls)):
        groups[f"{r.case.label}: {r.case.cls}"].append(r)
    for r in results:
        groups[f"{r.case.label}: lang {r.case.language}"].append(r)
        groups[f"{r.case.label}: all"].append(r)
    return {name: {"n": len(rows), "kept": sum(r.kept for r in rows) / len(rows)} for name, rows in groups.items()}


def print_table(table: dict[str, dict[str, float]]) -> None:
    print(f"{'label: class':>36} {'n':>5} {'kept':>8}")
    for name, row in table.items():
        print(f"{name:>36} {int(row['n']):5d} {row['kept']:8.1%}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answers", type=Path, default=ANSWERS)
    parser.add_argument("--show", type=int, default=0, help="print up to N misjudged answers per label")
    args = parser.parse_args()
    results = run_cases(load_cases(args.answers))
    print_table(summarize(results))
    for label, wrong in (("faithful", False), ("unfaithful", True)):
        misjudged = [r for r in results if r.case.label == label and r.kept == wrong]
        for r in misjudged[: args.show]:
            print(f"\n[{label} {'kept' if r.kept else 'replaced'}] {r.case.name} ({r.case.cls}): {r.case.why}")
            print("  " + r.case.output.user_facing_answer.replace("\n", "\n  "))
            for v in r.guard.violations:
                print(f"  -> {v.kind}: {v.token} [{v.field}]")


if __name__ == "__main__":
    main()
