"""Running the enabled rules over one session (docs/spec.md#gatekeeper, docs/spec.md#gatekeeper-result) and turning the result into a verdict.

`evaluate` and `unbacked_claims` judge one session; `evaluate_columns` and `backed_columns` beside
them are the same judgement over arrays of sessions, for the columnar replay (pipeline/replay/columns.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from pipeline.core.contracts import (
    EvidenceDigest,
    ExecutorOutput,
    GatekeeperError,
    GatekeeperResult,
    ToolInvocation,
    Verdict,
)
from pipeline.core.feature_shapes import Features, claim_target
from pipeline.gatekeeper.features import compute_features
from pipeline.gatekeeper.kinds import RuleContext, RuleOutcome
from pipeline.gatekeeper.prepared import OutputCache
from pipeline.gatekeeper.rules import SchemaRule
from pipeline.gatekeeper.rules_schema import RuleSet
from pipeline.tools.registry import persisted_name
from pipeline.verdict.policy import gatekeeper_floor

_DEFAULT_ARRAYS = ("hypotheses", "recommended_actions", "missing_info")
STATUSES = ("pass", "warn", "fail")  # a GatekeeperResult status by its code in evaluate_columns
Bools = npt.NDArray[np.bool_]


@dataclass
class GateContext:
    session_id: str
    output: ExecutorOutput | None  # the parsed executor output (may be schema-invalid); None if parsing failed
    invocations: Mapping[int, ToolInvocation]  # this session's invocations by id
    lookup_invocation: Callable[[int], ToolInvocation | None]  # any session's invocation by global id
    digests: list[EvidenceDigest] | None = None  # split shape only


@dataclass
class GateOutcome:
    result: GatekeeperResult
    normalized: ExecutorOutput | None  # for the verifier: default arrays present, deprecated fields removed
    features: Features  # threshold-free, JSON-serialisable; pass back as features_cache


def run_gatekeeper(
    ctx: GateContext,
    rules: RuleSet,
    features_cache: Features | None = None,
    outputs: OutputCache | None = None,
) -> GateOutcome:
    features = compute_features(ctx.invocations, ctx.output, ctx.digests, features_cache, outputs)

    def invocation(inv_id: int) -> tuple[str, str] | None:
        inv = ctx.invocations.get(inv_id)
        if inv is None:
            inv = ctx.lookup_invocation(inv_id)
        if inv is None:
            return None
        return inv.session_id, persisted_name(inv.tool_name) or inv.tool_name

    context = RuleContext(ctx.session_id, ctx.output, invocation, ctx.digests, features)
    return GateOutcome(evaluate(context, rules), normalize_structured(ctx.output, rules), features)


def evaluate(context: RuleContext, rules: RuleSet) -> GatekeeperResult:
    """docs/spec.md#gatekeeper-result: any fail -> fail, else any warn -> warn, else pass. Disabled rules do not run."""
    outcomes: list[RuleOutcome] = []
    binding_findings: set[str] = set()  # targets that a blocking rule found something on
    for spec in rules.rules:
        if not spec.enabled:
            continue
        status, findings = context.findings(spec)
        if not findings:
            continue
        # A warn_only rule cannot fail the gatekeeper (law 2: a gatekeeper fail never yields PASS).
        if status == "fail" and spec.downgraded:
            status = "warn"
        outcomes.append((spec.id, status, findings))
        if not spec.downgraded:
            binding_findings.update(f.target for f in findings)
    # A replay keeps the context: when no rule's outcome moved, the previous result object stands
    # (most sessions under most edits), so a replay allocates almost nothing that outlives it.
    last = context.last_result
    if last is None or last[0] != outcomes:
        last = context.last_result = (outcomes, _result(outcomes, unbacked_claims(context, binding_findings)))
    return last[1]


def unbacked_claims(context: RuleContext, flagged: set[str]) -> list[str]:
    """Claim ids none of whose bindings is evidence: every binding was flagged by a
    blocking rule (the warn band of similarity included, and invented content), or could not be
    measured at all. Such a claim is never shown as confirmed and never lets a session PASS."""
    if context.output is None:
        return []
    backed: set[int] = set()
    for target, _, feats in context.bindings:
        if feats is not None and not any(t == target or t.startswith(target + ".") for t in flagged):
            backed.add(int(target[7 : target.index("]")]))  # "claims[3].evidence_bindings[0]" -> 3
    return [claim.claim_id if claim.claim_id is not None else claim_target(ci)
            for ci, claim in enumerate(context.output.claims) if claim.written_as_object and ci not in backed]


@dataclass
class FoundColumns:
    """One enabled rule's findings over arrays, as `evaluate` reads a rule's outcome: per session
    whether it found anything and a fail-level finding; per judged binding and per claim whether
    a finding sits on or in it (None: none can)."""

    found: Bools
    failing: Bools
    bindings: Bools | None = None
    claims: Bools | None = None


