"""Every error a person can cause or meet, under one base class.

The CLI turns any `WorkbenchError` into one line on stderr and exit code 2; the UI shows it in a
message box. Anything else reaching the top is a bug and keeps its traceback. A message names
what was wrong and what to do, never a repr of a huge value.
"""

from __future__ import annotations

import reprlib

# How much of a user-supplied value a message may quote: enough to recognise it, never a
# multi-megabyte repr (an expanded YAML alias bomb, a huge JSON reply).
QUOTE_CHARS = 80


class WorkbenchError(Exception):
    """Base of every expected failure; `str(err)` is the one line shown to the user."""


class NotFound(WorkbenchError):
    """A session, world, incident, rule version or file that does not exist."""


class ConfigError(WorkbenchError):
    """workbench.yaml or an environment variable holds something unusable."""


class RulesError(WorkbenchError):
    """A rules directory or rules YAML text that does not validate.

    `messages` holds one "file: field: problem" per problem, so a page can list them all; loading
    reports every problem at once rather than one per edit-and-retry.
    """

    def __init__(self, messages: list[str] | str) -> None:
        self.messages = [messages] if isinstance(messages, str) else list(messages)
        super().__init__("\n".join(self.messages))


class BundleError(WorkbenchError):
    """A session bundle that cannot be read or does not match the bundle schema."""


class BackendError(WorkbenchError):
    """An evidence backend (Prometheus, Loki, log files, runbooks) failed or is misconfigured."""


class StoreError(WorkbenchError):
    """The database cannot be opened, migrated, read or written."""


class StageFailure(WorkbenchError):
    """A stage could not produce usable output after its retries (endpoint refused, etc.)."""

    def __init__(self, stage: str, message: str):
        super().__init__(f"{stage}: {message}")
        self.stage = stage


class LlmCallError(StageFailure):
    """A stage's LLM call failed for good: transport, refusal, or no valid output after re-asks
    (pipeline/llm/invoker.py raises it)."""

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
        # cannot be cut down to budget.prompt_tokens; "deadline": the stage's wall-time bound
        # (openai.stage_timeout_s) ran out.
        self.reason = reason
        self.last_raw = last_raw
        self.attempts = attempts
        self.prompt_tokens = prompt_tokens
        self.completion_tokens = completion_tokens
        self.status_code = status_code

    @property
    def fell_short(self) -> bool:
        """The model gave nothing usable within the stage's bounds (its attempts are on record): the
        stage's code fallback answers instead, so a slow or copying model yields a slower honest
        answer rather than a failed session. No answer at all (transport, http) is a failure."""
        return self.reason in ("output", "deadline")


class InputError(WorkbenchError):
    """A question or argument that cannot be used as given."""


def _short_repr() -> reprlib.Repr:
    r = reprlib.Repr()
    r.maxlevel, r.maxlist, r.maxdict, r.maxstring, r.maxother = 2, 4, 4, QUOTE_CHARS, QUOTE_CHARS
    return r


_REPR = _short_repr()


def quote(value: object, limit: int = QUOTE_CHARS) -> str:
    """A short repr of `value`: reprlib bounds the depth and items it walks, so quoting an
    expanded alias bomb or a 100k-deep list costs microseconds, then the text is cut to `limit`."""
    short = _REPR.repr(value)
    return short if len(short) <= limit else short[: limit - 1] + "…"


# A one-line summary lists this many of an error's lines (a rules file can have dozens of problems).
ONE_LINE_PARTS = 5


def one_line(err: BaseException) -> str:
    """The error as the single line the CLI prints: multi-line messages joined with "; "."""
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    more = len(lines) - ONE_LINE_PARTS
    shown = "; ".join(lines[:ONE_LINE_PARTS]) + (f"; and {more} more" if more > 0 else "")
    return shown or type(err).__name__
