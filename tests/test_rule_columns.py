"""Each rule kind's threshold meaning for one session and for arrays, side by side on the kind
(pipeline/gatekeeper/rules.py), says the same thing; so does the one verdict-matrix function
(pipeline/verdict/policy.py verdict_code) for a scalar and for an array. The whole replay is held
to the per-session replay in tests/test_history_columns.py."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from pipeline.core.config import resource_dir
from pipeline.core.contracts import VERDICT_ORDER
from pipeline.gatekeeper import load_rules
from pipeline.gatekeeper.kinds import RuleSpec
from pipeline.gatekeeper.quote_rules import ExcerptEntitiesRule, ExcerptSimilarityRule
from pipeline.gatekeeper.rules import RULES, DigestRefRule, EvidenceUtilizationRule
from pipeline.verdict.policy import VERDICTS, verdict_code

SCORES = np.round(np.linspace(0.0, 1.0, 41), 3)  # steps of 0.025, thresholds among them


@dataclass
class Facts:
    """ColumnFacts with one binding (and one session) per score."""

    scores: npt.NDArray[np.float64]
    invented: npt.NDArray[np.int16]
    best_cache: dict[tuple[Any, ...], npt.NDArray[np.float64]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        n = len(self.scores)
        self.b_score = np.full(n, np.nan)
        self.b_full = np.zeros(n, dtype=bool)
        self.b_split = np.zeros(n, dtype=np.int32)
        self.b_quote = self.scores
        self.b_summary = np.full(n, np.nan)
        self.b_invented = self.invented
        self.b_entity = self.scores  # one change point per binding: found from it down, a fail
        self.b_entity_low = self.scores
        self.b_entity_points = np.ones(n, dtype=np.int16)
        self.b_entity_fail = np.full(n, 3, dtype=np.int8)
        self.min_coverage = self.scores
        self.min_quote = self.scores


def _spec(rule_id: str, **params: Any) -> RuleSpec:
    spec = load_rules(resource_dir("rules")).with_params(rule_id, **params).get(rule_id)
    assert spec is not None
    return spec


def _levels(found: npt.NDArray[np.bool_], failing: npt.NDArray[np.bool_]) -> list[str | None]:
    return [("fail" if fail else "warn") if hit else None for hit, fail in zip(found, failing, strict=True)]


def test_similarity_and_digest_quote_levels_agree() -> None:
    facts = Facts(SCORES, np.zeros(len(SCORES), dtype=np.int16))
    for pass_at, warn_at in ((0.5, 0.3), (0.8, 0.6), (0.55, 0.55), (1.0, 0.0)):
        sim = _spec(ExcerptSimilarityRule.id, passThreshold=pass_at, warnThreshold=warn_at,
                    compareAgainst=["digest.source_quote"])
        judged = RULES[sim.id].judge_columns(sim, facts, slice(None))
        assert judged is not None and judged.per_binding
        p = sim.params
        assert isinstance(p, ExcerptSimilarityRule.Params)
        assert _levels(judged.found, judged.failing) == [ExcerptSimilarityRule.score_level(p, s) for s in SCORES]
        ref = _spec(DigestRefRule.id, quotePassThreshold=pass_at, quoteWarnThreshold=warn_at)
        judged = RULES[ref.id].judge_columns(ref, facts, slice(None))
        assert judged is not None and not judged.per_binding
        q = ref.params
        assert isinstance(q, DigestRefRule.Params)
        assert _levels(judged.found, judged.failing) == [DigestRefRule.quote_level(q, s) for s in SCORES]


def test_invented_words_agree() -> None:
    counts = np.arange(6, dtype=np.int16)
    facts = Facts(np.full(len(counts), 1.0), counts)
    for tolerated in range(4):
        sim = _spec(ExcerptSimilarityRule.id, inventedTolerated=tolerated, compareAgainst=["digest.source_quote"])
        judged = RULES[sim.id].judge_columns(sim, facts, slice(None))
        assert judged is not None
        p = sim.params
        assert isinstance(p, ExcerptSimilarityRule.Params)
        expected = [ExcerptSimilarityRule.too_many_invented(p, int(c)) for c in counts]
        assert judged.found.tolist() == expected == judged.failing.tolist()
        assert sum(expected) == len(counts) - tolerated - 1


def test_entity_location_and_keyword_coverage_agree() -> None:
    facts = Facts(SCORES, np.zeros(len(SCORES), dtype=np.int16))
    for threshold in (0.0, 0.25, 0.5, 0.9, 1.0):
        ent = _spec(ExcerptEntitiesRule.id, minLocatedScore=threshold)
        judged = RULES[ent.id].judge_columns(ent, facts, slice(None))
        assert judged is not None and judged.unknown is not None and not judged.unknown.any()
        p = ent.params
        assert isinstance(p, ExcerptEntitiesRule.Params)
        assert judged.found.tolist() == [ExcerptEntitiesRule.located(p, s) for s in SCORES]
        util = _spec(EvidenceUtilizationRule.id, minKeywordCoverage=threshold)
        judged = RULES[util.id].judge_columns(util, facts, slice(None))
        assert judged is not None
        u = util.params
        assert isinstance(u, EvidenceUtilizationRule.Params)
        assert judged.found.tolist() == [EvidenceUtilizationRule.too_low(u, s) for s in SCORES]


def test_verdict_code_is_one_function_for_a_session_and_for_arrays() -> None:
    combos = list(itertools.product(range(3), (False, True), range(3), (False, True), range(3)))
    columns = [np.array(column) for column in zip(*combos, strict=True)]
    at_once = verdict_code(*columns)
    one_by_one = [int(verdict_code(*combo)) for combo in combos]
    assert at_once.tolist() == one_by_one
    # The matrix: a PASS needs every term at PASS and a core claim observed directly.
    assert [VERDICTS[c] for c in one_by_one].count("PASS") == 1
    assert one_by_one[combos.index((2, True, 0, False, 0))] == VERDICT_ORDER["REJECT"]
    assert one_by_one[combos.index((0, False, 0, False, 0))] == VERDICT_ORDER["LOW_CONFID"]
