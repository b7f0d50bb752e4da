"""StructuredLlmInvoker: one place for strict-JSON calls to an OpenAI-compatible endpoint (docs/spec.md#split-chain).

The loop: call -> strip reasoning and code fences -> parse -> validate with pydantic -> on failure
re-ask with the error appended, a bounded number of times. Around each call: transport retries
(429 honouring Retry-After, 5xx, timeouts, refused connections) with bounded exponential backoff
and jitter. Every attempt, failed or not, becomes an `llm_call` record (law 6). Final failure is
one exception, `LlmCallError`, carrying the last raw completion, the attempts and the tokens.

JSON mode is negotiated per model: `json_schema` first, then `json_object`, then the prompt alone,
stepping down when the endpoint answers 400 about `response_format`, and remembered.
"""

from __future__ import annotations

import json
import random
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

import openai
from pydantic import BaseModel, ValidationError

from pipeline.bounds import loads_bounded
from pipeline.config import Settings
from pipeline.contracts import LlmCallRecord
from pipeline.llm.budget import estimate_messages_tokens, estimate_tokens, fit_messages
from pipeline.llm.endpoint_limit import endpoint_slots
from pipeline.llm.prompts import Prompt
from pipeline.llm.provider import StageContext, StageFailure
from pipeline.redact import redact, redact_value

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletionMessageParam

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

_THINK = re.compile(r"<(think|thinking|reasoning)>.*?</\1>", re.S | re.I)
_FENCE = re.compile(r"```[a-zA-Z0-9_-]*[ \t]*\n(.*?)\n?[ \t]*```", re.S)


class LlmCallError(StageFailure):
    """A stage's LLM call failed for good: transport, refusal, or no valid output after re-asks."""

    def __init__(
        self,
        stage: str,
        message: str,
        *,
        last_raw: str = "",
        attempts: int = 0,
        prompt_tokens: int = 0,
        completion_tokens: int = 0,
        status_code: int | None = None,
        reason: str = "transport",
    ):
        super().__init__(stage, message)
        # "transport": no answer (refused, timed out, 429/5xx to the end); "http": a non-retryable
        # HTTP error; "output": answers came, none usable after the re-asks; "budget": the prompt
        # cannot be cut down to budget.prompt_tokens.
        self.reason = reason
        self.last_raw = last_raw
        self.attempts = attempts
        self.prompt_tokens = prompt_tokens
        self.completion_tokens = completion_tokens
        self.status_code = status_code


def strip_reasoning(text: str) -> str:
    """The reply without <think> blocks and without the code fence around the JSON."""
    text = _THINK.sub("", text).strip()
    fenced = _FENCE.search(text)
    if fenced and (text.startswith("```") or text.count("```") == 2):
        return fenced.group(1).strip()
    return text


def parse_json_object(raw: str) -> tuple[dict[str, Any] | None, str | None]:
    """(object, None) or (None, why not)."""
    if not raw.strip():
        return None, "empty reply"
    try:
        data = loads_bounded(raw)  # a 100k-deep reply is "not valid JSON", never RecursionError
    except ValueError as exc:
        return None, f"not valid JSON: {exc}"
    if not isinstance(data, dict):
        return None, f"expected one JSON object, got {type(data).__name__}"
    return data, None


def _validation_summary(exc: ValidationError, limit: int = 10) -> str:
    parts = [f"{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}" for e in exc.errors()[:limit]]
    more = len(exc.errors()) - limit
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")


@dataclass
class Completion:
    content: str | None
    tool_calls: list[dict[str, Any]]
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
    attempt: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    last_raw: str = ""
    errors: list[str] = field(default_factory=list)

    def failure(self, message: str, status_code: int | None = None, reason: str = "transport") -> LlmCallError:
        return LlmCallError(
            self.stage, redact(message), last_raw=self.last_raw, attempts=self.attempt, prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens, status_code=status_code, reason=reason,
        )


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


