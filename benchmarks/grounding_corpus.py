"""Generate the grounding regression corpus: excerpts of the bundled tools' outputs, faithful and mutated.

    python benchmarks/grounding_corpus.py            # writes benchmarks/grounding_corpus.jsonl

Outputs are built from each incident world's files in data/incidents, in the shape the bundled
tools store (logs at every level and at WARN and above, the alerts, runbook sections two at a
time), by this script's own reading of the files, plus one generated log output
per language whose lines hold negations and antonyms (the bundled logs have few). From each
sampled record the generator writes every excerpt class that applies to it:

faithful   verbatim, reformatted (case, width, spacing, punctuation), elided with "..." / "…",
           spanning two adjacent records, quoting skipped fields, numbers reformatted (92.0 -> 92,
           5312 -> 5,312)
mutated    number changed, service swapped, error code swapped, invented clause inserted,
           fabricated sentence (sharing the service name), negation added, negation dropped,
           antonym flipped, log level changed

What this corpus is: a regression suite for the gatekeeper on this project's own material, not
an independent measure. It imports nothing of the pipeline (a mutation that loosely equals
another record's text, by this script's own folding, is dropped), but its negations and antonyms
are the words of the rule's own lists in rules/metadata.yaml, and its outputs are this project's
generated incidents, so its catch rates hold largely by construction. The independent yardstick,
over public logs of systems nobody here wrote, is benchmarks/real_logs_corpus.py.

Each line of the corpus is one case: {"id", "class", "faithful", "lang", "output", "tool",
"excerpt"}; "output" names an output that `build_outputs()` rebuilds from the same data.
The generator is deterministic (seeded), so the file only changes when the data does.
"""

from __future__ import annotations

import json
import random
import re
import unicodedata
from collections.abc import Callable, Iterator
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CORPUS = Path(__file__).resolve().parent / "grounding_corpus.jsonl"
INCIDENTS = ROOT / "data" / "incidents"
SEED = 11
PER_OUTPUT = 14  # records sampled per output

FAITHFUL = ("verbatim", "reformatted", "elided", "adjacent records", "skipped fields", "number format")
MUTATED = ("number changed", "service swapped", "error code swapped", "invented content", "fabricated",
           "negation added", "negation dropped", "antonym flipped", "log level changed")

_CJK = re.compile(r"[\u4e00-\u9fff]")
_SERVICE = re.compile(r"\b[a-z]+(?:-[a-z]+)*-(?:service|gateway|db)\b")
_CODE = re.compile(r"\b(?:[A-Z][A-Za-z]+(?:Exception|Error)|E(?:RR)?_[A-Z_]+)\b")
_NUMBER = re.compile(r"(?<![\w.:-])\d+(?:\.\d+)?(?![\w:-])")
_NEGATION = re.compile(r"\b(?:not|no|never|without)\b ?|未|没有|无")
_ANTONYMS = [("succeeded", "failed"), ("success", "failure"), ("up", "down"), ("increased", "decreased"),
             ("healthy", "unhealthy"), ("成功", "失败"), ("正常", "异常"), ("上升", "下降"), ("增加", "减少")]
_LEVELS = ["DEBUG", "INFO", "WARN", "ERROR"]
_CODES = ["SocketTimeoutException", "OutOfMemoryError", "SQLTransientConnectionException", "ERR_TIMEOUT", "E_DB_POOL"]
_INVENTED = {"en": ["because the primary database failed over", "after the certificate rotation",
                    "while the replica was lagging behind"],
             "zh": ["因为主库发生切换", "在证书轮换之后", "由于从库复制延迟"]}
_FABRICATED = {"en": ["{svc} thread pool saturated, requests queued", "{svc} refund failed: card declined by issuer",
                      "{svc} lost its connection to the message broker", "{svc} rejected requests: quota exceeded"],
               "zh": ["{svc} 线程池已满，请求排队等待", "{svc} 退款失败：发卡行拒绝交易", "{svc} 与消息队列的连接断开",
                      "{svc} 配额耗尽，拒绝请求"]}
_SYNTHETIC = {
    "en": ["health check succeeded for {svc} on {host}", "no OutOfMemoryError detected on {host}, heap {pct}% used",
           "CPU usage down {pct}% after scale-out of {svc}", "replica is not lagging, lag={n}ms",
           "cache warm-up finished without errors in {n}ms", "disk usage increased to {pct}% on {host}",
           "connection pool is healthy, active={n} idle={m}", "payment callback failed for order {n}, retry scheduled"],
    "zh": ["{svc} 健康检查成功，耗时 {n}ms", "未发现内存溢出，堆使用率 {pct}%", "{svc} 服务状态正常，延迟 {n}ms",
           "错误率上升到 {pct}%，实例 {host}", "没有发现慢查询，最近 {n} 分钟", "库存同步失败，重试 {m} 次",
           "队列中有 {n} 条积压消息", "连接数增加到 {n}，上限 {m}"],
}


