"""The `openai` provider: every LLM stage against one OpenAI-compatible endpoint.

OpenAI, Azure, vLLM, Ollama, DeepSeek, Qwen/DashScope: anything that speaks
`/v1/chat/completions`. The Collector is a tool-calling loop; every other stage is one strict-JSON
call through the StructuredLlmInvoker. Prompts come from `prompts/<stage>.md`; tool output
reaches a prompt only through the token budget (`budget.cut_output`, then `fit_messages`), and
is framed as data, never as instructions.
"""

from __future__ import annotations

import contextlib
import json
import re
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import openai
from pydantic import BaseModel, ValidationError

from pipeline.core.config import Settings
from pipeline.core.contracts import (
    CollectionSummary,
    ComposerInput,
    ComposerOutput,
    EvidenceDigest,
    ExecutorOutputV2,
    PlannedToolCall,
    PlannerPlan,
    QuestionScope,
    RetryContext,
    ToolArguments,
    ToolInvocation,
    VerifierOutput,
)
from pipeline.core.errors import ConfigError, LlmCallError
from pipeline.llm.budget import cut_output, cut_records, estimate_messages_tokens, focus_terms_for, message_tokens
from pipeline.llm.invoker import StructuredLlmInvoker, ToolChoice
from pipeline.llm.prompts import Prompt, load_prompt
from pipeline.text.bounds import loads_bounded
from pipeline.text.replies import strip_wrappers
from pipeline.tools.arguments import ArgumentPolicy
from pipeline.tools.registry import TOOLS, calls_schema, model_name, persisted_name, tool_schemas
from pipeline.tools.results import read_result
from pipeline.verdict.payload import VerifierPayload
from pipeline.verdict.provider import StageContext

if TYPE_CHECKING:
    from openai.types.chat import (
        ChatCompletionMessageParam,
        ChatCompletionMessageToolCallUnionParam,
        ChatCompletionSystemMessageParam,
        ChatCompletionUserMessageParam,
    )

# A payload field larger than this goes into its own (cuttable) message.
OWN_MESSAGE_TOKENS = 400
# The collector's calls asked as one JSON reply: at most this many, each within this many tokens
# (Gemma 3 270M behind llama.cpp writes one call with its arguments, indented, in 50-80 tokens).
# A slow model's time goes on output tokens: the reply asks for no more calls than the stage's
# output cap holds, and is capped at what they take.
JSON_CALLS_MAX = 3
JSON_CALL_TOKENS = 96


class DigestBatch(BaseModel):
    """The digest stage's reply: `{"digests": [...]}` (docs/spec.md#split-chain)."""

    digests: list[EvidenceDigest]


_CALLS_OPENING = re.compile(r'"calls"\s*:\s*\[')


class _JsonCall(BaseModel):
    name: str
    arguments: ToolArguments


class JsonCalls(BaseModel):
    """The collector's calls as a JSON reply (registry.calls_schema is the schema it is asked
    with). Read loosely: the arguments are the argument policy's to check, as for a native call."""

    calls: list[_JsonCall]

    @classmethod
    def read(cls, raw: str) -> JsonCalls:
        """The whole calls of a reply, one cut at its cap included: a small model pads JSON
        with whitespace until the cap, and the calls it finished before are still its calls."""
        text = strip_wrappers(raw)
        opening = _CALLS_OPENING.search(text)
        items: list[Any] = []
        pos = opening.end() if opening else len(text)
        decoder = json.JSONDecoder()
        while True:
            pos = len(text) - len(text[pos:].lstrip(" \t\r\n,"))
            try:
                item, pos = decoder.raw_decode(text, pos)
            except (ValueError, RecursionError):
                break
            items.append(item)
        calls = []
        for item in items:
            with contextlib.suppress(ValidationError):
                calls.append(_JsonCall.model_validate(item))
        return cls(calls=calls)

    def as_tool_calls(self) -> list[ChatCompletionMessageToolCallUnionParam]:
        return [{"id": f"json_call_{n}", "type": "function",
                 "function": {"name": c.name, "arguments": json.dumps(c.arguments, ensure_ascii=False)}}
                for n, c in enumerate(self.calls, 1)]


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _lines(items: list[Any]) -> str:
    return "\n".join(_json(i) for i in items)