def _root_cause(exc: BaseException) -> str:
    while exc.__cause__ is not None:
        exc = exc.__cause__
    return str(exc) or type(exc).__name__


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
        return self._json_modes.get(model, JSON_MODES[0])

    # --- public calls ----------------------------------------------------------------------

    def invoke(
        self, ctx: StageContext, *, stage: str, model: str, prompt: Prompt, messages: list[dict[str, Any]],
        schema: type[T], focus_terms: list[str] | None = None,
    ) -> Structured[T]:
        """A validated instance of `schema`; re-asks on bad JSON and on schema errors."""
        return self._structured(ctx, stage, model, prompt, messages, schema, True, focus_terms or [])

    def invoke_json(
        self, ctx: StageContext, *, stage: str, model: str, prompt: Prompt, messages: list[dict[str, Any]],
        schema_hint: type[BaseModel], focus_terms: list[str] | None = None,
    ) -> Structured[BaseModel]:
        """Any JSON object (re-asks only on non-JSON). `schema_hint` guides, never judges: the
        diagnosis stage's schema errors are the gatekeeper's to find, not ours to repair."""
        return self._structured(ctx, stage, model, prompt, messages, schema_hint, False, focus_terms or [])

    def complete(
        self, ctx: StageContext, *, stage: str, model: str, prompt: Prompt, messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None, tool_choice: str | None = None,
        focus_terms: list[str] | None = None,
    ) -> Completion:
        """One chat completion (tool calling allowed), with transport retries; recorded."""
        run = _Run(ctx, stage, model, prompt)
        sent = self._fit(run, messages, focus_terms or [], tools)
        extra: dict[str, Any] = {}
        if tools:
            extra = {"tools": tools, "tool_choice": tool_choice or "auto"}
        comp = self._send(run, sent, extra)
        status = "valid" if (comp.tool_calls or (comp.content or "").strip()) else "missing"
        self._record(run, sent, comp.raw, status, comp, None)
        return comp

    def _fit(
        self, run: _Run, messages: list[dict[str, Any]], focus_terms: list[str], tools: list[dict[str, Any]] | None = None
    ) -> list[dict[str, Any]]:
        try:
            # Redacted before sending: a tool output or error may hold a credential (law 9).
            return fit_messages(redact_value(messages), self.settings.budget.prompt_tokens, focus_terms, tools)[0]
        except ValueError as exc:
            raise run.failure(f"prompt does not fit budget.prompt_tokens: {exc}", reason="budget") from exc

    # --- the loop --------------------------------------------------------------------------

    def _structured(
        self, ctx: StageContext, stage: str, model: str, prompt: Prompt, messages: list[dict[str, Any]],
        schema: type[BaseModel], validate: bool, focus_terms: list[str],
    ) -> Structured[Any]:
        run = _Run(ctx, stage, model, prompt)
        convo = list(messages)
        reasks = 0
        while True:
            mode = self.json_mode(model)
            sent = self._fit(run, self._with_schema_note(convo, mode, schema), focus_terms)
            try:
                comp = self._send(run, sent, self._format_kwargs(mode, schema))
            except LlmCallError as exc:
                if mode != JSON_MODES[-1] and mentions_response_format(exc):
                    self._json_modes[model] = JSON_MODES[JSON_MODES.index(mode) + 1]
                    continue
                raise
            raw = strip_reasoning(comp.content or "")
            run.last_raw = comp.content or ""
            status, error, data, value = self._check(raw, comp.finish_reason, schema, validate)
            self._record(run, sent, comp.content or "", status, comp, error)
            if error is None:
                return Structured(value, data or {}, raw, run.attempt, run.prompt_tokens, run.completion_tokens)
            run.errors.append(error)
            if reasks >= self.settings.openai.reask_attempts:
                raise run.failure(f"no usable output after {run.attempt} attempt(s); last error: {error}", reason="output")
            reasks += 1
            convo = convo + self._reask(comp, error)

    @staticmethod
    def _check(
        raw: str, finish_reason: str | None, schema: type[BaseModel], validate: bool
    ) -> tuple[str, str | None, dict[str, Any] | None, BaseModel | None]:
        if finish_reason == "length":
            return "malformed", "reply truncated at the output token limit (finish_reason=length)", None, None
        if not raw.strip():
            return "missing", "empty reply", None, None
        data, why = parse_json_object(raw)
        if data is None:
            return "malformed", why, None, None
        if not validate:
            return "valid", None, data, None
        try:
            return "valid", None, data, schema.model_validate(data)
        except ValidationError as exc:
            return "malformed", f"JSON does not match the {schema.__name__} schema: {_validation_summary(exc)}", data, None

    @staticmethod
    def _reask(comp: Completion, error: str) -> list[dict[str, Any]]:
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
    def _format_kwargs(mode: str, schema: type[BaseModel]) -> dict[str, Any]:
        if mode == "json_schema":
            # strict=False: pydantic schemas do not meet OpenAI's strict-mode subset, and the
            # re-ask loop validates anyway.
            spec = {"name": schema.__name__, "schema": schema.model_json_schema(), "strict": False}
            return {"response_format": {"type": "json_schema", "json_schema": spec}}
        if mode == "json_object":
            return {"response_format": {"type": "json_object"}}
        return {}

    @staticmethod
    def _with_schema_note(messages: list[dict[str, Any]], mode: str, schema: type[BaseModel]) -> list[dict[str, Any]]:
        if mode == "json_schema":
            return messages
        note = (
            "Reply with one JSON object only, matching this JSON Schema:\n"
            + json.dumps(schema.model_json_schema(), ensure_ascii=False, separators=(",", ":"))
        )
        # Joined to the system prompt: some chat templates reject a second system message, and
        # the evidence parts after it must stay the cuttable tail.
        first = messages[0]
        return [{**first, "content": f"{first['content']}\n\n{note}"}, *messages[1:]]

    # --- transport -------------------------------------------------------------------------

    def _send(self, run: _Run, messages: list[dict[str, Any]], extra: dict[str, Any]) -> Completion:
        retries = 0
        opts = self.settings.openai
        response: Any  # a ChatCompletion, or the text of a body that is not one
        while True:
            run.attempt += 1
            started = time.perf_counter()
            try:
                with endpoint_slots(str(self.client.base_url), self.settings.jobs.llm_concurrency):
                    started = time.perf_counter()  # the wait for a slot is not the endpoint's latency
                    # The messages are the chat shape as plain dicts (they are also what llm_call records).
                    sent = cast("list[ChatCompletionMessageParam]", messages)
                    response = self.client.chat.completions.create(model=run.model, messages=sent, **extra)
            except openai.APIStatusError as exc:
                latency = (time.perf_counter() - started) * 1000
                retryable = exc.status_code in _RETRYABLE_STATUS or exc.status_code >= 500
                message = f"HTTP {exc.status_code} from {self.client.base_url}: {exc.message}"
                self._record_error(run, messages, exc.response.text if exc.response is not None else "", message, latency)
                if not retryable:
                    raise run.failure(message, exc.status_code, reason="http") from exc
                if retries >= opts.max_retries:
                    raise run.failure(f"{message} (gave up after {run.attempt} attempt(s))", exc.status_code) from exc
                retries += 1
                wait = _retry_after_s(exc) if exc.status_code == 429 else None
                self.sleep(min(RETRY_AFTER_CAP_S, wait) if wait is not None else self._backoff(retries))
                continue
            except openai.APIConnectionError as exc:
                latency = (time.perf_counter() - started) * 1000
                if isinstance(exc, openai.APITimeoutError):
                    message = f"request to {self.client.base_url} timed out after {opts.timeout_s:g} s"
                else:
                    message = f"cannot connect to {self.client.base_url}: {_root_cause(exc)}"
                self._record_error(run, messages, "", message, latency)
                if retries >= opts.max_retries:
                    raise run.failure(f"{message} (gave up after {run.attempt} attempt(s))") from exc
                retries += 1
                self.sleep(self._backoff(retries))
                continue
            except ValueError as exc:
                # A 200 whose body is not JSON (a proxy's or gateway's HTML page): the SDK raises
                # when it is labelled JSON, and returns the bare text otherwise (handled below).
                response = getattr(exc, "doc", None) or str(exc)
            if isinstance(response, str):
                latency = (time.perf_counter() - started) * 1000
                message = f"HTTP 200 from {self.client.base_url} but the body is not a chat completion"
                self._record_error(run, messages, response[:NON_JSON_KEPT_CHARS], message, latency)
                if retries >= opts.max_retries:
                    raise run.failure(f"{message} (gave up after {run.attempt} attempt(s))")
                retries += 1
                self.sleep(self._backoff(retries))
                continue
            return self._completion(run, messages, response, (time.perf_counter() - started) * 1000)

    def _backoff(self, retry: int) -> float:
        delay = min(BACKOFF_CAP_S, BACKOFF_BASE_S * 2.0 ** (retry - 1))
        return delay / 2 + self.jitter() * delay / 2

    @staticmethod
    def _completion(run: _Run, messages: list[dict[str, Any]], response: Any, latency_ms: float) -> Completion:
        choice = response.choices[0] if response.choices else None
        message = choice.message if choice is not None else None
        content = message.content if message is not None else None
        calls = [c.model_dump(exclude_none=True) for c in (message.tool_calls or [])] if message is not None else []
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
        self, run: _Run, messages: list[dict[str, Any]], raw: str, status: str, comp: Completion, error: str | None
    ) -> None:
        run.ctx.record(LlmCallRecord(
            stage=run.stage, round=run.ctx.round, provider=self.provider_name, model=run.model,
            prompt_file=run.prompt.file, prompt_version=run.prompt.version, messages=messages,
            raw_response=redact(raw), parse_status=status, attempt=run.attempt,  # type: ignore[arg-type]
            prompt_tokens=comp.prompt_tokens, completion_tokens=comp.completion_tokens,
            latency_ms=round(comp.latency_ms, 1), error=error,
        ))

    def _record_error(self, run: _Run, messages: list[dict[str, Any]], raw: str, error: str, latency_ms: float) -> None:
        run.ctx.record(LlmCallRecord(
            stage=run.stage, round=run.ctx.round, provider=self.provider_name, model=run.model,
            prompt_file=run.prompt.file, prompt_version=run.prompt.version, messages=messages,
            raw_response=redact(raw), parse_status="n/a", attempt=run.attempt, prompt_tokens=0, completion_tokens=0,
            latency_ms=round(latency_ms, 1), error=redact(error),
        ))