@dataclass
class GateColumns:
    """`evaluate` over arrays: per session the status (index into STATUSES) and the failed and the
    warned rules as bits (bit k: rules.rules[k]); per rule that can fail, the sessions it failed in;
    per judged binding whether a blocking rule found something on it (unbacked_claims' `flagged`)."""

    status: npt.NDArray[np.int8]
    failed_bits: npt.NDArray[np.int64]
    warned_bits: npt.NDArray[np.int64]
    flagged: Bools
    failed: dict[str, Bools] = field(default_factory=dict)


def evaluate_columns(rules: RuleSet, found: Mapping[str, FoundColumns], sessions: int, bindings: int) -> GateColumns:
    """evaluate for `sessions` sessions at once from each enabled rule's `found` (a rule left out
    found nothing): a warn_only rule's failures are warnings, any fail fails, else any warn warns;
    a blocking rule's findings on a binding leave it no evidence."""
    failed_any = np.zeros(sessions, dtype=bool)
    warned_any = np.zeros(sessions, dtype=bool)
    out = GateColumns(np.zeros(sessions, dtype=np.int8), np.zeros(sessions, dtype=np.int64),
                      np.zeros(sessions, dtype=np.int64), np.zeros(bindings, dtype=bool))
    for k, spec in enumerate(rules.rules):
        columns = found.get(spec.id)
        if not spec.enabled or columns is None:
            continue
        fail = np.zeros(sessions, dtype=bool) if spec.downgraded else columns.failing
        warn = columns.found & ~fail
        if not spec.downgraded:
            out.failed[spec.id] = fail
            if columns.bindings is not None:
                out.flagged |= columns.bindings
        failed_any |= fail
        warned_any |= warn
        bit = np.int64(1 << k)
        np.bitwise_or(out.failed_bits, bit, out=out.failed_bits, where=fail)
        np.bitwise_or(out.warned_bits, bit, out=out.warned_bits, where=warn)
    out.status[:] = np.where(failed_any, 2, np.where(warned_any, 1, 0))
    return out


def backed_columns(claim_of: npt.NDArray[np.int32], flagged: Bools, claims: int) -> Bools:
    """unbacked_claims over arrays, negated: per claim whether any of its bindings (`claim_of`:
    each measured binding's claim) is evidence, i.e. not `flagged`."""
    backed: Bools = np.bincount(claim_of[~flagged], minlength=claims) > 0
    return backed


def _result(outcomes: list[RuleOutcome], unbacked: list[str]) -> GatekeeperResult:
    failed: list[str] = []
    warned: list[str] = []
    errors: list[GatekeeperError] = []
    for rule_id, status, findings in outcomes:
        (failed if status == "fail" else warned).append(rule_id)
        for finding in findings:
            is_warn = finding.level == "warn" or status == "warn"
            text = finding.text
            message = f"[warn] {text}" if is_warn and status == "fail" else text
            errors.append(GatekeeperError(rule_id=rule_id, target=finding.target, message=message, msg=finding.msg))
    overall: Literal["pass", "warn", "fail"] = "fail" if failed else "warn" if warned else "pass"
    return GatekeeperResult(status=overall, failed_rules=failed, warnings=warned, errors=errors, unbacked_claims=unbacked)


def gate_verdict(result: GatekeeperResult, rules: RuleSet) -> Verdict:
    """Verdict floor from the failed rules' verdictImpact; a fail is never PASS (law 2). The
    verdict policy decides it (pipeline.verdict.policy.gatekeeper_floor); this names the rules' impacts."""
    return gatekeeper_floor(result.failed_rules, {r: rules.impact(r) for r in result.failed_rules})


def normalize_structured(output: ExecutorOutput | None, rules: RuleSet) -> ExecutorOutput | None:
    """docs/spec.md#rule-schema: missing hypotheses / recommended_actions / missing_info -> [], deprecated fields out.
    The typed reading is the same (it reads absent lists as empty); what changes is the stored object."""
    if output is None:
        return None
    spec = rules.get(SchemaRule.id)
    deprecated = spec.params.deprecatedFields if spec is not None and isinstance(spec.params, SchemaRule.Params) else []
    kept = {k: v for k, v in output.raw.items() if k not in deprecated}
    normalized: dict[str, Any]
    try:
        normalized = _json_copy(kept)
    except _NotJson:
        # What a JSON round trip makes of it (tuples become lists).
        normalized = json.loads(json.dumps(kept))
    for name in _DEFAULT_ARRAYS:
        if normalized.get(name) is None:
            normalized[name] = []
    for action in normalized["recommended_actions"] if isinstance(normalized["recommended_actions"], list) else ():
        if isinstance(action, dict) and action.get("evidence_bindings") is None:
            action["evidence_bindings"] = []
    return output.with_raw(normalized)


class _NotJson(Exception):
    pass


_SCALARS = (str, int, float, bool, type(None))


def _json_copy(value: Any) -> Any:
    """Deep copy of a structure parsed from JSON (so its keys are strings); raises _NotJson on a
    value that a JSON round trip would turn into something else (a tuple, a set, an object)."""
    kind = type(value)
    if kind is dict:
        return {k: _json_copy(v) for k, v in value.items()}
    if kind is list:
        return [_json_copy(v) for v in value]
    if kind in _SCALARS:
        return value
    raise _NotJson
