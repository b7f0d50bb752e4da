"""`workbench doctor`: what the configured LLM endpoint can do, and what the pipeline does when it can't.

Three probes against the endpoint and model of the settings: reachable (model list, else a
1-token chat), JSON output (json_schema, else json_object, else prompt-only), tool calling (else the
Collector runs the planner's tool calls). Each line starts with [ok], [warn] or [fail].
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

import openai

from pipeline.core.config import Settings
from pipeline.llm.invoker import strip_reasoning
from pipeline.text.redact import redact

if TYPE_CHECKING:  # the SDK's request types; annotations only, so any supported SDK version runs this
    from openai.types.chat import ChatCompletionMessageParam, ChatCompletionToolParam
    from openai.types.chat.completion_create_params import ResponseFormat

PROBE_SCHEMA = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}},
    "required": ["ok"],
    "additionalProperties": False,
}
# Probe replies are a few tokens; the cap keeps a small model from rambling into the timeout.
PROBE_MAX_TOKENS = 64
PROBE_TOOL: ChatCompletionToolParam = {
    "type": "function",
    "function": {
        "name": "ping",
        "description": "Answers pong. Call it when asked to ping.",
        "parameters": {"type": "object", "properties": {"target": {"type": "string"}}, "required": ["target"]},
    },
}


@dataclass
class Check:
    status: str  # ok | warn | fail
    text: str

    @property
    def line(self) -> str:
        return f"[{self.status}] {self.text}"


def _client(settings: Settings) -> openai.OpenAI:
    o = settings.openai
    return openai.OpenAI(base_url=o.base_url, api_key=o.api_key or "not-needed",
                         timeout=min(o.timeout_s, 30.0), max_retries=0)


def _why(exc: Exception) -> str:
    if isinstance(exc, openai.APIStatusError):
        return f"HTTP {exc.status_code}: {exc.message}"
    if isinstance(exc, openai.APITimeoutError):
        return "timed out"
    cause: BaseException = exc
    while cause.__cause__ is not None:
        cause = cause.__cause__
    return str(cause) or type(cause).__name__


def _reachable(client: openai.OpenAI, model: str) -> Check:
    try:
        listed = [m.id for m in client.models.list()]
        if model in listed:
            return Check("ok", f"endpoint {client.base_url} reachable; model {model} is listed")
        shown = ", ".join(listed[:8]) + (" ..." if len(listed) > 8 else "")
        return Check("fail", f"endpoint {client.base_url} reachable, but model {model} is not listed ({shown or 'no models'})")
    except openai.NotFoundError:
        pass  # some backends have no /models; a chat tells the same
    except (openai.APIConnectionError, openai.AuthenticationError, openai.PermissionDeniedError) as exc:
        return Check("fail", f"endpoint {client.base_url} not usable: {_why(exc)}; the pipeline needs provider=offline")
    except openai.APIError:
        pass
    try:
        client.chat.completions.create(model=model, messages=[{"role": "user", "content": "ping"}], max_tokens=1)
        return Check("ok", f"endpoint {client.base_url} reachable; model {model} answers (no model list)")
    except openai.APIError as exc:
        return Check("fail", f"endpoint {client.base_url}, model {model}: {_why(exc)}")


def _json_mode(client: openai.OpenAI, model: str) -> Check:
    messages: list[ChatCompletionMessageParam] = [
        {"role": "user", "content": 'Reply with the JSON object {"ok": true} and nothing else.'}]
    formats: list[tuple[str, ResponseFormat]] = [
        ("json_schema", {"type": "json_schema", "json_schema": {"name": "probe", "schema": PROBE_SCHEMA, "strict": False}}),
        ("json_object", {"type": "json_object"}),
    ]
    rejected: list[str] = []
    for name, response_format in formats:
        try:
            reply = client.chat.completions.create(model=model, messages=messages, response_format=response_format,
                                                   max_tokens=PROBE_MAX_TOKENS)
        except openai.BadRequestError as exc:
            rejected.append(f"{name} ({_why(exc)})")
            continue
        except openai.APIError as exc:
            return Check("warn", f"JSON mode not probed: {_why(exc)}")
        content = strip_reasoning(reply.choices[0].message.content or "") if reply.choices else ""
        try:
            parsed = isinstance(json.loads(content), dict)
        except ValueError:
            parsed = False
        suffix = f"; refused: {', '.join(rejected)}" if rejected else ""
        if not parsed:
            return Check("warn", f"response_format {name} accepted but the reply was not a JSON object; "
                                 f"stages rely on re-asks{suffix}")
        fallback = "" if name == "json_schema" else "; the stages send json_object plus the schema in the prompt"
        return Check("ok" if name == "json_schema" else "warn", f"JSON output: response_format {name} works{fallback}{suffix}")
    return Check("warn", "no response_format accepted; the stages ask for JSON in the prompt only and re-ask on "
                         f"bad JSON (refused: {', '.join(rejected)})")


def _tools(client: openai.OpenAI, model: str) -> Check:
    try:
        reply = client.chat.completions.create(
            model=model, messages=[{"role": "user", "content": "Call the ping tool with target 'db'."}],
            tools=[PROBE_TOOL], tool_choice="auto", max_tokens=PROBE_MAX_TOKENS,
        )
    except openai.BadRequestError as exc:
        return Check("warn", f"tool calling refused ({_why(exc)}); the Collector will run the planner's tool calls")
    except openai.APIError as exc:
        return Check("warn", f"tool calling not probed: {_why(exc)}")
    calls = reply.choices[0].message.tool_calls if reply.choices else None
    if calls:
        return Check("ok", "tool calling works; the Collector runs as a tool loop")
    return Check("warn", "tools accepted but the model called none; if it keeps not calling, the Collector "
                         "runs the planner's tool calls")


def _checks(settings: Settings) -> list[Check]:
    o = settings.openai
    if settings.provider != "openai":
        return [Check("ok", f"provider {settings.provider}: no LLM endpoint is used")]
    if not o.base_url and not o.api_key:
        return [Check("fail", "provider openai but neither OPENAI_BASE_URL nor OPENAI_API_KEY is set")]
    client = _client(settings)
    models = sorted({o.model, *o.stage_models.values()})
    checks: list[Check] = []
    for model in models:
        reach = _reachable(client, model)
        checks.append(reach)
        if reach.status == "fail":
            continue
        checks.append(_json_mode(client, model))
        checks.append(_tools(client, model))
    return checks


def doctor(settings: Settings) -> tuple[bool, list[str]]:
    """(usable, lines): usable unless a check failed outright; warnings have a fallback."""
    checks = _checks(settings)
    # Redacted: the endpoint URL may carry user:pass@, an error may echo the key.
    return all(c.status != "fail" for c in checks), [redact(c.line) for c in checks]
