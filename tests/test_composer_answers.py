"""The labelled composer answers (tests/data/composer_answers.yaml) meet the composer guard's goals.

Faithful prose (facts joined in one sentence, restated in other words or another order, in zh and
en) is kept; an answer that changes a number, moves a fact onto another service, invents a code
or a fact, restates what the filter kept away or states a cause the verdict does not allow is
replaced by the fixed template, every one of them. Counts, never times.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import composer_answers  # noqa: E402


@pytest.fixture(scope="module")
def results() -> list[composer_answers.Outcome]:
    return composer_answers.run_cases(composer_answers.load_cases())


def test_the_set_is_large_varied_and_bilingual(results) -> None:
    cases = [r.case for r in results]
    assert len(cases) >= 200
    by_label = Counter((c.label, c.language) for c in cases)
    assert min(by_label.values()) >= 40, by_label
    classes = Counter((c.label, c.cls) for c in cases)
    for cls in ("joined", "paraphrase", "reordered", "zh"):
        assert classes[("faithful", cls)] >= 10, cls
    for cls in ("changed_number", "swapped_service", "invented_code", "invented_fact", "restated_rejected",
                "root_cause_under_reject", "hypothesis_as_fact", "negation"):
        assert classes[("unfaithful", cls)] >= 5, cls
    assert {c.composer_input.verdict for c in cases} == {"PASS", "LOW_CONFID", "REJECT"}


def test_faithful_answers_are_kept(results) -> None:
    faithful = [r for r in results if r.case.label == "faithful"]
    replaced = [(r.case.name, [v.kind for v in r.guard.violations]) for r in faithful if not r.kept]
    assert 1 - len(replaced) / len(faithful) >= composer_answers.GOALS["faithful kept"], replaced


def test_no_unfaithful_answer_is_kept(results) -> None:
    kept = [(r.case.name, r.case.cls) for r in results if r.case.label == "unfaithful" and r.kept]
    assert kept == []


def test_a_replaced_answer_says_why(results) -> None:
    for r in results:
        if not r.kept:
            assert r.guard.violations and r.guard.msg is not None and r.guard.msg.code.startswith("guard."), r.case.name
