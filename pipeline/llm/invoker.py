"""StructuredLlmInvoker: one place for strict-JSON calls to an OpenAI-compatible endpoint (docs/spec.md#split-chain).

The loop: call -> strip reasoning and code fences -> parse -> validate with pydantic -> on failure
re-ask with the error appended, a bounded number of times. Every call sends the stage's output cap
(`budget.output_tokens`); a reply cut at it is re-asked once for a shorter answer. Replies stream:
a request fails when no token came for `openai.timeout_s`, not at a fixed total, and reports its
progress (tokens, tokens/s) to `ctx.progress`. Around each call: transport retries on tenacity (429
honouring Retry-After, 5xx, timeouts, refused connections) with bounded exponential backoff and
jitter, all inside the stage's wall-time bound (`openai.stage_timeout_s`, or the stage's own in
`openai.stage_timeouts`). Every attempt, failed or not, becomes an `llm_call` record (law 6), the
failed ones from tenacity's `after` hook. Final failure is one exception, `LlmCallError`, carrying
the last raw completion, the attempts, the tokens and the reason.

JSON mode is negotiated per model: `json_schema` first, then `json_object`, then the prompt alone,
stepping down when the endpoint answers 400 about `response_format`, and remembered.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass, field
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any, Generic, Literal, TypedDict, TypeVar

import httpx
import openai
import tenacity
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from pydantic import BaseModel, ValidationError

from pipeline.core.config import Settings
from pipeline.core.contracts import LlmCallRecord
from pipeline.core.errors import LlmCallError
from pipeline.core.events import StreamProgress
from pipeline.llm.budget import estimate_messages_tokens, fit_messages
from pipeline.llm.endpoint_limit import endpoint_slots
from pipeline.llm.prompts import Prompt
from pipeline.text.bounds import loads_bounded
from pipeline.text.primitives import estimate_tokens
from pipeline.text.redact import redact, redact_value
from pipeline.text.replies import read_object, strip_wrappers
from pipeline.verdict.provider import StageContext

if TYPE_CHECKING:
    from openai.types.chat import (
        ChatCompletionMessageParam,
        ChatCompletionMessageToolCallUnion,
        ChatCompletionMessageToolCallUnionParam,
        ChatCompletionStreamOptionsParam,
        ChatCompletionToolParam,
    )
    from openai.types.chat.completion_create_params import ResponseFormat

ToolChoice = Literal["none", "auto", "required"]

T = TypeVar("T", bound=BaseModel)

JSON_MODES = ("json_schema", "json_object", "prompt")
RETRY_AFTER_CAP_S = 30.0
BACKOFF_BASE_S = 0.5
BACKOFF_CAP_S = 8.0
# How much of a rejected reply is echoed back in a re-ask; enough to locate the error.
REASK_ECHO_CHARS = 2000
# How much of a non-JSON HTTP body is recorded: enough to recognise the proxy page it is.
NON_JSON_KEPT_CHARS = 4000
_RETRYABLE_STATUS = {408, 409, 429}

def _validation_summary(exc: ValidationError, limit: int = 10) -> str:
    parts = [f"{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}" for e in exc.errors()[:limit]]
    more = len(exc.errors()) - limit
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")


class _Options(TypedDict, total=False):
    """The keyword arguments a call adds to `chat.completions.create` beyond model and messages."""

    max_tokens: int
    tools: list[ChatCompletionToolParam]
    tool_choice: ToolChoice
    response_format: ResponseFormat


@dataclass
class Completion:
    content: str | None
    tool_calls: list[ChatCompletionMessageToolCallUnionParam]
    finish_reason: str | None
    prompt_tokens: int
    completion_tokens: int
    latency_ms: float

    @property
    def raw(self) -> str:
        if not self.tool_calls:
            return self.content or ""
        return json.dumps({"content": self.content, "tool_calls": self.tool_calls}, ensure_ascii=False)


@dataclass
class Structured(Generic[T]):
    value: T | None  # None for invoke_json
    data: dict[str, Any]
    raw: str  # the reply after reasoning/fence stripping
    attempts: int
    prompt_tokens: int
    completion_tokens: int


@dataclass
class _Run:
    """One logical call of a stage: its attempts share numbering and token totals."""

    ctx: StageContext
    stage: str
    model: str
    prompt: Prompt
    deadline: float  # time.monotonic() by which the stage must be done
    attempt: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    last_raw: str = ""
    errors: list[str] = field(default_factory=list)
    # A reply made to call a tool (tool_choice required) that has written this many pieces of
    # text and no call is not held to one: it is read no further (finish_reason "prose").
    prose_limit: int | None = None

    def failure(self, message: str, status_code: int | None = None, reason: str = "transport") -> LlmCallError:
        return LlmCallError(
            self.stage, redact(message), last_raw=self.last_raw, attempts=self.attempt, prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens, status_code=status_code, reason=reason,
        )


@dataclass(eq=False)
class _AttemptFailed(Exception):
    """One request that brought no completion; tenacity decides whether another follows."""

    message: str
    _: KW_ONLY
    raw: str = ""
    latency_ms: float = 0.0
    status_code: int | None = None
    retryable: bool = True
    wait_s: float | None = None  # the endpoint's own Retry-After, if it sent one
    # What the endpoint read and generated before the request was cut (law 6: on record).
    prompt_tokens: int = 0
    completion_tokens: int = 0
    planned_wait: float | None = field(default=None, init=False)  # the backoff drawn for it (jitter: drawn once)
    stopped_by: str = field(default="", init=False)  # set when no further attempt follows: "retries" | "deadline"

    def __post_init__(self) -> None:
        super().__init__(self.message)


# Asked of every stream: the last chunk carries the usage, so a finished reply's tokens are counted.
_WITH_USAGE: ChatCompletionStreamOptionsParam = {"include_usage": True}
# How often a streaming reply reports its progress (ctx.progress).
PROGRESS_EVERY_S = 2.0
# Text a reply made to call a tool may write before it is taken as not held to the call.
PROSE_WHEN_FORCED = 32


class _StreamReader:
    """One streamed reply put back together: content, tool calls (their arguments arrive in
    pieces, by index), finish reason, usage; and what it has generated so far, for progress and
    for the record when the stream is cut."""

    def __init__(self, run: _Run, budget_s: float):
        self.run = run
        self.budget_s = budget_s
        self.content: list[str] = []
        self.calls: dict[int, dict[str, str]] = {}
        self.finish_reason: str | None = None
        self.usage: Any = None
        # Chunks carrying generated text: one token each on llama.cpp's server, the count a cut
        # reply is recorded with when no usage came.
        self.chunks = 0
        self.out_of_time = False
        self._first = 0.0
        self._reported = 0.0

    def read(self, stream: Any, out_of_time: Callable[[], bool]) -> None:
        limit = self.run.prose_limit
        for chunk in stream:
            self.add(chunk)
            if out_of_time():
                self.out_of_time = True
                return
            if limit is not None and not self.calls and len(self.content) >= limit:
                self.finish_reason = "prose"
                return

    def add(self, chunk: ChatCompletionChunk) -> None:
        if chunk.usage is not None:
            self.usage = chunk.usage
        for choice in chunk.choices:
            delta = choice.delta
            if delta.content:
                self.content.append(delta.content)
                self._count()
            for call in delta.tool_calls or []:
                entry = self.calls.setdefault(call.index, {"id": "", "name": "", "arguments": ""})
                entry["id"] = call.id or entry["id"]
                if call.function is not None:
                    entry["name"] += call.function.name or ""
                    entry["arguments"] += call.function.arguments or ""
                self._count()
            self.finish_reason = choice.finish_reason or self.finish_reason

    def _count(self) -> None:
        now = time.monotonic()
        self.chunks += 1
        if self.chunks == 1:
            self._first = self._reported = now
        elif now - self._reported >= PROGRESS_EVERY_S:
            self._reported = now
            ctx = self.run.ctx
            started = ctx.stage_started.get((self.run.stage, ctx.round), now)
            ctx.progress(StreamProgress(stage=self.run.stage, round=ctx.round, attempt=self.run.attempt,
                                        tokens=self.chunks, tokens_per_s=round(self.chunks / max(now - self._first, 1e-3), 1),
                                        elapsed_s=round(now - started, 1), budget_s=self.budget_s))

    @property
    def text(self) -> str:
        return "".join(self.content)

    def tool_calls(self) -> list[ChatCompletionMessageToolCallUnionParam]:
        return [{"id": c["id"] or f"call_{i}", "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
                for i, c in sorted(self.calls.items())]

    def _tokens(self, messages: list[ChatCompletionMessageParam], sent_text: str) -> tuple[int, int]:
        usage = self.usage
        prompt = usage.prompt_tokens if usage and usage.prompt_tokens else estimate_messages_tokens(messages)
        completion = usage.completion_tokens if usage and usage.completion_tokens else self.chunks or estimate_tokens(sent_text)
        return prompt, completion

    def completion(self, messages: list[ChatCompletionMessageParam], latency_ms: float) -> Completion:
        calls = self.tool_calls()
        prompt, completion = self._tokens(messages, self.text + (json.dumps(calls, ensure_ascii=False) if calls else ""))
        self.run.prompt_tokens += prompt
        self.run.completion_tokens += completion
        return Completion(self.text or (None if calls else ""), calls, self.finish_reason, prompt, completion, latency_ms)

    def cut(self, message: str, messages: list[ChatCompletionMessageParam], latency_ms: float) -> _AttemptFailed:
        """The failure of a request stopped mid-reply, with what it had generated."""
        prompt, completion = self._tokens(messages, self.text) if self.chunks else (0, 0)
        self.run.prompt_tokens += prompt
        self.run.completion_tokens += completion
        if self.chunks:
            message = f"{message}, after {self.chunks} token(s)"
        raw = json.dumps({"content": self.text, "tool_calls": self.tool_calls()}, ensure_ascii=False) if self.calls else self.text
        return _AttemptFailed(message, raw=raw, latency_ms=latency_ms, prompt_tokens=prompt, completion_tokens=completion)


def _retry_after_s(exc: openai.APIStatusError) -> float | None:
    headers = exc.response.headers if exc.response is not None else {}
    if headers.get("retry-after-ms"):
        try:
            return float(headers["retry-after-ms"]) / 1000.0
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        try:
            return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
        except (TypeError, ValueError):
            return None


def _since(started: float) -> float:
    return (time.perf_counter() - started) * 1000


def _root_cause(exc: BaseException) -> str:
    while exc.__cause__ is not None:
        exc = exc.__cause__
    return str(exc) or type(exc).__name__


def _call_param(call: ChatCompletionMessageToolCallUnion) -> ChatCompletionMessageToolCallUnionParam:
    """A tool call of a reply as the next request's assistant message carries it."""
    if call.type == "function":
        return {"id": call.id, "function": {"arguments": call.function.arguments, "name": call.function.name},
                "type": "function"}
    return {"id": call.id, "custom": {"input": call.custom.input, "name": call.custom.name}, "type": "custom"}


