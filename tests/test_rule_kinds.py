"""A rule kind is one class: declared here, it loads from the rule files, runs, sets the verdict
and gets a Rules-page form, with no other code touched."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pipeline.core.contracts import ExecutorOutput
from pipeline.frontends.views import rules as rules_view
from pipeline.gatekeeper import GateContext, RulesError, gate_verdict, load_rules_from_text, run_gatekeeper
from pipeline.gatekeeper.kinds import (
    Count,
    Finding,
    RuleContext,
    RuleKind,
    RuleParams,
    RuleResult,
    RuleSpec,
    params_of,
    rule_kind,
)
from pipeline.gatekeeper.rules import RULES

RULES_DIR = Path(__file__).resolve().parent.parent / "rules"
INDEX = (RULES_DIR / "index.yaml").read_text(encoding="utf-8")
METADATA = (RULES_DIR / "metadata.yaml").read_text(encoding="utf-8")


@pytest.fixture
def registry() -> Iterator[dict[str, RuleKind]]:
    """The registry as it was before the test's kinds registered themselves."""
    before = dict(RULES)
    yield RULES
    RULES.clear()
    RULES.update(before)


def _declare_claim_count() -> type[RuleKind]:
    @rule_kind
    class ClaimCountRule(RuleKind):
        id = "claim.count"
        name = "Claim Count Check"
        description = "an answer makes few enough claims to be reviewed"
        severity = "error"
        verdict_impact = "reject_on_fail"
        replay = "stored"  # its findings move with no threshold the history's arrays compare

        class Params(RuleParams):
            maxClaims: Count

            def problems(self) -> Iterator[tuple[str, str]]:
                if self.maxClaims == 0:
                    yield "maxClaims", "0 would refuse every answer"

        def neutered_by(self, spec: RuleSpec) -> list[str]:
            return []  # every count is bounded: more claims than maxClaims always fail

        def validate(self, context: RuleContext, metadata: RuleSpec) -> RuleResult:
            p = params_of(metadata, ClaimCountRule.Params)
            out = RuleResult(self.id)
            claims = context.output.claims if context.output is not None else []
            if len(claims) > p.maxClaims:
                out.findings.append(Finding("claims", f"{len(claims)} claims, more than maxClaims {p.maxClaims}"))
            return out

    return ClaimCountRule


def _files(params: str = "maxClaims: 1") -> tuple[str, str]:
    # Only id in the index and only params in the metadata: the rest are the class's defaults.
    index = INDEX + "  - id: claim.count\n"
    metadata = METADATA + f"  claim.count:\n    params: {{{params}}}\n"
    return index, metadata


def _claim(n: int) -> dict:
    return {"claim_id": f"c{n}", "claim_type": "symptom", "claim_text": "payment-service times out",
            "support_level": "direct", "evidence_bindings": []}


def test_a_kind_declared_in_one_class_loads_runs_and_decides_the_verdict(registry):
    _declare_claim_count()
    rules = load_rules_from_text(*_files())
    spec = rules.get("claim.count")
    assert spec is not None and spec.enabled
    assert (spec.name, spec.description) == ("Claim Count Check", "an answer makes few enough claims to be reviewed")
    assert (spec.severity, spec.verdict_impact) == ("error", "reject_on_fail")
    assert spec.params.model_dump() == {"maxClaims": 1}

    structured = {"answer_version": "executor_evidence_v2", "claims": [_claim(1), _claim(2)]}
    outcome = run_gatekeeper(GateContext("s-1", ExecutorOutput.read(structured), {}, lambda _id: None), rules)
    ours = [e for e in outcome.result.errors if e.rule_id == "claim.count"]
    assert [(e.target, e.message) for e in ours] == [("claims", "2 claims, more than maxClaims 1")]
    assert "claim.count" in outcome.result.failed_rules
    assert gate_verdict(outcome.result, rules) == "REJECT"
    # Retuned from the Rules page: the same session passes this rule at a higher limit.
    relaxed = rules.with_params("claim.count", maxClaims=2)
    outcome = run_gatekeeper(GateContext("s-1", ExecutorOutput.read(structured), {}, lambda _id: None), relaxed)
    assert "claim.count" not in outcome.result.failed_rules
    # The Rules page form is read from the class's Params.
    assert [(f.name, f.kind, f.value) for f in rules_view.param_fields(spec)] == [("maxClaims", "count", 1)]


@pytest.mark.parametrize("params, message", [
    ("maxClaims: '3'", "metadata.yaml: ruleMetadata.claim.count.params.maxClaims: Input should be a valid integer"),
    ("maxClaims: 0", "metadata.yaml: ruleMetadata.claim.count.params.maxClaims: 0 would refuse every answer"),
    ("maxClaims: -1", "metadata.yaml: ruleMetadata.claim.count.params.maxClaims: -1 is negative"),
    ("maxClaims: 2, maxWords: 9", "metadata.yaml: ruleMetadata.claim.count.params.maxWords: unknown parameter"),
    ("", "metadata.yaml: ruleMetadata.claim.count.params.maxClaims: missing"),
])
def test_the_files_are_validated_against_the_declared_params(registry, params, message):
    _declare_claim_count()
    with pytest.raises(RulesError) as info:
        load_rules_from_text(*_files(params))
    (found,) = info.value.messages
    assert found.startswith(message)