def _lang(text: str) -> str:
    return "zh" if _CJK.search(text) else "en"


def _dump(result: dict) -> str:
    return json.dumps(result, ensure_ascii=False, default=str)  # as the session stores a tool result


def _synthetic(lang: str, rng: random.Random) -> dict:
    services = ["payment-service", "order-service", "inventory-service", "user-service"]
    logs = []
    for i in range(60):
        text = rng.choice(_SYNTHETIC[lang]).format(svc=rng.choice(services), host=f"pod-{rng.randint(1, 9)}",
                                                   pct=f"{rng.uniform(10, 95):.1f}", n=rng.randint(20, 9000),
                                                   m=rng.randint(2, 64))
        logs.append({"timestamp": f"2026-11-12T14:{i // 60:02d}:{i % 60:02d}Z", "service": rng.choice(services),
                     "level": rng.choice(_LEVELS), "message": text, "host": f"pod-{rng.randint(1, 9)}"})
    return {"logs": logs, "total": len(logs), "truncated": False}


def _log_output(path: Path, levels: tuple[str, ...]) -> dict:
    logs = []
    for line in path.read_text(encoding="utf-8").splitlines():
        rec = json.loads(line) if line.strip() else None
        if rec and rec.get("level") in levels and len(logs) < 150:
            logs.append({"timestamp": rec.get("ts"), "service": rec.get("service"), "level": rec.get("level"),
                         "message": rec.get("message", ""), "host": rec.get("host")})
    return {"logs": logs, "total": len(logs), "truncated": False}


def _runbook_sections(path: Path) -> list[dict]:
    """A runbook's "## " sections as the knowledge tool's evidence blocks (id, title, source, content)."""
    text = path.read_text(encoding="utf-8")
    title = next((ln[2:].strip() for ln in text.splitlines() if ln.startswith("# ")), path.stem)
    parts = re.split(r"(?m)^(?=## )", text)[1:]
    return [{"id": f"{path.stem}#{i}", "title": f"{title} / {part.splitlines()[0][3:].strip()}",
             "source": path.name, "content": part.strip()} for i, part in enumerate(parts)]