def mentions_response_format(error: LlmCallError) -> bool:
    text = str(error).lower()
    return error.status_code in (400, 422) and any(
        k in text for k in ("response_format", "json_schema", "json_object", "json mode")
    )


class StructuredLlmInvoker:
    def __init__(
        self,
        client: openai.OpenAI,
        *,
        settings: Settings,
        provider_name: str = "openai",
        sleep: Callable[[float], None] = time.sleep,
        jitter: Callable[[], float] = random.random,
    ):
        self.client = client
        self.settings = settings
        self.provider_name = provider_name
        self.sleep = sleep
        self.jitter = jitter
        self._json_modes: dict[str, str] = {}

    def json_mode(self, model: str) -> str:
        configured = self.settings.openai.json_mode
        return self._json_modes.get(model, JSON_MODES[0] if configured == "auto" else configured)

    def _run(self, ctx: StageContext, stage: str, model: str, prompt: Prompt) -> _Run:
        started = ctx.stage_started.setdefault((stage, ctx.round), time.monotonic())
        return _Run(ctx, stage, model, prompt, started + self.stage_budget(stage)[0])

    def stage_budget(self, stage: str) -> tuple[float, str]:
        """The stage's wall-time bound and the setting it comes from."""
        o = self.settings.openai
        if stage in o.stage_timeouts:
            return o.stage_timeouts[stage], f"openai.stage_timeouts.{stage}"
        return o.stage_timeout_s, "openai.stage_timeout_s"

    def _cap(self, stage: str) -> _Options:
        cap = getattr(self.settings.budget.output_tokens, stage, None)
        return {"max_tokens": cap} if isinstance(cap, int) else {}

    # --- public calls ----------------------------------------------------------------------

    def invoke(
        self, ctx: StageContext, *, stage: str, model: str, prompt: Prompt, messages: list[ChatCompletionMessageParam],
        schema: type[T], focus_terms: list[str] | None = None,
    ) -> Structured[T]:
        """A validated instance of `schema`; re-asks on bad JSON and on schema errors."""
        return self._structured(ctx, stage, model, prompt, messages, schema, True, focus_terms or [])

    def invoke_json(
        self, ctx: StageContext, *, stage: str, model: str, prompt: Prompt, messages: list[ChatCompletionMessageParam],
        schema_hint: type[BaseModel], focus_terms: list[str] | None = None, max_tokens: int | None = None,
        reask_cut: bool = True,
    ) -> Structured[BaseModel]:
        """Any JSON object (re-asks only on non-JSON). `schema_hint` guides, never judges: the
        diagnosis stage's schema errors are the gatekeeper's to find, not ours to repair.
        `max_tokens` replaces the stage's output cap for a call whose reply is known to be short;
        without `reask_cut` a reply cut at the cap fails at once (its text in `last_raw`), for a
        caller that can use the complete part of it."""
        return self._structured(ctx, stage, model, prompt, messages, schema_hint, False, focus_terms or [], max_tokens,
                                reask_cut)

    def complete(
        self, ctx: StageContext, *, stage: str, model: str, prompt: Prompt, messages: list[ChatCompletionMessageParam],
        tools: list[ChatCompletionToolParam] | None = None, tool_choice: ToolChoice | None = None,
        focus_terms: list[str] | None = None, reask_cut: bool = True,
    ) -> Completion:
        """One chat completion (tool calling allowed), with transport retries; recorded. A reply
        cut at the output cap is asked once more for a shorter one (unless `reask_cut` is off: a
        caller that has no use for its text); a second cut is returned."""
        run = self._run(ctx, stage, model, prompt)
        convo = list(messages)
        extra = self._cap(stage)
        if tools:
            extra |= {"tools": tools, "tool_choice": tool_choice or "auto"}
        cut_reasked = not reask_cut
        # The record of a reply held to a tool call says how (json_mode "tool_choice"); the other
        # way to hold one is a JSON Schema for the call (json_mode "json_schema").
        forced = "tool_choice" if tools and tool_choice == "required" else None
        if forced:
            # An endpoint that holds the model to a call sends the call from the first token; text
            # means it does not, and a small model then writes to its cap (minutes on a CPU).
            run.prose_limit = PROSE_WHEN_FORCED
        while True:
            sent = self._fit(run, convo, focus_terms or [], tools)
            comp = self._send(run, sent, extra)
            cut = comp.finish_reason == "length"
            if cut and not cut_reasked:
                self._record(run, sent, comp.raw, "malformed", comp, self._cut_error(stage, extra), forced)
                cut_reasked = True
                convo = convo + self._reask(comp, "")
                continue
            status = "malformed" if cut else "valid" if (comp.tool_calls or (comp.content or "").strip()) else "missing"
            error = self._cut_error(stage, extra) if cut else None
            if comp.finish_reason == "prose":
                status, error = "malformed", (f"read no further after {PROSE_WHEN_FORCED} pieces of text and no "
                                              "tool call: the endpoint does not hold the model to the call it was made to make")
            self._record(run, sent, comp.raw, status, comp, error, forced)
            return comp

    def _cut_error(self, stage: str, extra: _Options) -> str:
        cap = extra.get("max_tokens")
        if not cap:
            where = ""
        elif cap == self._cap(stage).get("max_tokens"):
            where = f" (budget.output_tokens.{stage}={cap})"
        else:
            where = f" (max_tokens={cap} for this call)"
        return f"reply cut at the output token limit{where}, finish_reason=length"

    def _fit(
        self, run: _Run, messages: list[ChatCompletionMessageParam], focus_terms: list[str],
        tools: list[ChatCompletionToolParam] | None = None,
    ) -> list[ChatCompletionMessageParam]:
        try:
            # Redacted before sending: a tool output or error may hold a credential (law 9).
            return fit_messages(redact_value(messages), self.settings.budget.prompt_tokens, focus_terms, tools)[0]
        except ValueError as exc:
            raise run.failure(f"prompt does not fit budget.prompt_tokens: {exc}", reason="budget") from exc

    # --- the loop --------------------------------------------------------------------------

    def _structured(
        self, ctx: StageContext, stage: str, model: str, prompt: Prompt, messages: list[ChatCompletionMessageParam],
        schema: type[BaseModel], validate: bool, focus_terms: list[str], max_tokens: int | None = None,
        reask_cut: bool = True,
    ) -> Structured[Any]:
        run = self._run(ctx, stage, model, prompt)
        convo = list(messages)
        reasks = 0
        echo_reasked = False
        cut_reasked = not reask_cut
        cap: _Options = {"max_tokens": max_tokens} if max_tokens else self._cap(stage)
        while True:
            mode = self.json_mode(model)
            sent = self._fit(run, self._with_schema_note(convo, mode, schema), focus_terms)
            try:
                comp = self._send(run, sent, self._format_kwargs(mode, schema) | cap)
            except LlmCallError as exc:
                if mode != JSON_MODES[-1] and mentions_response_format(exc):
                    self._json_modes[model] = JSON_MODES[JSON_MODES.index(mode) + 1]
                    continue
                raise
            raw = strip_wrappers(comp.content or "")
            run.last_raw = comp.content or ""
            cut = comp.finish_reason == "length"
            error: str | None
            echo = None
            if cut:  # even a complete-looking object: its last items may be the ones the cap dropped
                status, error, data, value = "malformed", self._cut_error(stage, cap), None, None
            else:
                status, error, data, value = self._check(raw, schema, validate)
                # Checked before the schema's verdict: "you copied the example" is the reason to give.
                echo = prompt.example.echo_in(data) if data is not None else None
                if echo is not None:
                    status, error, value = "malformed", f"the reply repeats the prompt's example: {echo}", None
            self._record(run, sent, comp.content or "", status, comp, error, mode)
            if error is None:
                return Structured(value, data or {}, raw, run.attempt, run.prompt_tokens, run.completion_tokens)
            run.errors.append(error)
            # A cut reply and an echo get one re-ask each: asking a rambling or copying model
            # again the same way would only spend the stage's time on another one.
            if (cut and cut_reasked) or (echo and echo_reasked):
                times = "" if cut and not reask_cut else " twice"
                raise run.failure(f"{'reply cut at the output cap' if cut else 'the prompt example repeated'}"
                                  f"{times}; {error}", reason="output")
            if not cut and reasks >= self.settings.openai.reask_attempts:
                raise run.failure(f"no usable output after {run.attempt} attempt(s); last error: {error}", reason="output")
            cut_reasked = cut_reasked or cut
            echo_reasked = echo_reasked or echo is not None
            reasks += not cut
            convo = convo + self._reask(comp, error)

    @staticmethod
    def _check(
        raw: str, schema: type[BaseModel], validate: bool
    ) -> tuple[str, str | None, dict[str, Any] | None, BaseModel | None]:
        if not raw.strip():
            return "missing", "empty reply", None, None
        data, why = read_object(raw)
        if data is None:
            return "malformed", why, None, None
        if not validate:
            return "valid", None, data, None
        try:
            return "valid", None, data, schema.model_validate(data)
        except ValidationError as exc:
            return "malformed", f"JSON does not match the {schema.__name__} schema: {_validation_summary(exc)}", data, None

    @staticmethod
    def _reask(comp: Completion, error: str) -> list[ChatCompletionMessageParam]:
        if comp.finish_reason == "length":
            note = (
                "Your previous reply was cut off at the output token limit. Reply again with one complete, "
                "shorter JSON object: fewer items, shorter texts."
            )
            return [{"role": "user", "content": note}]
        if not (comp.content or "").strip():
            return [{"role": "user", "content": "Your previous reply was empty. Reply with the JSON object now."}]
        echo = comp.content or ""
        if len(echo) > REASK_ECHO_CHARS:
            echo = echo[:REASK_ECHO_CHARS] + " [...]"
        note = f"Your previous reply could not be used: {error}\nReply again with only the corrected JSON object: no prose, no code fences."
        return [{"role": "assistant", "content": echo}, {"role": "user", "content": note}]

    @staticmethod
    def _format_kwargs(mode: str, schema: type[BaseModel]) -> _Options:
        if mode == "json_schema":
            # strict=False: pydantic schemas do not meet OpenAI's strict-mode subset, and the
            # re-ask loop validates anyway.
            return {"response_format": {"type": "json_schema", "json_schema": {
                "name": schema.__name__, "schema": schema.model_json_schema(), "strict": False}}}
        if mode == "json_object":
            return {"response_format": {"type": "json_object"}}
        return {}

    @staticmethod
    def _with_schema_note(
        messages: list[ChatCompletionMessageParam], mode: str, schema: type[BaseModel]
    ) -> list[ChatCompletionMessageParam]:
        if mode == "json_schema":
            return messages
        note = (
            "Reply with one JSON object only, matching this JSON Schema:\n"
            + json.dumps(schema.model_json_schema(), ensure_ascii=False, separators=(",", ":"))
        )
        # Joined to the system prompt: some chat templates reject a second system message, and
        # the evidence parts after it must stay the cuttable tail.
        first = messages[0]
        if first["role"] != "system":
            raise ValueError(f"a stage's messages open with its system prompt, not a {first['role']} message")
        return [{**first, "content": f"{first['content']}\n\n{note}"}, *messages[1:]]

    # --- transport -------------------------------------------------------------------------

    def _send(self, run: _Run, messages: list[ChatCompletionMessageParam], extra: _Options) -> Completion:
        bound, key = self.stage_budget(run.stage)
        if self._remaining(run) <= 0:
            last = f"; last error: {run.errors[-1]}" if run.errors else ""
            raise run.failure(f"the stage ran out of its {bound:g} s ({key}) after "
                              f"{run.attempt} attempt(s){last}", reason="deadline")
        retrying = tenacity.Retrying(
            sleep=self.sleep,
            retry=tenacity.retry_if_exception_type(_AttemptFailed),
            wait=self._wait,
            stop=lambda state: self._stop(run, state),
            before=lambda state: self._begin_attempt(run),
            after=lambda state: self._record_failed(run, messages, state),
            reraise=True,
        )
        try:
            return retrying(self._attempt, run, messages, extra)
        except _AttemptFailed as exc:
            if not exc.retryable:
                raise run.failure(exc.message, exc.status_code, reason="http") from exc
            if exc.stopped_by == "deadline":
                raise run.failure(f"{exc.message}; the stage ran out of its {bound:g} s ({key}) "
                                  f"after {run.attempt} attempt(s)", exc.status_code, reason="deadline") from exc
            raise run.failure(f"{exc.message} (gave up after {run.attempt} attempt(s))", exc.status_code) from exc

    @staticmethod
    def _remaining(run: _Run) -> float:
        return run.deadline - time.monotonic()

    @staticmethod
    def _begin_attempt(run: _Run) -> None:
        run.attempt += 1

    def _record_failed(self, run: _Run, messages: list[ChatCompletionMessageParam], state: tenacity.RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome is not None else None
        if isinstance(exc, _AttemptFailed):
            run.errors.append(exc.message)
            self._record_error(run, messages, exc)

    def _wait(self, state: tenacity.RetryCallState) -> float:
        # Asked by tenacity and by _stop, in an order that differs between tenacity releases.
        exc = state.outcome.exception() if state.outcome is not None else None
        if not isinstance(exc, _AttemptFailed):
            return 0.0
        if exc.planned_wait is None:
            if exc.wait_s is not None:
                exc.planned_wait = min(RETRY_AFTER_CAP_S, exc.wait_s)
            else:
                delay = min(BACKOFF_CAP_S, BACKOFF_BASE_S * 2.0 ** (state.attempt_number - 1))
                exc.planned_wait = delay / 2 + self.jitter() * delay / 2
        return exc.planned_wait

    def _stop(self, run: _Run, state: tenacity.RetryCallState) -> bool:
        exc = state.outcome.exception() if state.outcome is not None else None
        if not isinstance(exc, _AttemptFailed) or not exc.retryable:
            return True
        if state.attempt_number > self.settings.openai.max_retries:
            exc.stopped_by = "retries"
        elif self._remaining(run) <= self._wait(state):
            exc.stopped_by = "deadline"
        return bool(exc.stopped_by)

    def _attempt(self, run: _Run, messages: list[ChatCompletionMessageParam], extra: _Options) -> Completion:
        """One streamed request; a failure is an _AttemptFailed for tenacity to retry or not.

        Streamed so that a slow model is judged by its progress: the request fails when no token
        came for `openai.timeout_s` (the first one includes reading the prompt) or when the
        stage's time runs out, never at a fixed total, and what was generated before a cut is
        counted and recorded."""
        bound, key = self.stage_budget(run.stage)
        remaining = self._remaining(run)
        idle = max(0.01, min(self.settings.openai.timeout_s, remaining))
        # Which bound a silence runs into: the wait for a token, or what is left of the stage.
        waited = f"the stage's {bound:g} s ({key})" if remaining < self.settings.openai.timeout_s else \
            f"{round(idle, 1):g} s (openai.timeout_s)"
        started = time.perf_counter()
        reader = _StreamReader(run, bound)
        try:
            with endpoint_slots(str(self.client.base_url), self.settings.jobs.llm_concurrency):
                started = time.perf_counter()  # the wait for a slot is not the endpoint's latency
                stream = self.client.chat.completions.create(
                    model=run.model, messages=messages, timeout=idle, stream=True,
                    stream_options=_WITH_USAGE, **extra)
                with stream:
                    if "event-stream" not in stream.response.headers.get("content-type", ""):
                        return self._unstreamed(run, messages, stream.response.read(), _since(started))
                    reader.read(stream, lambda: self._remaining(run) <= 0)
        except openai.APIStatusError as exc:
            raise _AttemptFailed(
                f"HTTP {exc.status_code} from {self.client.base_url}: {exc.message}",
                raw=exc.response.text if exc.response is not None else "", latency_ms=_since(started),
                status_code=exc.status_code,
                retryable=exc.status_code in _RETRYABLE_STATUS or exc.status_code >= 500,
                wait_s=_retry_after_s(exc) if exc.status_code == 429 else None,
            ) from exc
        except (openai.APITimeoutError, httpx.TimeoutException) as exc:
            what = f"no token within {waited}" if reader.chunks else f"no reply within {waited}"
            raise reader.cut(f"request to {self.client.base_url} timed out: {what}", messages, _since(started)) from exc
        except (openai.APIConnectionError, httpx.HTTPError) as exc:
            raise reader.cut(f"cannot connect to {self.client.base_url}: {_root_cause(exc)}" if not reader.chunks else
                             f"the stream from {self.client.base_url} broke off: {_root_cause(exc)}",
                             messages, _since(started)) from exc
        except openai.APIError as exc:  # an error event inside the stream
            raise reader.cut(f"{self.client.base_url} sent an error mid-stream: {exc.message}", messages,
                             _since(started)) from exc
        if reader.out_of_time:
            raise reader.cut(f"the reply was stopped at the stage's {bound:g} s ({key})", messages, _since(started))
        return reader.completion(messages, _since(started))

    def _unstreamed(
        self, run: _Run, messages: list[ChatCompletionMessageParam], body: bytes, latency_ms: float
    ) -> Completion:
        """The reply of an endpoint that answered the streamed request with one body."""
        text = body.decode("utf-8", "replace")
        try:
            response = ChatCompletion.model_validate(loads_bounded(text))
        except (ValueError, ValidationError) as exc:
            # A 200 whose body is not a chat completion: a proxy's or gateway's HTML page.
            raise _AttemptFailed(f"HTTP 200 from {self.client.base_url} but the body is not a chat completion",
                                 raw=text[:NON_JSON_KEPT_CHARS], latency_ms=latency_ms) from exc
        return self._completion(run, messages, response, latency_ms)

    @staticmethod
    def _completion(
        run: _Run, messages: list[ChatCompletionMessageParam], response: ChatCompletion, latency_ms: float
    ) -> Completion:
        choice = response.choices[0] if response.choices else None
        message = choice.message if choice is not None else None
        content = message.content if message is not None else None
        calls = [_call_param(c) for c in (message.tool_calls or [])] if message is not None else []
        usage = response.usage
        prompt_tokens = usage.prompt_tokens if usage and usage.prompt_tokens else estimate_messages_tokens(messages)
        sent_text = (content or "") + (json.dumps(calls, ensure_ascii=False) if calls else "")
        completion_tokens = usage.completion_tokens if usage and usage.completion_tokens else estimate_tokens(sent_text)
        run.prompt_tokens += prompt_tokens
        run.completion_tokens += completion_tokens
        return Completion(content, calls, choice.finish_reason if choice else None, prompt_tokens,
                          completion_tokens, latency_ms)


    # --- records ---------------------------------------------------------------------------

    def _record(
        self, run: _Run, messages: list[ChatCompletionMessageParam], raw: str, status: str, comp: Completion, error: str | None,
        json_mode: str | None,
    ) -> None:
        run.ctx.record(LlmCallRecord(
            stage=run.stage, round=run.ctx.round, provider=self.provider_name, model=run.model,
            prompt_file=run.prompt.file, prompt_version=run.prompt.version, messages=[dict(m) for m in messages],
            raw_response=redact(raw), parse_status=status, attempt=run.attempt,  # type: ignore[arg-type]
            prompt_tokens=comp.prompt_tokens, completion_tokens=comp.completion_tokens,
            latency_ms=round(comp.latency_ms, 1), error=error, json_mode=json_mode, finish_reason=comp.finish_reason,
        ))

    def _record_error(self, run: _Run, messages: list[ChatCompletionMessageParam], exc: _AttemptFailed) -> None:
        run.ctx.record(LlmCallRecord(
            stage=run.stage, round=run.ctx.round, provider=self.provider_name, model=run.model,
            prompt_file=run.prompt.file, prompt_version=run.prompt.version, messages=[dict(m) for m in messages],
            raw_response=redact(exc.raw), parse_status="n/a", attempt=run.attempt, prompt_tokens=exc.prompt_tokens,
            completion_tokens=exc.completion_tokens, latency_ms=round(exc.latency_ms, 1), error=redact(exc.message),
        ))