def test_without_the_class_the_rule_id_has_no_implementation():
    with pytest.raises(RulesError) as info:
        load_rules_from_text(*_files())
    assert info.value.messages[0].startswith("index.yaml: rules[7].id: unknown rule id 'claim.count'")


def test_a_wrong_declaration_fails_at_import(registry):
    _declare_claim_count()
    with pytest.raises(TypeError, match="registered twice"):
        _declare_claim_count()

    class NoImpact(RuleKind):
        id, name, description, severity = "claim.no_impact", "x", "x", "error"

    with pytest.raises(TypeError, match="verdict_impact"):
        rule_kind(NoImpact)

    class LooseWarning(RuleKind):
        id, name, description, severity, verdict_impact = "claim.loose", "x", "x", "warning", "reject_on_fail"

    with pytest.raises(TypeError, match="warn_only"):
        rule_kind(LooseWarning)
    assert "claim.no_impact" not in RULES and "claim.loose" not in RULES


def test_a_kind_without_neutered_by_cannot_register(registry):
    class Unsaid(RuleKind):
        id, name, description, severity, verdict_impact = "claim.unsaid", "x", "x", "error", "reject_on_fail"

    with pytest.raises(TypeError, match="neutered_by"):
        rule_kind(Unsaid)
    assert "claim.unsaid" not in RULES


def test_a_kind_that_does_not_say_how_the_replay_judges_it_cannot_register(registry):
    class Unplaced(RuleKind):
        id, name, description, severity, verdict_impact = "claim.unplaced", "x", "x", "error", "reject_on_fail"

        def neutered_by(self, spec: RuleSpec) -> list[str]:
            return []

    with pytest.raises(TypeError, match="must declare replay"):
        rule_kind(Unplaced)
    Unplaced.replay = "columns"  # judged from the history's numbers, with nothing to judge them
    with pytest.raises(TypeError, match="needs judge_columns"):
        rule_kind(Unplaced)
    Unplaced.replay, Unplaced.column_params = "stored", frozenset({"maxClaims"})
    with pytest.raises(TypeError, match="names no parameter: maxClaims"):
        rule_kind(Unplaced)
    assert "claim.unplaced" not in RULES


SHIPPED = load_rules_from_text(INDEX, METADATA)


@pytest.mark.parametrize("rule_id, params, named", [
    ("evidence.excerpt_similarity", {"passThreshold": 0.0, "warnThreshold": 0.0, "inventedTolerated": 100000},
     "(warnThreshold 0.0, inventedTolerated 100000)"),
    ("evidence.excerpt_similarity", {"warnThreshold": 0.0}, "(warnThreshold 0.0)"),
    ("evidence.excerpt_similarity", {"compareAgainst": []}, "(compareAgainst [])"),
    ("evidence.excerpt_similarity", {"inventedMinLetters": 99, "inventedMinCjkRun": 99},
     "(inventedMinLetters 99, inventedMinCjkRun 99)"),
    ("evidence.excerpt_entities", {"kinds": []}, "(kinds [])"),
    ("evidence.digest_ref", {"requireDigestId": False}, "(requireDigestId false)"),
    ("evidence.digest_ref", {"quotePassThreshold": 0.0, "quoteWarnThreshold": 0.0}, "(quoteWarnThreshold 0.0)"),
])
def test_a_gating_rule_that_cannot_fail_counts_as_off(rule_id, params, named):
    assert SHIPPED.ungated_by() == []
    neutered = SHIPPED.with_params(rule_id, **params)
    assert neutered.ungated_by() == [f"{rule_id} {named}"]
    # Tuned but still able to fail: gated.
    assert SHIPPED.with_params("evidence.excerpt_similarity", warnThreshold=0.1, inventedTolerated=3).ungated_by() == []


@pytest.mark.parametrize("rule_id, params, named", [
    ("claim.hallucination_phrases", {"blacklist": []}, ["blacklist []"]),
    ("claim.evidence_utilization", {"minKeywordCoverage": 0.0}, ["minKeywordCoverage 0.0"]),
    ("schema.executor_v2", {"requiredFields": [], "claimRequiredFields": []}, []),  # no output still fails
    ("evidence.invocation_ref", {}, []),
])
def test_each_other_kind_says_when_it_cannot_fail(rule_id, params, named):
    rules = SHIPPED.with_params(rule_id, **params) if params else SHIPPED
    spec = rules.get(rule_id)
    assert spec is not None and RULES[rule_id].neutered_by(spec) == named
    assert rules.ungated_by() == []  # these do not stop forged quotes: no ungated mark from them
