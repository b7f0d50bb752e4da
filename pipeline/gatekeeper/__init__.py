"""Gatekeeper (docs/spec.md#gatekeeper): deterministic rules between the executor output and the verifier."""

from pipeline.core.errors import RulesError
from pipeline.gatekeeper.engine import (
    GateContext,
    GateOutcome,
    evaluate,
    gate_verdict,
    normalize_structured,
    run_gatekeeper,
)
from pipeline.gatekeeper.kinds import RuleSpec
from pipeline.gatekeeper.rules_schema import RuleSet, load_rules, load_rules_from_text

__all__ = [
    "GateContext",
    "GateOutcome",
    "RuleSet",
    "RuleSpec",
    "RulesError",
    "evaluate",
    "gate_verdict",
    "load_rules",
    "load_rules_from_text",
    "normalize_structured",
    "run_gatekeeper",
]