def evidence_text(inv: ToolInvocation, budget_tokens: int, focus_terms: list[str]) -> str:
    """One invocation as a prompt sees it: a header line, then its records within the budget."""
    header = (
        f"[tool output, data only] invocation_id={inv.id} tool_name={inv.tool_name} "
        f"model_tool_name={inv.model_tool_name} status={inv.status} arguments={_json(inv.arguments)}"
    )
    if inv.status == "error":
        return f"{header}\nerror: {inv.error or 'unknown error'}"
    # Numbered records, so a binding can cite the ones it quotes (docs/spec.md#record-citations).
    result = read_result(inv.output)
    if result.structured:
        body, _ = cut_records(result, budget_tokens, focus_terms)
    else:
        body, _ = cut_output(inv.output, budget_tokens, focus_terms)
    return f"{header}\n{body}"


def _tool_catalogue() -> str:
    rows = []
    for spec in TOOLS.values():
        args = ", ".join(spec.args.model_json_schema().get("properties", {}))
        rows.append(f"- {spec.name} (model name {spec.model_name}): {spec.description} Arguments: {args}")
    return "\n".join(rows)


def scope_plan(scope: QuestionScope, question: str) -> PlannerPlan:
    """The plan when the model answered the planner but never usably (its attempts are on record):
    the logs of every asked service, the alerts, the runbooks, read from the question in code."""
    calls = [PlannedToolCall(tool_name="query_logs", arguments={"service": s}) for s in scope.services]
    calls += [PlannedToolCall(tool_name="query_metrics", arguments={}),
              PlannedToolCall(tool_name="lookup_knowledge", arguments={"query": question})]
    return PlannerPlan(skill="scope_plan", language=scope.language, services=list(scope.services),
                       steps=["the planner gave no usable plan: logs, alerts and runbooks for the asked services"],
                       tool_calls=calls)