@lru_cache(maxsize=1)
def build_outputs() -> dict[str, tuple[str, str]]:
    """Output name -> (tool name, stored output text)."""
    outputs: dict[str, tuple[str, str]] = {}
    for world in sorted(p for p in INCIDENTS.iterdir() if (p / "logs.jsonl").exists()):
        outputs[f"{world.name}/logs"] = ("query_logs", _dump(_log_output(world / "logs.jsonl", tuple(_LEVELS))))
        outputs[f"{world.name}/logs-warn"] = ("query_logs",
                                              _dump(_log_output(world / "logs.jsonl", ("WARN", "ERROR"))))
        alerts = json.loads((world / "alerts.json").read_text(encoding="utf-8"))
        outputs[f"{world.name}/alerts"] = ("query_metrics", _dump({"alerts": alerts, "total": len(alerts)}))
        blocks = [b for md in sorted((world / "knowledge").glob("*.md")) for b in _runbook_sections(md)]
        for i in range(0, len(blocks), max(1, len(blocks) // 3))[:3]:
            outputs[f"{world.name}/knowledge/{blocks[i]['id']}"] = (
                "lookup_knowledge", _dump({"evidenceBlocks": blocks[i:i + 2]}))
    rng = random.Random(SEED)
    for lang in ("en", "zh"):
        outputs[f"generated/{lang}"] = ("query_logs", _dump(_synthetic(lang, rng)))
    return outputs


def _loose(text: str) -> str:
    """Case, width and punctuation folded away, words kept: how two texts can read the same."""
    return " ".join(re.findall(r"\w+", unicodedata.normalize("NFKC", text).casefold()))


def _records(tool: str, output: str) -> list[dict]:
    """The quotable records of an output, in output order: message (+ fields) or text lines."""
    data = json.loads(output)
    if tool == "query_logs":
        return [dict(r) for r in data["logs"]]
    if tool == "query_metrics":
        return [{"message": a["description"], "service": a["service"]} for a in data["alerts"]]
    lines = []
    for block in data["evidenceBlocks"]:
        for line in block["content"].splitlines():
            line = line.strip().lstrip("-0123456789. ").strip()
            if len(line) >= 16 and not line.startswith("#"):
                lines.append({"message": line})
    return lines


# --- faithful variants ---------------------------------------------------------------------


def _slice(text: str, rng: random.Random) -> str:
    """A contiguous stretch of the text (whole words in English), at least half of it, never
    starting right after a negation (a quote that leaves out "no" says the opposite)."""
    if len(text) < 40:
        return text
    if _lang(text) == "zh":
        a = rng.randint(0, len(text) // 4)
        b = len(text) - rng.randint(0, len(text) // 4)
        # Never start after a negation, nor cut a number or a Latin word (92.0% is not 2.0%).
        while a and (_NEGATION.search(text[max(0, a - 2) : a]) or _joined(text[a - 1], text[a])):
            a -= 1
        while b < len(text) and _joined(text[b - 1], text[b]):
            b += 1
        return text[a:b].strip()
    words = text.split(" ")
    a = rng.randint(0, len(words) // 4)
    while a and _NEGATION.fullmatch(words[a - 1]):
        a -= 1
    return " ".join(words[a : len(words) - rng.randint(0, len(words) // 4)])


def _joined(left: str, right: str) -> bool:
    word = re.compile(r"[A-Za-z0-9._%-]")
    return bool(word.match(left) and word.match(right))


def _reformatted(text: str, rng: random.Random) -> str:
    quote = _slice(text, rng)
    how = rng.randrange(4)
    if how == 0:
        return quote.upper()
    if how == 1:
        return quote.replace(":", "：").replace(",", "，").replace("(", "（").replace(")", "）")
    if how == 2:
        return "  ".join(quote.split(" ")).replace("=", " = ")
    return f"“{quote}”"


def _elided(text: str, rng: random.Random) -> str | None:
    if _lang(text) == "zh":
        if len(text) < 24:
            return None
        a, b = len(text) // 3, 2 * len(text) // 3
        if _NEGATION.search(text[a - 2 : b]) or _joined(text[a - 1], text[a]) or _joined(text[b - 1], text[b]):
            return None  # eliding a negation changes the meaning; cutting a word is not a quote
        return f"{text[:a].strip()}…{text[b:].strip()}"
    words = text.split(" ")
    if len(words) < 6:
        return None
    a, b = len(words) // 3, 2 * len(words) // 3
    if any(_NEGATION.fullmatch(w) for w in words[a:b]):
        return None
    return f"{' '.join(words[:a])} ... {' '.join(words[b:])}"


def _fields(record: dict, rng: random.Random) -> str | None:
    if "level" not in record:
        return None
    formats = ["{service} {level} {message}", "{timestamp} {service} {level} {message}", "{level} {message}",
               "{service} [{level}] {message}"]
    return rng.choice(formats).format(**record)


def _number_format(text: str, rng: random.Random) -> str | None:
    decimal = re.search(r"(?<![\d.])(\d+)\.0+(?![\d.])", text)
    if decimal:
        return text[: decimal.start()] + decimal.group(1) + text[decimal.end() :]
    big = re.search(r"(?<![\w.,:-])(\d{4,7})(?![\d.,:-])", text)
    if big:
        return text[: big.start()] + f"{int(big.group(1)):,}" + text[big.end() :]
    return None


# --- mutations ---------------------------------------------------------------------------


def _sub_once(text: str, pattern: re.Pattern[str], make: Callable[[str], str | None], rng: random.Random) -> str | None:
    hits = [m for m in pattern.finditer(text)]
    rng.shuffle(hits)
    for m in hits:
        new = make(m.group(0))
        if new is not None and new != m.group(0):
            return text[: m.start()] + new + text[m.end() :]
    return None


def _changed_number(token: str) -> str | None:
    digits = [i for i, ch in enumerate(token) if ch.isdigit()]
    i = digits[0] if len(digits) == 1 else digits[len(digits) // 2]
    return token[:i] + str((int(token[i]) + 3) % 10) + token[i + 1 :]


def _insert_invented(text: str, lang: str, rng: random.Random) -> str:
    clause = rng.choice(_INVENTED[lang])
    if lang == "zh":
        at = rng.randint(len(text) // 3, 2 * len(text) // 3)
        return text[:at] + "，" + clause + "，" + text[at:]
    words = text.split(" ")
    at = max(1, len(words) // 2)
    return " ".join([*words[:at], clause, *words[at:]])


def _negation_added(text: str, lang: str, rng: random.Random) -> str | None:
    if lang == "zh":
        spots = [m.start() for m in re.finditer(r"(?<=[\u4e00-\u9fff])(?=失败|超时|完成|成功|发现|触发|返回|更新|释放|达到)", text)]
        if not spots:
            spots = [m.start() for m in re.finditer(r"(?<=[，,：:\s])(?=[\u4e00-\u9fff]{2})", text)]
        if not spots:
            return None
        at = rng.choice(spots)
        return text[:at] + rng.choice(["未", "没有"]) + text[at:]
    words = text.split(" ")
    spots = [i for i, w in enumerate(words) if re.fullmatch(r"[a-z]{4,}", w) and not _NEGATION.fullmatch(w)]
    if not spots:
        return None
    i = rng.choice(spots)
    return " ".join([*words[:i], rng.choice(["not", "no"]), *words[i:]])


def _antonym_flipped(text: str) -> str | None:
    for a, b in _ANTONYMS:
        for said, other in ((a, b), (b, a)):
            pattern = re.compile(said if _CJK.match(said) else rf"\b{said}\b")
            if pattern.search(text) and not re.search(other if _CJK.match(other) else rf"\b{other}\b", text):
                return pattern.sub(other, text, count=1)
    return None


def _variants(record: dict, following: dict | None, services: list[str], rng: random.Random) -> Iterator[tuple[str, str]]:
    text = record["message"]
    lang = _lang(text)
    quote = _slice(text, rng)
    yield "verbatim", quote
    yield "reformatted", _reformatted(text, rng)
    for name, made in (("elided", _elided(text, rng)), ("skipped fields", _fields(record, rng)),
                       ("number format", _number_format(text, rng))):
        if made:
            yield name, made
    if following is not None:
        yield "adjacent records", f"{text} {following['message']}"
    changed = _sub_once(text, _NUMBER, _changed_number, rng)
    if changed:
        yield "number changed", changed
    own = [s for s in services if s in text]
    if own:
        yield "service swapped", text.replace(own[0], rng.choice([s for s in services if s != own[0]] or ["billing-service"]), 1)
    code = _sub_once(text, _CODE, lambda c: rng.choice([x for x in _CODES if x != c]), rng)
    if code:
        yield "error code swapped", code
    yield "invented content", _insert_invented(quote, lang, rng)
    svc = record.get("service") or (own[0] if own else "payment-service")
    yield "fabricated", rng.choice(_FABRICATED[lang]).format(svc=svc)
    added = _negation_added(quote, lang, rng)
    if added and not _NEGATION.search(quote):
        yield "negation added", added
    if _NEGATION.search(text):
        yield "negation dropped", _NEGATION.sub("", text, count=1)
    flipped = _antonym_flipped(text)
    if flipped:
        yield "antonym flipped", flipped
    if "level" in record:
        other = rng.choice([lv for lv in _LEVELS if lv != record["level"]])
        yield "log level changed", f"{record['service']} {other} {text}"


def generate() -> list[dict]:
    rng = random.Random(SEED)
    cases: list[dict] = []
    for name, (tool, output) in build_outputs().items():
        records = _records(tool, output)
        texts = [f" {_loose(' '.join(str(v) for v in r.values()))} " for r in records]
        services = sorted({m for r in records for m in _SERVICE.findall(r["message"])}
                          | {r["service"] for r in records if r.get("service")})
        picks = sorted(rng.sample(range(len(records)), min(PER_OUTPUT * (2 if name.startswith("generated") else 1),
                                                            len(records))))
        for i in picks:
            following = records[i + 1] if i + 1 < len(records) and tool != "lookup_knowledge" else None
            for cls, excerpt in _variants(records[i], following, services, rng):
                if cls in MUTATED and any(f" {_loose(excerpt)} " in t for t in texts):
                    continue  # the "mutation" is another record's verbatim text: a faithful quote after all
                cases.append({"id": f"{name}#{i}/{cls}", "class": cls, "faithful": cls in FAITHFUL,
                              "lang": _lang(excerpt), "output": name, "tool": tool, "excerpt": excerpt})
    return cases


def main() -> None:
    cases = generate()
    with CORPUS.open("w", encoding="utf-8") as fh:
        for case in cases:
            fh.write(json.dumps(case, ensure_ascii=False) + "\n")
    print(f"{len(cases)} cases -> {CORPUS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
