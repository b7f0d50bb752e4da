"""The grounding regression corpus (benchmarks/grounding_corpus.jsonl) keeps its targets.

A regression suite on the project's own incidents, with mutations drawn from the
rule's own word lists (see its generator), so it guards against losing what worked rather than
measuring fidelity; tests/test_grounding_real_logs.py is the independent yardstick. All of it runs
(a few seconds): faithful excerpts pass, every mutation class is caught, and no invented or
fabricated excerpt lets a session end PASS. Counts, never times.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import grounding  # noqa: E402
import grounding_corpus  # noqa: E402

from pipeline.gatekeeper import load_rules  # noqa: E402


@pytest.fixture(scope="module")
def cases() -> list[dict]:
    return grounding.load_cases()


@pytest.fixture(scope="module")
def table(cases) -> dict[str, dict[str, float]]:
    return grounding.summarize(grounding.run_cases(cases, load_rules(grounding.ROOT / "rules")))


def test_corpus_is_what_the_generator_makes_from_the_bundled_data(cases):
    assert grounding_corpus.generate() == cases
    assert len(cases) >= 1000
    by_class = Counter((c["class"], c["lang"]) for c in cases)
    for cls in (*grounding_corpus.FAITHFUL, *grounding_corpus.MUTATED):
        assert by_class[(cls, "en")] + by_class[(cls, "zh")] >= 20, cls
    # Chinese and English both, for every class the data lets us mutate both ways.
    for cls in ("verbatim", "elided", "adjacent records", "number changed", "invented content", "fabricated",
                "negation added", "negation dropped", "antonym flipped", "log level changed"):
        assert by_class[(cls, "en")] and by_class[(cls, "zh")], cls


def test_faithful_excerpts_pass(table):
    assert table["all faithful"]["passed"] >= 0.99
    for cls in grounding_corpus.FAITHFUL:
        assert table[cls]["passed"] >= 0.97, (cls, table[cls])


def test_every_mutation_class_is_caught(table):
    for cls in grounding_corpus.MUTATED:
        assert table[cls]["caught"] >= 0.97, (cls, table[cls])


def test_no_invented_or_fabricated_excerpt_ends_pass(table):
    assert table["invented content"]["ends_pass"] == 0
    assert table["fabricated"]["ends_pass"] == 0
