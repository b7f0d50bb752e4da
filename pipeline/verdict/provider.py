"""The one interface every LLM provider implements: one method per LLM stage.

`offline` (rule-based), `openai` (any OpenAI-compatible endpoint) and `scripted` (fixture replay)
all plug in here; the orchestrator in `pipeline.runs.session` never knows which one it runs. It sits
below providers and stages (docs/architecture.md#layers), so a stage types the provider it calls
against it without importing one.
"""

from __future__ import annotations

from typing import Protocol

from pipeline.core.contracts import (
    CollectionSummary,
    ComposerInput,
    EvidenceDigest,
    PlannerPlan,
    RetryContext,
    ToolInvocation,
    VerifierOutput,
)
from pipeline.verdict.context import RunTool, StageContext
from pipeline.verdict.payload import VerifierPayload

# StageContext and RunTool live in pipeline.verdict.context (neutral ground for stages and
# providers); they are re-exported here because every provider implements against them.
__all__ = ["STAGES", "Composes", "Provider", "RunTool", "StageContext", "Verifies"]

STAGES = ("planner", "collector", "digest", "diagnosis", "verifier", "composer")


class Verifies(Protocol):
    """What the verifier stage calls (pipeline.stages.verifier.run_verifier)."""

    def verify(self, ctx: StageContext, payload: VerifierPayload) -> VerifierOutput: ...


class Composes(Protocol):
    """What the composer stage calls (pipeline.stages.composer.run_composer); a bundle's stored
    composer reply stands in for a provider through it."""

    def compose(self, ctx: StageContext, composer_input: ComposerInput) -> str:
        """Composer JSON as raw text; the composer guard parses and checks it."""
        ...


class Provider(Verifies, Composes, Protocol):
    name: str

    def model_for(self, stage: str) -> str: ...

    def plan(self, ctx: StageContext, question: str) -> PlannerPlan: ...

    def collect(
        self, ctx: StageContext, question: str, plan: PlannerPlan, retry_context: RetryContext | None
    ) -> CollectionSummary: ...

    def digest(
        self, ctx: StageContext, question: str, invocations: list[ToolInvocation]
    ) -> list[EvidenceDigest]: ...

    def diagnose(
        self,
        ctx: StageContext,
        question: str,
        plan: PlannerPlan,
        digests: list[EvidenceDigest] | None,
        invocations: list[ToolInvocation],
        retry_context: RetryContext | None,
    ) -> str:
        """Executor V2 JSON as the raw text the model returned (parsed later, in code).

        `digests` is None in the single-Executor shape (docs/spec.md#executor-v2); then the executor reads the
        invocations. In the split shape (docs/spec.md#split-chain) it must only read the digests.
        """
        ...
