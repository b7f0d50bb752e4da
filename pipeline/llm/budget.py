"""Token budget: estimate prompt size and cut tool output before it reaches a prompt.

No tokenizer library: tiktoken downloads its encodings at run time, which this product must not
do. The estimate is a calibrated heuristic instead: every CJK ideograph (and CJK punctuation)
and every digit counts as one token (the small open models' tokenizers split numbers digit by
digit), every other run of text as one token per 4 characters, rounded up. For
GPT-4o / Qwen tokenizers this over-counts English log lines slightly (they average ~3.6-4.2
chars per token) and matches Chinese within ~10 %, so a prompt the estimate keeps under budget
stays under it in practice.

Cutting is a view, never an edit: the invocation keeps its full output in the store, where the
gatekeeper and the UI check against all of it. What reaches the model keeps the head, the tail
and the lines that match the question's focus terms, and says exactly what was cut.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pipeline.text.primitives import CHARS_PER_TOKEN, ONE_TOKEN_CHAR, estimate_tokens, extract_entities, keywords
from pipeline.tools.results import RECORD_KINDS, RECORD_LIST_KEYS, ToolResult, read_result

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletionMessageParam, ChatCompletionToolParam

# Per-message framing tokens the chat format adds (role, separators).
MESSAGE_OVERHEAD_TOKENS = 4
ERROR_WORDS = (
    "error", "exception", "timeout", "timed out", "fail", "refused", "oom", "outofmemory", "killed",
    "panic", "fatal", "unavailable", "5xx", "503", "504", "500", "slow", "latency", "firing",
    "超时", "失败", "异常", "错误", "拒绝", "告警", "熔断", "耗尽", "慢",
)
HEAD_SHARE = 0.25
TAIL_SHARE = 0.25
# A single line (a stack trace, a minified JSON blob) never takes more than this share of a budget.
MAX_LINE_SHARE = 0.125
# Below this a message is left alone: its cut statement alone would be about as long.
MIN_CUT_TOKENS = 100


def _content_text(content: str | Iterable[Mapping[str, object]] | None) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return "" if content is None else str(content)


def message_tokens(message: ChatCompletionMessageParam) -> int:
    tokens = MESSAGE_OVERHEAD_TOKENS + estimate_tokens(_content_text(message.get("content")))
    if message["role"] == "assistant":
        for call in message.get("tool_calls") or []:
            if call["type"] == "function":
                fn = call["function"]
                tokens += estimate_tokens(fn.get("name", "")) + estimate_tokens(fn.get("arguments", ""))
    return tokens


def estimate_messages_tokens(
    messages: Iterable[ChatCompletionMessageParam], tools: list[ChatCompletionToolParam] | None = None
) -> int:
    total = sum(message_tokens(m) for m in messages)
    if tools:
        total += estimate_tokens(json.dumps(tools, ensure_ascii=False))
    return total


def focus_terms_for(question: str, services: Iterable[str] = (), extra: Iterable[str] = ()) -> list[str]:
    """What makes a line worth keeping: the question's entities and content words, the services,
    the plan's keywords, and the usual error words."""
    terms: set[str] = {s.lower() for s in services if s}
    terms |= {t.lower() for t in extra if t}
    terms |= {e.value for e in extract_entities(question) if len(e.value) >= 2}
    terms |= {k for k in keywords(question) if len(k) >= 2}
    terms |= set(ERROR_WORDS)
    return sorted(terms, key=lambda t: (-len(t), t))


@dataclass(frozen=True)
class CutReport:
    cut: bool
    unit: str  # "lines" or e.g. "logs[] items"
    total: int
    kept_head: int = 0
    kept_tail: int = 0
    kept_matching: int = 0
    original_tokens: int = 0
    kept_tokens: int = 0

    @property
    def cut_count(self) -> int:
        return self.total - self.kept_head - self.kept_tail - self.kept_matching

    def statement(self) -> str:
        return (
            f"[... {self.cut_count:,} of {self.total:,} {self.unit} cut to fit the token budget: "
            f"kept {self.kept_head} head, {self.kept_tail} tail, {self.kept_matching} matching; "
            f"the full output is stored ...]"
        )


