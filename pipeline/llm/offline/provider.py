"""The `offline` provider: deterministic, rule-based, no network. Honest about what it is."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any, TypeVar

from pipeline.core.config import Settings
from pipeline.core.contracts import (
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
from pipeline.llm.offline import collector, diagnosis, planner
from pipeline.llm.offline import digest as digest_mod
from pipeline.text.primitives import keywords
from pipeline.verdict.context import StageContext
from pipeline.verdict.payload import VerifierPayload
from pipeline.verdict.scope import EVENT_SYMPTOMS, asked_pairs, read_scope, symptom_words

T = TypeVar("T")


def _brief(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 4000 else text[:4000] + f"... [{len(text) - 4000} chars not recorded]"


class OfflineProvider:
    name = "offline"

    def __init__(self, settings: Settings):
        self.settings = settings

    def model_for(self, stage: str) -> str:
        return "rule-based"

    def _run(self, ctx: StageContext, stage: str, stage_input: Any, fn: Callable[[], T],
             render: Callable[[T], str]) -> T:
        started = time.perf_counter()
        result = fn()
        ctx.record(LlmCallRecord(
            stage=stage, round=ctx.round, provider=self.name, model="rule-based",
            prompt_file=f"pipeline/llm/offline/{stage}", prompt_version="offline-1",
            messages=[{"role": "user", "content": _brief(stage_input)}],
            raw_response=_brief(render(result)), parse_status="valid",
            latency_ms=(time.perf_counter() - started) * 1000,
        ))
        return result

    def _scope(self, ctx: StageContext, question: str) -> QuestionScope:
        # A bundle checked offline has no session scope; it is read from the question the same way.
        return ctx.scope or read_scope(question, ctx.services, ctx.now)

    def _focus(self, ctx: StageContext, question: str) -> digest_mod.Focus:
        scope = self._scope(ctx, question)
        return digest_mod.Focus(services=set(scope.services), words=planner.search_words(scope),
                                terms=keywords(question), asked=tuple(scope.services))

    def _pairs(self, ctx: StageContext, question: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
        return tuple((service, tuple(symptom_words([symptom])))
                     for service, symptom in asked_pairs(self._scope(ctx, question)) if service)

    def _events(self, ctx: StageContext, question: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """The asked pairs whose symptom is an event (a restart): their lines are the answer itself."""
        return tuple((service, tuple(symptom_words([symptom])))
                     for service, symptom in asked_pairs(self._scope(ctx, question))
                     if service and symptom in EVENT_SYMPTOMS)

    def plan(self, ctx: StageContext, question: str) -> PlannerPlan:
        scope = self._scope(ctx, question)
        window = (scope.time_window.start, scope.time_window.end) if scope.time_window and \
            scope.time_window.start and scope.time_window.end else None
        return self._run(ctx, "planner", {"question": question, "question_scope": scope.model_dump(mode="json")},
                         lambda: planner.plan(question, scope, window),
                         lambda p: p.model_dump_json())

    def collect(self, ctx: StageContext, question: str, plan: PlannerPlan,
                retry_context: RetryContext | None) -> CollectionSummary:
        return self._run(ctx, "collector", {"plan": plan.model_dump(), "retry_context": retry_context},
                         lambda: collector.collect(ctx, plan, retry_context),
                         lambda s: s.model_dump_json())

    def digest(self, ctx: StageContext, question: str, invocations: list[ToolInvocation]) -> list[EvidenceDigest]:
        focus = self._focus(ctx, question)
        stage_input = {"question": question,
                       "invocations": [{"id": i.id, "tool": i.tool_name, "bytes": len(i.output)} for i in invocations]}
        return self._run(ctx, "digest", stage_input,
                         lambda: digest_mod.digest(invocations, focus, ctx.language, ctx.round),
                         lambda ds: json.dumps({"digests": [d.model_dump() for d in ds]}, ensure_ascii=False))

    def diagnose(self, ctx: StageContext, question: str, plan: PlannerPlan, digests: list[EvidenceDigest] | None,
                 invocations: list[ToolInvocation], retry_context: RetryContext | None) -> str:
        focus = self._focus(ctx, question)
        # Single shape (docs/spec.md#executor-v2): the executor reads raw outputs; it extracts the same lines itself.
        evidence = digests if digests is not None else digest_mod.digest(invocations, focus, ctx.language, ctx.round)
        stage_input = {"question": question, "digest_ids": [d.digest_id for d in digests]} if digests is not None \
            else {"question": question, "invocation_ids": [i.id for i in invocations]}
        return self._run(ctx, "diagnosis", stage_input,
                         lambda: diagnosis.diagnose(evidence, invocations, focus.services, ctx.services, ctx.language,
                                                    with_digest_ids=digests is not None, asked=focus.asked,
                                                    symptom_words=tuple(focus.words),
                                                    asked_pairs=self._pairs(ctx, question),
                                                    asked_events=self._events(ctx, question)),
                         lambda raw: raw)

    def verify(self, ctx: StageContext, payload: VerifierPayload) -> VerifierOutput:
        from pipeline.llm.offline.verifier import verify

        return self._run(ctx, "verifier", payload, lambda: verify(payload), lambda v: v.model_dump_json())

    def compose(self, ctx: StageContext, composer_input: ComposerInput) -> str:
        from pipeline.llm.offline.composer import compose

        return self._run(ctx, "composer", composer_input.model_dump(),
                         lambda: compose(composer_input, ctx.language).model_dump_json(),
                         lambda raw: raw)
