"""`workbench doctor`: what the configured LLM endpoint can do, and what the pipeline does when it can't.

Probes against the endpoint and model of the settings: reachable (model list, else a 1-token
chat), JSON output (json_schema, else json_object, else prompt-only), tool calling (else the
Collector runs the planner's tool calls) and, with `measure`, its speed and the settings that fit
it (`fit.py`). Each line starts with [ok], [warn] or [fail].
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

import openai

from pipeline.core.config import Settings
from pipeline.frontends.fit import Fit, fit, measure_speed
from pipeline.text.redact import redact
from pipeline.text.replies import strip_wrappers

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
    # The configured first-token wait: a slow endpoint is what the speed probe is there to find.
    return openai.OpenAI(base_url=o.base_url, api_key=o.api_key or "not-needed", timeout=max(o.timeout_s, 30.0),
                         max_retries=0)


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
        content = strip_wrappers(reply.choices[0].message.content or "") if reply.choices else ""
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


def _speed(client: openai.OpenAI, model: str, settings: Settings) -> tuple[Check, Fit | None]:
    try:
        speed = measure_speed(client, model)
    except openai.APIError as exc:
        return Check("warn", f"speed not measured: {_why(exc)}"), None
    found = fit(speed, settings)
    o, caps = settings.openai, settings.budget.output_tokens
    measured = (f"speed of {model}: prompt {speed.prompt_tps:.0f} tokens/s, generation {speed.generation_tps:.1f} "
                f"tokens/s (measured now; a busy machine measures slower)")
    tight = [s for s, cap in found.output_tokens.items() if cap < getattr(caps, s)]
    if not tight and found.timeout_s <= o.timeout_s:
        return Check("ok", f"{measured}; the settings fit"), found
    shown = ", ".join(f"{s} {found.output_tokens[s]} tokens / {found.stage_timeouts[s]:g} s"
                      for s in found.output_tokens)
    return Check("warn", f"{measured}; settings that fit a {sum(found.stage_timeouts.values()):.0f} s session: "
                         f"openai.timeout_s {found.timeout_s:g}, per stage output cap / time: {shown} "
                         "(`workbench doctor --write` writes them to the settings file)"), found


def _checks(settings: Settings, measure: bool = False) -> tuple[list[Check], Fit | None]:
    o = settings.openai
    if settings.provider != "openai":
        return [Check("ok", f"provider {settings.provider}: no LLM endpoint is used")], None
    if not o.base_url and not o.api_key:
        return [Check("fail", "provider openai but neither OPENAI_BASE_URL nor OPENAI_API_KEY is set")], None
    client = _client(settings)
    models = sorted({o.model, *o.stage_models.values()})
    checks: list[Check] = []
    found: Fit | None = None
    for model in models:
        reach = _reachable(client, model)
        checks.append(reach)
        if reach.status == "fail":
            continue
        checks.append(_json_mode(client, model))
        checks.append(_tools(client, model))
        if measure and model == o.model:
            check, found = _speed(client, model, settings)
            checks.append(check)
    return checks, found


def doctor(settings: Settings, *, measure: bool = False) -> tuple[bool, list[str], Fit | None]:
    """(usable, lines, the settings that fit the measured speed): usable unless a check failed
    outright; warnings have a fallback."""
    checks, found = _checks(settings, measure)
    # Redacted: the endpoint URL may carry user:pass@, an error may echo the key.
    return all(c.status != "fail" for c in checks), [redact(c.line) for c in checks], found
