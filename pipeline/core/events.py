"""What a running session announces, one model per event.

A session stores each event as a `session_event` row (its `type` in the `stage` column, the rest
as `data`) before its caller's callback sees it, so a page or a replica follows the run from the
store. The row's JSON is the model's dump without `type`: what each event carries is its model's
fields, and a field added here is a field the Ask page and the CLI can read.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, JsonValue, field_serializer

from pipeline.core.contracts import (
    CollectionSummary,
    EvidenceDigest,
    GatekeeperResult,
    PlannerPlan,
    QuestionScope,
    RetryContext,
    Verdict,
)


class _Event(BaseModel):
    model_config = ConfigDict(frozen=True)

    def data(self) -> dict[str, Any]:
        """The event as its `session_event` row keeps it (the type is the row's stage)."""
        return self.model_dump(exclude={"type"})


class SessionOpened(_Event):
    type: Literal["session"] = "session"
    session_id: str
    world: str | None
    provider: str
    shape: str
    question_scope: QuestionScope

    @field_serializer("question_scope")
    def _scope_as_json(self, scope: QuestionScope) -> dict[str, Any]:
        # Its times as ISO strings, as the session row's copy of the scope keeps them.
        return scope.model_dump(mode="json")


class StreamProgress(_Event):
    """A stage's progress while a reply streams in (openai.stage_timeout_s is its budget)."""

    type: Literal["progress"] = "progress"
    stage: str
    round: int
    attempt: int
    tokens: int
    tokens_per_s: float
    elapsed_s: float
    budget_s: float


class ToolCalled(_Event):
    type: Literal["tool"] = "tool"
    id: int
    tool: str  # the name the model called it by
    arguments: dict[str, JsonValue]
    status: str
    latency_ms: float
    error: str | None


class Planned(_Event):
    type: Literal["planner"] = "planner"
    plan: PlannerPlan


class Collected(_Event):
    type: Literal["collector"] = "collector"
    summary: CollectionSummary


class Digested(_Event):
    type: Literal["digest"] = "digest"
    digests: list[EvidenceDigest]  # every round's so far


class Diagnosed(_Event):
    type: Literal["diagnosis"] = "diagnosis"
    chars: int


class Verified(_Event):
    type: Literal["verification"] = "verification"
    gatekeeper_result: GatekeeperResult
    verdict: Verdict
    parse_status: str


class Retrying(_Event):
    type: Literal["retry"] = "retry"
    retry_context: RetryContext


class Failed(_Event):
    type: Literal["failed"] = "failed"
    stage: str
    error: str


class Done(_Event):
    type: Literal["done"] = "done"
    verdict: Verdict
    final_answer: str


SessionEvent: TypeAlias = Annotated[
    SessionOpened | StreamProgress | ToolCalled | Planned | Collected | Digested | Diagnosed | Verified | Retrying
    | Failed | Done,
    Field(discriminator="type"),
]