class OpenAIProvider:
    name = "openai"

    def __init__(
        self,
        settings: Settings,
        *,
        client: openai.OpenAI | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.settings = settings
        opts = settings.openai
        if client is None and not opts.base_url and not opts.api_key:
            # OpenAI's own endpoint refuses every call without a key: say so now, not after retries.
            raise ConfigError("the openai provider has no API key for api.openai.com: set OPENAI_API_KEY, or "
                              "OPENAI_BASE_URL for a local endpoint (`workbench doctor` checks either)")
        self.client = client or openai.OpenAI(
            base_url=opts.base_url, api_key=opts.api_key or "not-needed", timeout=opts.timeout_s, max_retries=0
        )
        self.invoker = StructuredLlmInvoker(self.client, settings=settings, provider_name=self.name, sleep=sleep)
        # Models that made their collector calls only as JSON (_collect_as_json): later rounds
        # ask them that way at once, not after another turn of prose.
        self._calls_as_json: set[str] = set()

    def model_for(self, stage: str) -> str:
        return self.settings.openai.stage_models.get(stage, self.settings.openai.model)

    def _prompt(self, stage: str) -> Prompt:
        return load_prompt(stage, self.settings.prompts_dir)

    def _system(self, prompt: Prompt, ctx: StageContext) -> ChatCompletionSystemMessageParam:
        lang = "Chinese (zh)" if ctx.language == "zh" else "English (en)"
        # Law 8: every stage works from the same scope, read from the question in code.
        scope = f"\nQuestion scope (data, read in code): {_json(ctx.scope.model_dump(mode='json'))}" if ctx.scope else ""
        return {"role": "system", "content": f"{prompt.text}\nQuestion language: {lang}.{scope}"}

    # --- planner ---------------------------------------------------------------------------

    def plan_messages(self, ctx: StageContext, question: str) -> list[ChatCompletionMessageParam]:
        user = (
            f"Question: {question}\n"
            f"Known services: {', '.join(ctx.services) or '(not known)'}\n"
            f"Now: {ctx.now.isoformat() if ctx.now else '(clock time)'}\n"
            f"Tools:\n{_tool_catalogue()}"
        )
        return [self._system(self._prompt("planner"), ctx), {"role": "user", "content": user}]

    def plan(self, ctx: StageContext, question: str) -> PlannerPlan:
        prompt = self._prompt("planner")
        try:
            result = self.invoker.invoke(
                ctx, stage="planner", model=self.model_for("planner"), prompt=prompt,
                messages=self.plan_messages(ctx, question), schema=PlannerPlan,
            )
        except LlmCallError as exc:
            if not exc.fell_short or ctx.scope is None:
                raise
            return scope_plan(ctx.scope, question)
        plan = result.value
        assert isinstance(plan, PlannerPlan)
        calls = [c.model_copy(update={"tool_name": persisted_name(c.tool_name) or c.tool_name}) for c in plan.tool_calls]
        # The question's language is measured in code; the model's guess does not override it.
        language = ctx.language if ctx.language in ("zh", "en") else plan.language
        return plan.model_copy(update={"tool_calls": calls, "language": language})

    # --- collector -------------------------------------------------------------------------

    def collect_messages(
        self, ctx: StageContext, question: str, plan: PlannerPlan, retry_context: RetryContext | None
    ) -> list[ChatCompletionMessageParam]:
        parts = [f"Question: {question}", f"Planner plan: {_json(plan.model_dump())}"]
        if ctx.now:
            parts.append(f"Now: {ctx.now.isoformat()}")
        if retry_context is not None:
            parts.append(
                f"Round {retry_context.round}: the verifier found gaps. Collect evidence that could close them.\n"
                f"Unsupported claims: {_json(retry_context.unsupported_claims)}\n"
                f"Missing info: {_json(retry_context.missing_info)}"
            )
        return [self._system(self._prompt("collector"), ctx), {"role": "user", "content": "\n".join(parts)}]

    def collect(
        self, ctx: StageContext, question: str, plan: PlannerPlan, retry_context: RetryContext | None
    ) -> CollectionSummary:
        prompt = self._prompt("collector")
        model = self.model_for("collector")
        terms = focus_terms_for(question, plan.services or ctx.services, plan.keywords)
        tools = tool_schemas()
        messages = self.collect_messages(ctx, question, plan, retry_context)
        policy = ArgumentPolicy(plan=plan, scope=ctx.scope, catalogue=tuple(ctx.services))
        loop = _ToolLoop(ctx, self.settings.budget.per_tool_tokens, terms, policy)
        max_steps = self.settings.openai.collector_max_steps
        summary = ""
        as_json = model in self._calls_as_json
        if ctx.tools_refused:
            summary = "this model did not call tools when made to earlier in the session; ran the planner's tool calls"
            loop.run_plan(plan)
        elif as_json:
            summary = self._collect_as_json(ctx, prompt, model, messages, terms, loop, plan)
        for step in range(1, max_steps + 1):
            if ctx.tools_refused or as_json:
                break
            last = step == max_steps
            # The first turn must call a tool (`required`: llama.cpp and vLLM hold the model to a
            # call with a grammar), so a small model cannot spend the stage writing prose; later
            # turns may stop. A reply cut at the cap is not asked again: its prose is never used,
            # and a cut call's arguments are refused as invalid JSON like any other.
            choice: ToolChoice = "none" if last else "required" if step == 1 else "auto"
            try:
                comp = self.invoker.complete(
                    ctx, stage="collector", model=model, prompt=prompt, messages=messages, tools=tools,
                    tool_choice=choice, focus_terms=terms, reask_cut=False,
                )
            except LlmCallError as exc:
                if step == 1 and exc.status_code in (400, 422) and "tool" in str(exc).lower():
                    summary = "the endpoint does not accept tool calling; ran the planner's tool calls"
                    ctx.tools_refused = True
                    loop.run_plan(plan)
                    break
                if not exc.fell_short:
                    raise
                summary = f"the model gave no usable tool call in time ({exc.reason}); ran the planner's tool calls"
                loop.run_plan(plan)
                break
            if not comp.tool_calls:
                if step == 1 and not last:
                    summary = self._collect_as_json(ctx, prompt, model, messages, terms, loop, plan)
                elif comp.finish_reason == "length":
                    summary = f"collected {len(loop.ids)} tool invocation(s); the model's closing reply was cut at its cap"
                else:
                    summary = (comp.content or "").strip()
                break
            if last:
                summary = f"stopped after {max_steps} steps (collector_max_steps)"
                break
            messages.append({"role": "assistant", "content": comp.content, "tool_calls": comp.tool_calls})
            for call in comp.tool_calls:
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": loop.run(call)})
        if loop.refused and plan.tool_calls:
            # A refused call leaves a gap the model meant to fill: the plan's calls fill it.
            loop.run_plan(plan)
            summary = f"{summary} (ran the planner's tool calls after refused arguments)".strip()
        elif not loop.ids and plan.tool_calls:
            summary = "the model called no tool; ran the planner's tool calls"
            loop.run_plan(plan)
        if retry_context is None and ctx.scope is not None:
            missed = loop.ask_every_service(ctx.scope.services)
            if missed:
                summary = f"{summary} (also queried the logs of {', '.join(missed)}, which the model left out)".strip()
        summary = summary or f"collected {len(loop.ids)} tool invocation(s)"
        return CollectionSummary(collection_summary=loop.with_notes(summary), tool_invocation_ids=loop.ids)

    def _collect_as_json(
        self, ctx: StageContext, prompt: Prompt, model: str, messages: list[ChatCompletionMessageParam],
        terms: list[str], loop: _ToolLoop, plan: PlannerPlan,
    ) -> str:
        """The first turn's calls, asked once as a JSON reply to the calls' schema, for an endpoint
        that did not hold the model to a call through `tools` (a chat template that renders no
        tools): llama.cpp makes the schema a grammar, so the reply is a call by construction. Its
        calls run through the same checks as native ones; this one turn is all the model gets, so
        in the first round the plan's calls it left out run after them. When this fails too (the
        schema refused, no usable reply, every call refused) the model is one that does not call
        tools: the plan's calls run, now and in the session's later rounds. Returns the summary."""
        n = max(1, min(JSON_CALLS_MAX, self.settings.budget.output_tokens.collector // JSON_CALL_TOKENS))
        ask: ChatCompletionUserMessageParam = {"role": "user", "content": (
            f'Reply now with the tool calls to make (at most {n}) as one compact JSON object on one '
            f'line: {{"calls": [{{"name": <tool model name>, "arguments": {{...}}}}]}}. Tools:\n{_tool_catalogue()}')}
        why = "no whole call in the reply"
        try:
            raw = self.invoker.invoke_json(
                ctx, stage="collector", model=model, prompt=prompt, messages=[*messages, ask],
                schema_hint=calls_schema(n), focus_terms=terms, max_tokens=n * JSON_CALL_TOKENS, reask_cut=False,
            ).raw
        except LlmCallError as exc:
            if not (exc.fell_short or exc.status_code in (400, 422)):
                raise
            # Cut at its cap, the reply is not asked again: the calls it finished are used.
            raw, why = exc.last_raw, f"{why}: {exc.reason}"
        reply = JsonCalls.read(raw)
        # The calls of a cut reply have not been checked for the prompt's example (law 12) yet.
        echo = prompt.example.echo_in(reply.model_dump())
        calls = [] if echo else reply.as_tool_calls()
        for call in calls:
            loop.run(call)
        if loop.ids:
            self._calls_as_json.add(model)
            made = len(loop.ids)
            if ctx.round == 1:  # a retry round's calls are for its gaps, not the plan's again
                loop.run_plan(plan)
            added = f"; ran the {len(loop.ids) - made} planner's call(s) it left out" if len(loop.ids) > made else ""
            return (f"the endpoint did not hold the model to a tool call through tools; it made {len(calls)} "
                    f"call(s) as JSON (response_format {self.invoker.json_mode(model)}){added}")
        why = "and every call it made as JSON was refused" if calls else f"nor as JSON ({echo or why})"
        ctx.tools_refused = True
        loop.run_plan(plan)
        return f"the model answered without the tool call it was made to make, {why}; ran the planner's tool calls"

    # --- evidence digest -------------------------------------------------------------------

    def digest_messages(
        self, ctx: StageContext, question: str, invocations: list[ToolInvocation]
    ) -> list[list[ChatCompletionMessageParam]]:
        """One message list per batch: tool outputs are packed so each batch fits the budget."""
        terms = focus_terms_for(question, ctx.services)
        head: list[ChatCompletionMessageParam] = [
            self._system(self._prompt("digest"), ctx),
            {"role": "user", "content": f"Question: {question}\nDigest each tool output below. Cite its invocation_id."},
        ]
        room = self.settings.budget.prompt_tokens - estimate_messages_tokens(head)
        batches: list[list[ChatCompletionMessageParam]] = []
        current: list[ChatCompletionMessageParam] = []
        used = 0
        for inv in invocations:
            part: ChatCompletionUserMessageParam = {"role": "user", "content": evidence_text(inv, self.settings.budget.per_tool_tokens, terms)}
            cost = message_tokens(part)
            if current and used + cost > room:
                batches.append(head + current)
                current, used = [], 0
            current.append(part)
            used += cost
        if current:
            batches.append(head + current)
        return batches

    def digest(self, ctx: StageContext, question: str, invocations: list[ToolInvocation]) -> list[EvidenceDigest]:
        prompt = self._prompt("digest")
        terms = focus_terms_for(question, ctx.services)
        digests: list[EvidenceDigest] = []
        seen: set[str] = set()
        for messages in self.digest_messages(ctx, question, invocations):
            try:
                result = self.invoker.invoke(
                    ctx, stage="digest", model=self.model_for("digest"), prompt=prompt, messages=messages,
                    schema=DigestBatch, focus_terms=terms,
                )
            except LlmCallError as exc:
                # The model answered, never usably or not in time (its attempts are on record):
                # this batch's outputs stay undigested, a gap the diagnosis and coverage then
                # show. No answer at all is the endpoint's failure and fails the stage.
                if exc.fell_short:
                    continue
                raise
            assert isinstance(result.value, DigestBatch)
            for d in result.value.digests:
                digest_id = d.digest_id
                n = 2
                while digest_id in seen:  # batches are separate calls; ids must stay unique per session
                    digest_id, n = f"{d.digest_id}-{n}", n + 1
                seen.add(digest_id)
                digests.append(d.model_copy(update={"digest_id": digest_id, "tool": persisted_name(d.tool) or d.tool}))
        return digests

    # --- diagnosis (Executor V2) -----------------------------------------------------------

    def diagnosis_messages(
        self, ctx: StageContext, question: str, plan: PlannerPlan, digests: list[EvidenceDigest] | None,
        invocations: list[ToolInvocation], retry_context: RetryContext | None,
    ) -> list[ChatCompletionMessageParam]:
        shape = "split" if digests is not None else "single"
        index = [{"invocation_id": i.id, "tool_name": i.tool_name, "status": i.status} for i in invocations]
        parts = [
            f"Shape: {shape}",
            f"Question: {question}",
            f"Planner plan: {_json(plan.model_dump())}",
            f"Tool invocations of this session:\n{_lines(index)}",
        ]
        if retry_context is not None:
            parts.append(f"Retry context (round {retry_context.round}): {_json(retry_context.model_dump())}")
        messages: list[ChatCompletionMessageParam] = [
            self._system(self._prompt("diagnosis"), ctx), {"role": "user", "content": "\n".join(parts)},
        ]
        if digests is not None:
            body = _lines([d.model_dump() for d in digests]) if digests else "(no digests)"
            messages.append({"role": "user", "content": f"evidence_digests (data only, one per line):\n{body}"})
        else:
            terms = focus_terms_for(question, plan.services or ctx.services, plan.keywords)
            for inv in invocations:
                messages.append({"role": "user", "content": evidence_text(inv, self.settings.budget.per_tool_tokens, terms)})
        return messages

    def diagnose(
        self, ctx: StageContext, question: str, plan: PlannerPlan, digests: list[EvidenceDigest] | None,
        invocations: list[ToolInvocation], retry_context: RetryContext | None,
    ) -> str:
        messages = self.diagnosis_messages(ctx, question, plan, digests, invocations, retry_context)
        try:
            result = self.invoker.invoke_json(
                ctx, stage="diagnosis", model=self.model_for("diagnosis"), prompt=self._prompt("diagnosis"),
                messages=messages, schema_hint=ExecutorOutputV2,
                focus_terms=focus_terms_for(question, plan.services or ctx.services, plan.keywords),
            )
        except LlmCallError as exc:
            # The model answered, just never with a JSON object or not in time: that answer goes
            # to the parse stage (missing / malformed -> LOW_CONFID, law 3). No answer at all is a
            # failure.
            if exc.fell_short:
                return strip_wrappers(exc.last_raw)
            raise
        return result.raw

    # --- verifier --------------------------------------------------------------------------

    def verify_messages(self, ctx: StageContext, payload: VerifierPayload) -> list[ChatCompletionMessageParam]:
        small: dict[str, Any] = {}
        large: list[ChatCompletionMessageParam] = []
        for key, value in payload.items():
            if key == "executor_structured_output" or message_tokens({"role": "user", "content": _json(value)}) <= OWN_MESSAGE_TOKENS:
                small[key] = value
            elif isinstance(value, list):
                large.append({"role": "user", "content": f"payload.{key} (data only, one item per line):\n{_lines(value)}"})
            else:
                large.append({"role": "user", "content": f"payload.{key} (data only):\n{_json(value)}"})
        head: ChatCompletionUserMessageParam = {"role": "user", "content": f"Verifier payload (data only):\n{_json(small)}"}
        return [self._system(self._prompt("verifier"), ctx), head, *large]

    def verify(self, ctx: StageContext, payload: VerifierPayload) -> VerifierOutput:
        question = str(payload.get("original_query", ""))
        result = self.invoker.invoke(
            ctx, stage="verifier", model=self.model_for("verifier"), prompt=self._prompt("verifier"),
            messages=self.verify_messages(ctx, payload), schema=VerifierOutput,
            focus_terms=focus_terms_for(question, ctx.services),
        )
        assert isinstance(result.value, VerifierOutput)
        return result.value

    # --- composer --------------------------------------------------------------------------

    def compose_messages(self, ctx: StageContext, composer_input: ComposerInput) -> list[ChatCompletionMessageParam]:
        lang = "Chinese (zh)" if ctx.language == "zh" else "English (en)"
        user = f"Answer language: {lang}\nComposer input:\n{_json(composer_input.model_dump())}"
        return [self._system(self._prompt("composer"), ctx), {"role": "user", "content": user}]

    def compose(self, ctx: StageContext, composer_input: ComposerInput) -> str:
        result = self.invoker.invoke(
            ctx, stage="composer", model=self.model_for("composer"), prompt=self._prompt("composer"),
            messages=self.compose_messages(ctx, composer_input), schema=ComposerOutput,
        )
        return result.raw


class _ToolLoop:
    """The collector's tool execution: every distinct call once, identical repeats refused, and
    the model's arguments checked (corrected or refused) before anything runs."""

    def __init__(self, ctx: StageContext, budget_tokens: int, focus_terms: list[str], policy: ArgumentPolicy):
        self.ctx = ctx
        self.budget_tokens = budget_tokens
        self.focus_terms = focus_terms
        self.policy = policy
        self.ids: list[int] = []
        self.notes: list[str] = []
        self.refused = 0
        self._done: dict[str, ToolInvocation] = {}

    def with_notes(self, summary: str) -> str:
        """The collection summary with what the argument checks changed or refused."""
        return f"{summary} [argument checks: {'; '.join(self.notes)}]" if self.notes else summary

    @staticmethod
    def _key(tool: str, arguments: ToolArguments) -> str:
        return f"{tool}:{json.dumps(arguments, sort_keys=True, ensure_ascii=False, default=str)}"

    def run(self, call: ChatCompletionMessageToolCallUnionParam) -> str:
        """The tool message content for one model tool call."""
        fn = call["function"] if call["type"] == "function" else None
        name = fn["name"] if fn is not None else ""
        tool = persisted_name(name)
        if tool is None:
            return f"error: unknown tool {name!r}; the tools are {', '.join(t.model_name for t in TOOLS.values())}"
        try:
            arguments = loads_bounded((fn["arguments"] if fn is not None else "") or "{}")
        except ValueError as exc:
            return f"error: arguments of {name} are not valid JSON ({exc}); nothing was run"
        if not isinstance(arguments, dict):
            return f"error: arguments of {name} must be a JSON object; nothing was run"
        checked = self.policy.check(tool, arguments)
        self.notes += checked.notes
        if checked.arguments is None:
            self.refused += 1
            return f"refused: {'; '.join(checked.notes)}. Nothing was run; call {name} with a supported value."
        arguments = checked.arguments
        key = self._key(tool, arguments)
        if key in self._done:
            earlier = self._done[key].id
            return (
                f"refused: {model_name(tool)} with these exact arguments already ran as invocation_id={earlier}; "
                "its result is above. Not run again."
            )
        inv = self.ctx.run_tool(tool, arguments)
        self._done[key] = inv
        self.ids.append(inv.id)
        return evidence_text(inv, self.budget_tokens, self.focus_terms)

    def ask_every_service(self, services: list[str]) -> list[str]:
        """Law 8: every asked service gets a log query, known to a backend or not, whatever the
        model chose; its empty answer is the answer for it. Returns the services added."""
        asked = {str(inv.arguments.get("service")) for inv in self._done.values() if inv.arguments.get("service")}
        missed = [s for s in services if s not in asked]
        for service in missed:
            arguments: ToolArguments = {"service": service}
            self._done[self._key("query_logs", arguments)] = inv = self.ctx.run_tool("query_logs", arguments)
            self.ids.append(inv.id)
        return missed

    def run_plan(self, plan: PlannerPlan) -> None:
        """The planner's calls not run yet (the collector's fallback)."""
        for planned in plan.tool_calls:
            tool = persisted_name(planned.tool_name) or planned.tool_name
            # The plan is a model's too: its arguments pass the same checks.
            checked = self.policy.check(tool, planned.arguments)
            self.notes += checked.notes
            if checked.arguments is None:
                continue
            key = self._key(tool, checked.arguments)
            if key not in self._done:
                self._done[key] = inv = self.ctx.run_tool(tool, checked.arguments)
                self.ids.append(inv.id)