def _as_evidence_items(text: str) -> tuple[list[str], list[str], str] | None:
    """(prefix lines, one line per evidence item, unit) for a JSON tool result, else None.

    A header line before the JSON (how prompts label an invocation) is tolerated."""
    stripped = text.lstrip()
    header = ""
    if not stripped.startswith("{"):
        first, _, rest = stripped.partition("\n")
        if not rest.lstrip().startswith("{"):
            return None
        header, stripped = first, rest
    result = read_result(stripped)
    data = result.data
    key = next((k for k in RECORD_LIST_KEYS if data is not None and isinstance(data.get(k), list)), None)
    if data is None or key is None:
        return None
    kind = RECORD_KINDS[key]
    rest_obj = {k: v for k, v in data.items() if k != key}
    prefix = [header] if header else []
    if rest_obj:
        prefix.append(json.dumps(rest_obj, ensure_ascii=False))
    prefix.append(f"{key}[] ({len(data[key]):,} items, one per line):")
    items = [json.dumps(dict(r.fields), ensure_ascii=False) for r in result.of_kind(kind)]
    return prefix, items, f"{key}[] items"


def _line_cost(line: str) -> int:
    # +1 char for the newline; summing per-line costs never under-counts the joined text.
    return estimate_tokens(line) + (1 if line else 0)


