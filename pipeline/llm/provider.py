"""The one interface every LLM provider implements: one method per LLM stage.

`offline` (rule-based), `openai` (any OpenAI-compatible endpoint) and `scripted` (fixture replay)
all plug in here; the orchestrator in `pipeline.session` never knows which one it runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Callable, Protocol

from pipeline.config import Settings
from pipeline.contracts import (
    CollectionSummary,
    ComposerInput,
    EvidenceDigest,
    LlmCallRecord,
    PlannerPlan,
    QuestionScope,
    RetryContext,
    ToolInvocation,
    VerifierOutput,
)

STAGES = ("planner", "collector", "digest", "diagnosis", "verifier", "composer")

RunTool = Callable[[str, dict[str, Any]], ToolInvocation]


class StageFailure(RuntimeError):
    """A stage could not produce usable output after its retries (endpoint refused, etc.)."""

    def __init__(self, stage: str, message: str):
        super().__init__(f"{stage}: {message}")
        self.stage = stage


@dataclass
class StageContext:
    settings: Settings
    session_id: str
    language: str
    record: Callable[[LlmCallRecord], None]
    run_tool: RunTool
    services: list[str] = field(default_factory=list)
    round: int = 1
    # "Now" for relative time windows: the incident's end for a bundled world, else the clock.
    now: datetime | None = None
    # What the question asks about (services, symptom, window); every stage and prompt gets it.
    scope: QuestionScope | None = None


class Provider(Protocol):
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

        `digests` is None in the single-Executor shape (seed 000); then the executor reads the
        invocations. In the split shape (seed 003) it must only read the digests.
        """
        ...

    def verify(self, ctx: StageContext, payload: dict[str, Any]) -> VerifierOutput: ...

    def compose(self, ctx: StageContext, composer_input: ComposerInput) -> str:
        """Composer JSON as raw text; the composer guard parses and checks it."""
        ...
