"""Retry round (retry.max_rounds = 2): a LOW_CONFID round starts one more collection round."""

from __future__ import annotations

import json
from typing import Any

from helpers import CPU_QUESTION

from pipeline.core.config import Settings
from pipeline.llm.offline.provider import OfflineProvider
from pipeline.runs.session import run_session
from pipeline.store import Store


class FirstRoundGuesses(OfflineProvider):
    """Round 1 states a fact its evidence does not hold; later rounds run the real offline engine
    unless `keep_guessing`, in which case they repeat an unprovable claim."""

    def __init__(self, settings: Settings, claim_text: str, keep_guessing: bool = False):
        super().__init__(settings)
        self.claim_text, self.keep_guessing = claim_text, keep_guessing
        self.retry_contexts: list[Any] = []

    def diagnose(self, ctx, question, plan, digests, invocations, retry_context) -> str:  # noqa: ANN001
        self.retry_contexts.append(retry_context)
        if ctx.round > 1 and not self.keep_guessing:
            return super().diagnose(ctx, question, plan, digests, invocations, retry_context)
        alerts = next(i for i in invocations if i.tool_name == "query_metrics")
        return json.dumps({"answer_version": "executor_evidence_v2", "claims": [{
            "claim_id": "claim-1", "claim_type": "symptom", "support_level": "direct",
            "claim_text": self.claim_text,
            "evidence_bindings": [{"source_type": "tool_trace", "tool_name": "query_metrics",
                                   "source_invocation_ids": [alerts.id], "evidence_excerpt": "HighCPUUsage"}]}]})


def _two_rounds(settings: Settings) -> Settings:
    return settings.model_copy(update={"retry": settings.retry.model_copy(update={"max_rounds": 2}),
                                       "digest": settings.digest.model_copy(update={"enabled": False})})


def test_retry_round_closes_the_gap(settings: Settings, store: Store) -> None:
    provider = FirstRoundGuesses(settings, "payment-service logged a request timeout on POST /api/pay")
    result = run_session(CPU_QUESTION, settings=_two_rounds(settings), store=store, provider=provider)
    first_ctx, second_ctx = provider.retry_contexts
    assert first_ctx is None and second_ctx.round == 2
    assert any("/api/pay" in c for c in second_ctx.unsupported_claims)
    row = store.get_session(result.session_id)
    assert row["rounds"] == 2
    assert len(row["self_evaluation"]["rounds"]) == 1, "the audit keeps the first round"
    assert row["self_evaluation"]["rounds"][0]["verdict"] == "LOW_CONFID"
    assert {inv.round for inv in store.invocations(result.session_id)} == {1, 2}
    assert result.evaluation.verifier_output.retry_gaps_closed is True
    assert result.verdict == "PASS"


def test_retry_round_that_fails_to_close_the_gap(settings: Settings, store: Store) -> None:
    provider = FirstRoundGuesses(settings, "the disk of the pay host is completely full", keep_guessing=True)
    result = run_session(CPU_QUESTION, settings=_two_rounds(settings), store=store, provider=provider)
    assert result.evaluation.verifier_output.retry_gaps_closed is False
    assert result.verdict == "LOW_CONFID"
    assert any(m.code == "policy.retry_open" for m in result.evaluation.round_audit.verdict_reasons)
    assert not any("disk" in c.claim_text for c in result.evaluation.composer_input.allowed_claims)
    assert store.get_session(result.session_id)["rounds"] == 2
