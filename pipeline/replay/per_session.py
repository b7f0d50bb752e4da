"""Re-verdicting stored sessions under changed rules, from cached features only (docs/architecture.md#performance).

A replay never reads a tool output: the rules see the stored executor output, the (session,
tool) of each cited invocation and the features cached when the session ran. `run_gatekeeper`
with that features cache evaluates the same rules on the same facts, so both agree.
"""

from __future__ import annotations

import gc
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from pipeline.core.contracts import (
    ClaimCheck,
    EvidenceDigest,
    ExecutorOutput,
    FormCoverage,
    GatekeeperResult,
    ServiceCoverage,
    ToolInvocation,
    Verdict,
)
from pipeline.core.feature_shapes import Features, source_score
from pipeline.gatekeeper.engine import evaluate
from pipeline.gatekeeper.features import ROOT, valid_ids
from pipeline.gatekeeper.kinds import RuleContext
from pipeline.gatekeeper.rules_schema import RuleSet
from pipeline.tools.registry import persisted_name
from pipeline.verdict.policy import decide_verdict


@dataclass
class ReplayInput:
    session_id: str
    # The executor output as stored (normalized is fine: features keep raw keys). Read into the
    # typed output on the first replay only: loading a long history stays a JSON read.
    structured: dict[str, Any] | None
    parse_status: str  # valid | missing | malformed
    invocations: dict[int, tuple[str, str]]  # cited id -> (session_id, tool_name), see cited_invocation_ids
    features: Features  # GateOutcome.features stored with the session
    digests: list[EvidenceDigest] | None
    old_status: str
    old_verdict: str
    verifier_verdict: Verdict | None = None  # the verifier's own verdict, before the gatekeeper's influence
    old_failed_rules: list[str] = field(default_factory=list)
    old_warnings: list[str] = field(default_factory=list)
    # What the verdict policy weighs besides the gatekeeper, as stored with the session.
    claim_checks: list[ClaimCheck] = field(default_factory=list)
    coverage: list[ServiceCoverage] = field(default_factory=list)
    failed_tools: list[ToolInvocation] = field(default_factory=list)
    form: FormCoverage | None = None
    # Built on the first replay and kept: it remembers facts and per-rule findings across replays,
    # so the fields above must not change once the input has been replayed.
    _context: RuleContext | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def output(self) -> ExecutorOutput | None:
        return self.rule_context().output

    def rule_context(self) -> RuleContext:
        if self._context is None:
            table = {i: (session, persisted_name(tool) or tool) for i, (session, tool) in self.invocations.items()}
            features: Features = self.features if ROOT in self.features else {ROOT: {"raw_keys": []}, **self.features}
            output = ExecutorOutput.read(self.structured) if isinstance(self.structured, dict) else None
            self._context = RuleContext(self.session_id, output, table.get, self.digests, features)
        return self._context


@dataclass
class ReplayRow:
    session_id: str
    old_status: str
    new_status: str
    old_verdict: str
    projected_verdict: Verdict
    rules_responsible: list[str]
    changed: bool
    result: GatekeeperResult


def cited_invocation_ids(structured: Any, digests: list[EvidenceDigest] | None) -> set[int]:
    """Every invocation id a session's claims and digests cite: what ReplayInput.invocations must cover.
    Read from the stored JSON (the ids ExecutorBinding.source_invocation_ids keeps), so that loading
    the whole history builds no typed output."""
    ids: set[int] = set()
    claims = structured.get("claims") if isinstance(structured, dict) else None
    for claim in claims if isinstance(claims, list) else ():
        bindings = claim.get("evidence_bindings") if isinstance(claim, dict) else None
        for binding in bindings if isinstance(bindings, list) else ():
            if isinstance(binding, dict):
                ids.update(valid_ids(binding.get("source_invocation_ids")))
    for digest in digests or ():
        ids.update(valid_ids(digest.source_invocation_ids))
    return ids


def project_verdict(result: GatekeeperResult, rules: RuleSet, item: ReplayInput) -> Verdict:
    """The verdict policy over the stored session with the replayed gatekeeper result."""
    impacts = {r: rules.impact(r) for r in {*result.failed_rules, *(e.rule_id for e in result.errors)}}
    return decide_verdict(parse_status=item.parse_status, structured=item.output, claim_checks=item.claim_checks,
                          gatekeeper=result, rule_impacts=impacts, entity_rules=rules.entity_rules,
                          verifier_verdict=item.verifier_verdict, coverage=item.coverage, form=item.form, invocations=item.failed_tools).verdict


def replay_one(item: ReplayInput, rules: RuleSet) -> GatekeeperResult:
    return evaluate(item.rule_context(), rules)


@contextmanager
def gc_paused() -> Iterator[None]:
    """No garbage collection while a replay builds its many small objects: they all stay alive
    (rows, results, the findings an input remembers), so the collector's passes over a large
    heap find nothing to free and cost as much as the replay itself."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def replay(inputs: Iterable[ReplayInput], rules: RuleSet) -> list[ReplayRow]:
    with gc_paused():
        return [_replay_row(item, rules) for item in inputs]


def _replay_row(item: ReplayInput, rules: RuleSet) -> ReplayRow:
    result = replay_one(item, rules)
    verdict = project_verdict(result, rules, item)
    new_rules = set(result.failed_rules) | set(result.warnings)
    old_rules = set(item.old_failed_rules) | set(item.old_warnings)
    if old_rules or item.old_status == "pass":
        responsible = sorted(new_rules ^ old_rules)
    else:
        responsible = sorted(new_rules)
    changed = item.old_status != result.status or item.old_verdict != verdict
    return ReplayRow(item.session_id, item.old_status, result.status, item.old_verdict, verdict, responsible, changed, result)


def summarize(rows: list[ReplayRow]) -> str:
    """One line for the Rules page / CLI: how many sessions change, and how."""
    status = Counter(f"{r.old_status}->{r.new_status}" for r in rows if r.old_status != r.new_status)
    verdict = Counter(f"{r.old_verdict}->{r.projected_verdict}" for r in rows if r.old_verdict != r.projected_verdict)
    return summary_line(len(rows), sum(r.changed for r in rows), status, verdict)


def summary_line(total: int, changed: int, status: Counter[str], verdict: Counter[str]) -> str:
    """The summary from its counts (the columnar replay counts without building rows)."""
    parts = [f"{total} sessions replayed, {changed} changed"]
    if status:
        parts.append("status " + ", ".join(f"{k} {v}" for k, v in sorted(status.items())))
    if verdict:
        parts.append("verdict " + ", ".join(f"{k} {v}" for k, v in sorted(verdict.items())))
    return "; ".join(parts)


def similarity_scores(features: Iterable[Features]) -> list[float]:
    """Every binding's excerpt-vs-output similarity from cached features (for a histogram)."""
    scores = []
    for feats in features:
        for target, entry in feats.items():
            if target.startswith("claims["):
                score = source_score(entry)
                if score is not None:
                    scores.append(score)
    return scores