def _clip_line(line: str, max_tokens: int) -> str:
    if _line_cost(line) <= max_tokens:
        return line
    keep = max(16, max_tokens * CHARS_PER_TOKEN // 2)
    # Upper bound of chars that fit: CJK text takes 1 token per char.
    keep_chars = keep if not ONE_TOKEN_CHAR.search(line[:keep]) else max(8, max_tokens // 2)
    return f"{line[:keep_chars]} [... line cut: {len(line) - keep_chars:,} chars ...]"


def cut_output(output_text: str, budget_tokens: int, focus_terms: Iterable[str] = ()) -> tuple[str, CutReport]:
    """The view of a tool output that fits `budget_tokens`: head, tail and focus-matching lines.

    JSON results with logs[] / alerts[] / evidenceBlocks[] are cut by item (one item per line);
    anything else by line. The statement of what was cut is part of the returned text."""
    original = estimate_tokens(output_text)
    if original <= budget_tokens:
        return output_text, CutReport(False, "lines", output_text.count("\n") + 1, original_tokens=original,
                                      kept_tokens=original)
    parsed = _as_evidence_items(output_text)
    if parsed is not None:
        prefix, lines, unit = parsed
    else:
        prefix, lines, unit = [], output_text.split("\n"), "lines"
    return _cut(prefix, lines, unit, original, budget_tokens, focus_terms)


def cut_records(result: ToolResult, budget_tokens: int, focus_terms: Iterable[str] = ()) -> tuple[str, CutReport]:
    """A tool result as numbered records (ToolResult.numbered) that fits `budget_tokens`: cut by
    record like cut_output, each kept record with its own number, so a citation of it stays right."""
    text = result.numbered()
    original = estimate_tokens(text)
    if original <= budget_tokens:
        return text, CutReport(False, "records", len(result.records), original_tokens=original, kept_tokens=original)
    meta = result.meta()
    lines = text.split("\n")
    prefix, records = (lines[:1], lines[1:]) if meta else ([], lines)
    return _cut(prefix, records, "records", original, budget_tokens, focus_terms)


def _cut(prefix: list[str], lines: list[str], unit: str, original: int, budget_tokens: int,
         focus_terms: Iterable[str]) -> tuple[str, CutReport]:
    max_line = max(8, int(budget_tokens * MAX_LINE_SHARE))
    prefix = [_clip_line(p, max_line) for p in prefix]
    # Reserve room for the statement (its counts are not known yet; 60 tokens covers any).
    room = budget_tokens - sum(_line_cost(p) for p in prefix) - 60
    terms = [t.lower() for t in focus_terms if t]
    pattern = re.compile("|".join(re.escape(t) for t in terms)) if terms else None

    kept: dict[int, str] = {}
    head = tail = 0

    def take(index: int, limit: int) -> bool:
        nonlocal room
        line = _clip_line(lines[index], max_line)
        cost = _line_cost(line) + 2  # +2: a possible gap marker before it
        if cost > room or cost > limit:
            return False
        kept[index] = line
        room -= cost
        return True

    head_quota, tail_quota = int(room * HEAD_SHARE), int(room * TAIL_SHARE)
    for i in range(len(lines)):
        if not take(i, head_quota):
            break
        head_quota -= _line_cost(kept[i]) + 2
        head += 1
    for i in range(len(lines) - 1, -1, -1):
        if i in kept or not take(i, tail_quota):
            break
        tail_quota -= _line_cost(kept[i]) + 2
        tail += 1

    matching = 0
    if pattern is not None and room > 0:
        scored: list[tuple[int, int]] = []
        for i, line in enumerate(lines):
            if i in kept:
                continue
            hits = {m.group(0) for m in pattern.finditer(line.lower())}
            if hits:
                scored.append((-len(hits), i))
        scored.sort()
        for _, i in scored:
            if room <= 2:
                break
            if take(i, room):
                matching += 1

    out = list(prefix)
    previous = -1
    for i in sorted(kept):
        if previous >= 0 and i != previous + 1:
            out.append("[...]")
        elif previous < 0 and i != 0:
            out.append("[...]")
        out.append(kept[i])
        previous = i
    if previous != len(lines) - 1:
        out.append("[...]")
    report = CutReport(True, unit, len(lines), head, tail, matching, original)
    out.append(report.statement())
    text = "\n".join(out)
    report = CutReport(True, unit, len(lines), head, tail, matching, original, estimate_tokens(text))
    return text, report


def _with_content(message: ChatCompletionMessageParam, text: str) -> ChatCompletionMessageParam:
    """The tool or user message with `text` for its content; any other message as it is."""
    if message["role"] == "tool":
        return {**message, "content": text}
    if message["role"] == "user":
        return {**message, "content": text}
    return message


def fit_messages(
    messages: list[ChatCompletionMessageParam],
    prompt_budget: int,
    focus_terms: Iterable[str] = (),
    tools: list[ChatCompletionToolParam] | None = None,
) -> tuple[list[ChatCompletionMessageParam], list[CutReport]]:
    """A copy of `messages` whose estimated size is within `prompt_budget`.

    Tool results and evidence (user) messages are cut, the largest first; the system prompt and
    assistant turns are never touched. Raises ValueError when even the uncuttable part is over."""
    fitted = list(messages)
    terms = list(focus_terms)
    reports: list[CutReport] = []
    exhausted: set[int] = set()
    total = estimate_messages_tokens(fitted, tools)
    while total > prompt_budget:
        cuttable: list[tuple[int, int, str]] = []
        for i, m in enumerate(fitted):
            content = m.get("content")
            if i not in exhausted and m["role"] in ("tool", "user") and isinstance(content, str):
                size = message_tokens(m)
                if size > MIN_CUT_TOKENS:
                    cuttable.append((size, i, content))
        if not cuttable:
            raise ValueError(
                f"prompt needs ~{total:,} tokens but the budget is {prompt_budget:,}; "
                "what is left cannot be cut (system prompt, assistant turns, short parts)"
            )
        size, index, content = max(cuttable)
        target = max(MIN_CUT_TOKENS, size - MESSAGE_OVERHEAD_TOKENS - (total - prompt_budget) - 8)
        text, report = cut_output(content, target, terms)
        if estimate_tokens(text) >= estimate_tokens(content):
            exhausted.add(index)
        else:
            fitted[index] = _with_content(fitted[index], text)
            reports.append(report)
        total = estimate_messages_tokens(fitted, tools)
    return fitted, reports
