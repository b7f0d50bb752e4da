"""Run the labelled question set through the answerer and judge every answer against its label.

    python benchmarks/question_eval.py                      # offline engine, table per class
    python benchmarks/question_eval.py --json out.json      # also every question's judgement
    python benchmarks/question_eval.py --only gen-001,hand-007 --show   # print the leads
    python benchmarks/question_eval.py --openai-sample 40   # through the openai provider and the stub

The questions are benchmarks/question_set.jsonl (generated from ground truth, question_set.py),
benchmarks/question_set_hand.yaml (written by hand in users' words) and
benchmarks/question_set_held_out.yaml (yes/no state and involvement questions written by hand and
never tuned on; its own line in the table shows how far fixes made on the others carry) and
benchmarks/question_set_held_out_2.yaml (a second such batch, labelled from the incidents' data alone:
cause with the effect unsaid, down-or-degraded, warned-of states, restarts, unanswerable whys, X-causes-Y;
its own line too) and benchmarks/question_set_held_out_3.yaml (a third batch, likewise from the data alone:
unanswerable whys, X-caused-Y both ways, negated and leading questions, absent and healthy services,
casual since-when / how-long, which-service; its own line; gated once the engine met it, after its
first run at 70.8%) and benchmarks/question_set_held_out_4.yaml (a fourth batch, likewise from the data alone,
in chat-style words with typos, nicknames and business words: unanswerable whys, X-caused-Y both ways with
upstream chains, reversed directions and bystanders, states of healthy, degraded, faulty and absent services,
casual since-when / how-long, which-service, leading and negated questions; its own line; not gated) and
benchmarks/question_set_held_out_5.yaml (a fifth batch, likewise from the data alone, in chat and ticket
words with pasted log lines: unanswerable whys, X-caused-Y both ways, wrong premises, states of healthy,
faulty and absent services, casual since-when / how-long, which-service; its own line; not gated) and
benchmarks/question_set_held_out_6.yaml (a sixth batch, likewise from the data alone, in chat words with
alert names and pasted log lines: unanswerable whys, X-caused-Y both ways ("can we blame", "背锅", "X or Y"),
wrong premises, states of healthy, degraded, faulty and absent services, casual since-when / how-long,
which-service; its own line; not gated) and benchmarks/question_set_held_out_7.yaml (a seventh batch, likewise
from the data alone, in chat words with host names, alert names and pasted log lines: unanswerable whys,
X-caused-Y both ways ("should we blame", "are the Y coming from X", "跟 Y 有关系吗"), wrong premises, states of
healthy, involved, faulty and absent services, casual since-when / how-long / when it stopped, who / which /
how many ("everyone?", "a blip?", "cross X off?"); its own line; not gated) and
benchmarks/question_set_held_out_8.yaml (an eighth batch, likewise from the data alone, in chat words with
typos, host names, a config id, alert names and pasted log lines: unanswerable whys and whys about things that
did not happen, X-caused-Y both ways ("did X break Y", "related?", "bc of X?", "X 导致的吧", "要怪 X 吗"), wrong
premises ("only", "every", "all", a wrong value or time), states of healthy, involved and absent services, casual
when / since when / how long / when was the last, who / which / how many ("fluke?", "just one box?"); its own
line; not gated) and benchmarks/question_set_held_out_9.yaml (a ninth batch, likewise from the data alone, in chat
words with typos, nicknames, pod names, alert names and pasted lines: whys with no recorded cause and whys about
things that did not happen, X-caused-Y both ways ("knock-on from X?", "does that trace back to X?", "the chain is
A -> B -> C, that right?", "有份吗", "会不会是被 X 误关了"), wrong premises (a wrong source line, value, host or
coupon), states of healthy, involved and absent services, casual when / until when / how long between, who /
which / how many ("which ... the most", "one pod or all?", "burst or trickle?"); its own line; not gated) and
benchmarks/question_set_held_out_10.yaml (a tenth batch, likewise from the data alone, in chat and ticket words with
typos, nicknames, pod and alert names, a pasted line, context-first and forwarded questions: whys with no recorded
cause and whys about things that did not happen, X-caused-Y both ways ("is one the cause of the other?",
"是一根藤上的瓜吗", "能算在 X 头上吗", "is that combo what's producing Y?"), wrong premises buried in "since ..." /
"听说 ..." clauses (a wrong count, value, time, order or action), states of healthy, involved and absent services, casual
how far apart / what's the gap / 几点到几点 / 几点几分, who / which / how many ("every X or only some?", "which person
or job"); its own line; not gated) and benchmarks/question_set_held_out_11.yaml (an eleventh batch, likewise from the
data alone, in chat, ticket and status-page words with typos, nicknames, pod, alert, config and ticket names, a pasted
line, context-first questions: whys with no recorded cause and whys about things that did not happen (a failed
rollback, a revert, restarts, a re-run), X-caused-Y both ways ("both fallout from Z?", "是不是都是 Z 闹的", "扯得上关系
吗", "same root?"), wrong premises in "heard ..." / "iirc ..." clauses (a wrong share, limit, duration, count, order
or setting), states of healthy, involved, faulty and absent services, casual how long after / 前后拖了多久 / last
on record, who / which / how many ("just that pod or all 3?", "everybody or just a chunk?"); its own line; not
gated) and benchmarks/question_set_held_out_12.yaml (a twelfth batch, likewise from the data alone, in chat, ticket
and support words with typos, pod names by suffix after the context, a pasted slow-query line, units not in the
records' form: whys with no recorded cause and whys about things that did not happen (an OOMKill, a flag turned
back off, a FLUSHALL), X-caused-Y both ways (X after Y, a stray record, a victim, a deploy that never happened,
"can we rule out X", "it can't be X, right?"), symptom states of named instances, first / last / peak / how long,
counts and wrong figures, remedies ("if we roll back ...", "调回 15000ms ..."), shared causes ("同一个病根吗",
"两码事吧"), a wrong assumption inside a longer sentence and services with no data; its own line; not gated) and
benchmarks/question_set_held_out_13.yaml (a thirteenth batch, likewise from the data alone, in chat, ticket and pager
words with typos, nicknames, pasted log fragments and units not in the records' form: whys with no recorded cause and
whys about things that did not happen, X-caused-Y both ways, symptom states of named instances, first / last / peak /
how long, counts and wrong figures, remedies, shared causes, a wrong assumption inside a longer sentence and services
with no data; its own line; not gated).
Each runs as a whole session,
as `workbench ask --json --world <world>` runs one, on a temporary SQLite store. The answerer under
test is `pipeline`; the judge below is not: it reads the answer's lead (the first sentence of the
final answer) with its own words, never with the engine's scope or lexicon code, so a change to the
engine's reading cannot move the yardstick.

Through the `openai` provider (--openai-sample): the local stub endpoint (tests/stub_openai.py) plays
the model by replaying, stage by stage, the replies the offline engine gave for the same question,
and the collector's tool calls of that session. The provider's path (prompts, tool loop, strict-JSON
invoker, argument checks) then has to reach the same answer and so the same judgement: that is what
a sample of the set can show without a real model.

Per question:
- agrees: the lead's polarity is the expected one (yes-no forms); every service the lead names as a
  cause is one the ground truth involves, and the root is among them where a cause is required
  ("none" / "unknown": no cause named at all); the lead speaks of the expected symptom; a time form
  names a time in the expected range (or a duration); a healthy target is said to be fine or the
  lead says it cannot tell; an absent one, that the data says nothing of it.
- pass_unearned: PASS although the label forbids it, or although the lead does not answer the form
  (no yes/no for a yes/no, no cause for a why, no time for a how-long / since-when).
- healthy_cause: the lead names as a cause a service the ground truth calls healthy.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
INCIDENTS = HERE.parent / "data" / "incidents"
SET = HERE / "question_set.jsonl"
HAND = HERE / "question_set_hand.yaml"
HELD_OUT = HERE / "question_set_held_out.yaml"
HELD_OUT_2 = HERE / "question_set_held_out_2.yaml"
HELD_OUT_3 = HERE / "question_set_held_out_3.yaml"
HELD_OUT_4 = HERE / "question_set_held_out_4.yaml"
HELD_OUT_5 = HERE / "question_set_held_out_5.yaml"
HELD_OUT_6 = HERE / "question_set_held_out_6.yaml"
HELD_OUT_7 = HERE / "question_set_held_out_7.yaml"
HELD_OUT_8 = HERE / "question_set_held_out_8.yaml"
HELD_OUT_9 = HERE / "question_set_held_out_9.yaml"
HELD_OUT_10 = HERE / "question_set_held_out_10.yaml"
HELD_OUT_11 = HERE / "question_set_held_out_11.yaml"
HELD_OUT_12 = HERE / "question_set_held_out_12.yaml"
HELD_OUT_13 = HERE / "question_set_held_out_13.yaml"
GOALS = {"agrees": 0.97, "pass_unearned": 0, "healthy_cause": 0}
# The sets the tests hold the engine to the goals on: all of them. held-out-2 was written to find
# where the engine falls short, and did (62.5% at first); it is gated since it meets the goals
# (docs/benchmarks.md), and a batch written after it starts outside until it does.
GATED = (SET, HAND, HELD_OUT, HELD_OUT_2, HELD_OUT_3)


def load_questions(paths: Iterable[Path] = (SET, HAND, HELD_OUT, HELD_OUT_2, HELD_OUT_3, HELD_OUT_4,
                                              HELD_OUT_5, HELD_OUT_6, HELD_OUT_7, HELD_OUT_8,
                                              HELD_OUT_9, HELD_OUT_10, HELD_OUT_11, HELD_OUT_12,
                                              HELD_OUT_13)
                   ) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for path in paths:
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".jsonl":
            out.extend(json.loads(line) for line in text.splitlines() if line)
        else:
            variant = {HELD_OUT: "held-out", HELD_OUT_2: "held-out-2", HELD_OUT_3: "held-out-3",
                       HELD_OUT_4: "held-out-4", HELD_OUT_5: "held-out-5",
                       HELD_OUT_6: "held-out-6", HELD_OUT_7: "held-out-7",
                       HELD_OUT_8: "held-out-8", HELD_OUT_9: "held-out-9",
                       HELD_OUT_10: "held-out-10", HELD_OUT_11: "held-out-11",
                       HELD_OUT_12: "held-out-12", HELD_OUT_13: "held-out-13"}.get(path, "hand")
            out.extend(_hand_question(q, variant) for q in yaml.safe_load(text)["questions"])
    return out


def _hand_question(q: dict[str, Any], variant: str) -> dict[str, Any]:
    """A hand-written entry with the defaults filled in (it names only what it expects)."""
    exp = {"polarity": None, "absence_means": "no", "cause": "none", "cause_required": False, "symptom": "none", "since": None,
           "pass_allowed": True, **q.get("expected", {})}
    truth = yaml.safe_load((INCIDENTS / q["world"] / "ground_truth.yaml").read_text(encoding="utf-8"))
    world = yaml.safe_load((INCIDENTS / q["world"] / "world.yaml").read_text(encoding="utf-8"))
    involved = {*truth["expected_services"], truth["root_cause_service"]}
    return {"variant": variant, "symptom": exp["symptom"], **q, "expected": exp, "involved": sorted(involved),
            "healthy": sorted(set(world["services"]) - involved)}


# ---- the judge's own reader ----------------------------------------------------------------------------------

YES = re.compile(r"^\W*(yes\b|是[的，,：:。\s]|是$|对[，,]|有[，,])", re.IGNORECASE)
NO = re.compile(r"^\W*(no\b|not\b|否|不是|不[，,]|没有|并不|无)", re.IGNORECASE)
# A lead that states the symptom's absence: its yes/no depends on the question's direction.
ABSENCE = re.compile(r"^\W*(no sign of|no evidence of|nothing shows|没有发现|未发现|未见)", re.IGNORECASE)
UNKNOWN_LEAD = re.compile(r"^\W*(cannot|can't|unknown|unclear|无法|不能|不确定|未知|原因未知|原因不明)", re.IGNORECASE)
UNKNOWN = re.compile(r"cannot tell|can't tell|cannot say|unknown|not enough|no (logs|data|records|evidence)|"
                     r"don't know|无法|不能判断|不确定|没有.{0,12}(日志|数据|记录|告警|指标)|未找到|无数据|未知", re.IGNORECASE)
FINE = re.compile(r"healthy|normal|no (sign|fault|error|problem|issue|anomal)|not (show|see)|nothing (wrong|abnormal)|"
                  r"shows? no|without|正常|健康|未见|未发现|没有发现|没有(异常|问题|故障|报错|错误)|无异常", re.IGNORECASE)
CAUSE = re.compile(r"cause|because|due to|result of|triggered by|driven by|culprit|responsible|stems from|"
                   r"leads? to|led to|原因|根因|导致|由于|因为|引起|造成|拖慢|源于", re.IGNORECASE)
# The cause side of a clause: after "caused by X", before "X causes / leads to / slows Y".
BY = re.compile(r"caused by|due to|because(?: of)?|result of|triggered by|driven by|stems from|由于|因为|源于|是由",
                re.IGNORECASE)
EFFECT = re.compile(r"cause of|causing|causes|leads? to|led to|slow(?:s|ing)|affect|导致|引起|造成|拖慢|影响|使得",
                    re.IGNORECASE)
NEGATED = re.compile(r"\bnot\b|n't|\bno\b|unknown|cannot|不是|并非|非|无法|不明|未知|没有", re.IGNORECASE)
HEDGES = re.compile(r"not (yet )?confirmed|未证实|尚未证实|待证实", re.IGNORECASE)
SYMPTOM_WORDS: dict[str, tuple[str, ...]] = {
    "cpu": ("cpu", "load", "负载"),
    "memory": ("memory", "heap", "oom", "outofmemory", "gc", "内存", "堆"),
    "errors": ("error", "5xx", "500", "502", "503", "exception", "fail", "错误", "异常", "报错", "失败"),
    "timeout": ("timeout", "timed out", "time out", "504", "超时"),
    "latency": ("slow", "latency", "p99", "p95", "ms", "延迟", "慢", "耗时"),
    "connection_pool": ("pool", "connection", "hikari", "连接"),
    "restarts": ("restart", "crash", "killed", "evict", "重启", "崩溃", "驱逐"),
}
CLOCK = re.compile(r"(?<!\d)([01]?\d|2[0-3]):([0-5]\d)(?!\d)")
DURATION = re.compile(r"\d+(?:\.\d+)?\s*(?:minutes?|mins?\b|hours?|hrs?\b|分钟|小时)", re.IGNORECASE)


def lead_of(final_answer: str) -> str:
    """The first sentence of the final answer (its first line, cut at the first sentence end)."""
    first = final_answer.strip().split("\n", 1)[0]
    return re.split(r"(?<=[。！？])|(?<=[.!?])\s", first, maxsplit=1)[0].strip()


def polarity(lead: str) -> str:
    """yes / no / absent (the symptom is said to be absent) / unknown / none, from the lead's opening."""
    if UNKNOWN_LEAD.match(lead):
        return "unknown"
    if ABSENCE.match(lead):
        return "absent"
    if YES.match(lead):
        return "yes"
    if NO.match(lead):
        return "no"
    return "unknown" if UNKNOWN.search(lead) else "none"


def _names(text: str, services: Iterable[str]) -> list[str]:
    return [s for s in services if re.search(rf"(?<![\w-]){re.escape(s)}(?![\w-])", text)]


def causes(lead: str, services: Iterable[str]) -> list[str]:
    """The services the lead names as a cause."""
    text = re.sub(r"[（(][^（）()]*[)）]", " ", lead)  # a parenthesis says what is needed, not the cause
    named: list[str] = []
    for clause in re.split(r"[,，;；。]|\.\s", text):
        # "Most likely cause: X on a-service ..." labels what follows the colon; "b-service errors:
        # a-service caused them" puts the cause after it too.
        parts = re.split(r"[:：]", clause)
        for n, part in enumerate(parts):
            if not CAUSE.search(part):
                continue
            said = part if _names(part, services) or n + 1 == len(parts) else part + " " + parts[n + 1]
            if NEGATED.search(HEDGES.sub(" ", said)):
                continue
            by, effect = BY.search(said), EFFECT.search(said)
            side = said[by.end():] if by else said[:effect.start()] if effect else said
            named += [s for s in _names(side, services) if s not in named]
    return named


def symptom_named(lead: str, symptom: str) -> bool:
    low = lead.lower()
    return any(w in low for w in SYMPTOM_WORDS.get(symptom, ()))


def names_time(lead: str, since: list[str] | None) -> bool:
    if DURATION.search(lead):
        return True
    times = [f"{int(h):02d}:{m}" for h, m in CLOCK.findall(lead)]
    return any(since is None or since[0] <= t <= _plus(since[1], 5) for t in times) or (
        since is not None and any(_plus(since[0], -5) <= t <= since[0] for t in times))


def _plus(hhmm: str, minutes: int) -> str:
    total = int(hhmm[:2]) * 60 + int(hhmm[3:]) + minutes
    return f"{total // 60 % 24:02d}:{total % 60:02d}"


# ---- judging -------------------------------------------------------------------------------------------------

@dataclass
class Judgement:
    id: str
    world: str
    lang: str
    form: str
    target: str
    variant: str
    question: str
    verdict: str
    lead: str
    polarity: str
    causes: list[str]
    agrees: bool
    pass_unearned: bool
    healthy_cause: bool
    why_not: list[str] = field(default_factory=list)

    @property
    def klass(self) -> tuple[str, str, str]:
        return (self.form, self.target, self.lang)


def judge(q: dict[str, Any], verdict: str, final_answer: str) -> Judgement:
    exp = q["expected"]
    lead = lead_of(final_answer)
    known = sorted({*q["involved"], *q["healthy"], *q["services"]}, key=len, reverse=True)
    named = causes(lead, known)
    pol = polarity(lead)
    if pol == "absent" and exp["polarity"] is not None:
        pol = exp["absence_means"]
    why_not: list[str] = []
    if exp["polarity"] is not None and pol != exp["polarity"]:
        why_not.append(f"polarity {pol}, expected {exp['polarity']}")
    if exp["cause"] in ("none", "unknown"):
        if named:
            why_not.append(f"names {', '.join(named)} as a cause")
    else:
        wrong = [s for s in named if s not in q["involved"]]
        if wrong:
            why_not.append(f"names {', '.join(wrong)} as a cause, which the ground truth does not involve")
        if exp["cause_required"] and exp["cause"] not in named:
            why_not.append(f"does not name {exp['cause']} as the cause")
    if exp["symptom"] not in ("none", "any") and not symptom_named(lead, exp["symptom"]):
        why_not.append(f"does not speak of {exp['symptom']}")
    if exp["since"] and not names_time(lead, exp["since"]):
        why_not.append(f"names no time in {exp['since'][0]}-{exp['since'][1]} and no duration")
    if exp["polarity"] is None and exp["cause"] == "none" and not (FINE.search(lead) or UNKNOWN.search(lead)):
        why_not.append("does not say the service is fine or that it cannot tell")
    if exp["polarity"] is None and exp["cause"] == "unknown" and not UNKNOWN.search(lead):
        why_not.append("does not say the data holds nothing about it")
    return Judgement(id=q["id"], world=q["world"], lang=q["lang"], form=q["form"], target=q["target"],
                     variant=q.get("variant", ""), question=q["question"], verdict=verdict, lead=lead,
                     polarity=pol, causes=named, agrees=not why_not,
                     pass_unearned=verdict == "PASS" and not _form_answered(q, exp, lead, pol, named),
                     healthy_cause=any(s in q["healthy"] for s in named), why_not=why_not)


def _form_answered(q: dict[str, Any], exp: dict[str, Any], lead: str, pol: str, named: list[str]) -> bool:
    if not exp["pass_allowed"]:
        return False
    if q["form"] == "yesno":
        return pol in ("yes", "no")
    if q["form"] == "why":
        return bool(named) or exp["cause"] == "none"
    if q["form"] in ("how_long", "since_when"):
        return names_time(lead, exp["since"]) or exp["since"] is None
    return True


# ---- running -------------------------------------------------------------------------------------------------

Answer = tuple[str, str]  # (verdict, final answer)


def offline_answerer(folder: Path) -> Callable[[dict[str, Any]], Answer]:
    """Each question as one session of the offline engine on a SQLite store in `folder`."""
    from pipeline.core.config import load_settings
    from pipeline.runs.session import run_session
    from pipeline.store import Store

    settings = load_settings(provider="offline", database_url=f"sqlite:///{folder / 'questions.db'}")
    store = Store(settings.db_url)

    def ask(q: dict[str, Any]) -> Answer:
        result = run_session(q["question"], settings=settings, store=store, world_id=q["world"])
        return result.verdict, result.final_answer

    return ask


class _Recording:
    """The offline provider, keeping each stage's reply as the text a model would have sent."""

    def __init__(self, inner: Any):
        self.inner, self.name = inner, inner.name
        self.replies: dict[str, list[str]] = defaultdict(list)

    def model_for(self, stage: str) -> str:
        return str(self.inner.model_for(stage))

    def plan(self, ctx: Any, question: str) -> Any:
        plan = self.inner.plan(ctx, question)
        self.replies["planner"].append(plan.model_dump_json())
        return plan

    def collect(self, *args: Any) -> Any:
        return self.inner.collect(*args)

    def digest(self, ctx: Any, question: str, invocations: list[Any]) -> Any:
        digests = self.inner.digest(ctx, question, invocations)
        self.replies["digest"].append(json.dumps({"digests": [d.model_dump(mode="json") for d in digests]},
                                                 ensure_ascii=False))
        return digests

    def diagnose(self, *args: Any) -> str:
        raw = str(self.inner.diagnose(*args))
        self.replies["diagnosis"].append(raw)
        return raw

    def verify(self, ctx: Any, payload: Any) -> Any:
        out = self.inner.verify(ctx, payload)
        self.replies["verifier"].append(out.model_dump_json())
        return out

    def compose(self, ctx: Any, composer_input: Any) -> str:
        raw = str(self.inner.compose(ctx, composer_input))
        self.replies["composer"].append(raw)
        return raw


class _Replay:
    """Plays the model behind the `openai` provider by replaying an offline session's stage replies
    in order; the collector's tool calls of each round are that session's invocations of the round.
    Both sessions run on a fresh store, so the invocation ids the replies cite are the same."""

    def __init__(self, replies: dict[str, list[str]], invocations: list[Any]):
        self.replies = {stage: list(texts) for stage, texts in replies.items()}
        self.rounds: dict[int, list[tuple[str, Any]]] = defaultdict(list)
        for inv in invocations:
            self.rounds[inv.round].append((inv.tool_name, inv.arguments))
        self.collections = 0

    def __call__(self, request: Any) -> Any:
        from tests.stub_openai import StubReply, chat_body, tool_call

        system = request.messages[0]["content"]
        stage = next(name for key, name in _STAGES if system.startswith(key))
        if stage == "collector":
            if any(m["role"] == "tool" for m in request.messages):
                return StubReply(body=chat_body("collected"))
            self.collections += 1
            calls = [tool_call(_MODEL_TOOL[name], args) for name, args in self.rounds[self.collections]]
            return StubReply(body=chat_body(None, finish_reason="tool_calls", tool_calls=calls))
        queue = self.replies.get(stage) or ["{}"]
        return StubReply(body=chat_body(queue.pop(0)))


_STAGES = (("You are the Planner", "planner"), ("You are the Collector", "collector"),
           ("You are the Evidence Digest", "digest"), ("You are the Diagnosis", "diagnosis"),
           ("You are the Verifier", "verifier"), ("You are the Answer Composer", "composer"))
_MODEL_TOOL = {"query_logs": "queryLogs", "query_metrics": "queryMetrics", "lookup_knowledge": "lookupKnowledge"}


def openai_replay(folder: Path) -> Callable[[dict[str, Any]], tuple[Answer, Answer]]:
    """Each question as an offline session, then through the `openai` provider against the stub
    endpoint replaying that session's replies: (offline answer, provider answer)."""
    from pipeline.core.config import load_settings
    from pipeline.llm import make_provider
    from pipeline.llm.openai_provider import OpenAIProvider
    from pipeline.runs.session import run_session
    from pipeline.store import Store
    from tests.stub_openai import StubOpenAI

    count = iter(range(10**9))

    def ask(q: dict[str, Any]) -> tuple[Answer, Answer]:
        n = next(count)
        offline = load_settings(provider="offline", database_url=f"sqlite:///{folder / f'offline-{n}.db'}")
        store = Store(offline.db_url)
        recorder = _Recording(make_provider(offline))
        first = run_session(q["question"], settings=offline, store=store, world_id=q["world"], provider=recorder)
        replay = _Replay(recorder.replies, store.invocations(first.session_id))
        with StubOpenAI(responder=replay) as stub:
            settings = load_settings(provider="openai", database_url=f"sqlite:///{folder / f'openai-{n}.db'}",
                                     openai={"base_url": stub.base_url, "model": "stub-model", "max_retries": 0})
            second = run_session(q["question"], settings=settings, store=Store(settings.db_url), world_id=q["world"],
                                 provider=OpenAIProvider(settings, sleep=lambda s: None))
        return (first.verdict, first.final_answer), (second.verdict, second.final_answer)

    return ask


def sample(questions: list[dict[str, Any]], n: int) -> list[dict[str, Any]]:
    """n questions spread over the classes (one of each in turn) and the worlds (each class starts
    its picks at a different place in its list)."""
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for q in questions:
        groups[(q["form"], q["target"], q["lang"])].append(q)
    queues = [members[i % len(members):] + members[:i % len(members)]
              for i, (_, members) in enumerate(sorted(groups.items()))]
    picked: list[dict[str, Any]] = []
    while len(picked) < min(n, len(questions)):
        for queue in queues:
            if queue and len(picked) < n:
                picked.append(queue.pop(0))
    return picked


def evaluate_through_openai(questions: list[dict[str, Any]], folder: Path) -> tuple[list[Judgement], list[str]]:
    """The provider's judgements, and the ids whose provider answer differs from the offline one."""
    ask = openai_replay(folder)
    judged, differ = [], []
    for q in questions:
        offline, provider = ask(q)
        judged.append(judge(q, *provider))
        if offline != provider:
            differ.append(q["id"])
    return judged, differ


def evaluate(questions: list[dict[str, Any]], ask: Callable[[dict[str, Any]], Answer]) -> list[Judgement]:
    return [judge(q, *ask(q)) for q in questions]


@dataclass
class Figures:
    n: int
    agrees: float
    pass_unearned: int
    healthy_cause: int


def figures(judged: list[Judgement]) -> Figures:
    n = len(judged)
    return Figures(n=n, agrees=sum(j.agrees for j in judged) / n if n else 1.0,
                   pass_unearned=sum(j.pass_unearned for j in judged),
                   healthy_cause=sum(j.healthy_cause for j in judged))


def per_class(judged: list[Judgement]) -> dict[tuple[str, str, str], Figures]:
    groups: dict[tuple[str, str, str], list[Judgement]] = defaultdict(list)
    for j in judged:
        groups[j.klass].append(j)
    return {k: figures(v) for k, v in sorted(groups.items())}


def meets_goals(f: Figures) -> bool:
    return (f.agrees >= GOALS["agrees"] and f.pass_unearned <= GOALS["pass_unearned"]
            and f.healthy_cause <= GOALS["healthy_cause"])


def table(judged: list[Judgement]) -> str:
    rows = [f"{'form':<11}{'target':<9}{'lang':<5}{'n':>4}{'agrees':>9}{'PASS unearned':>15}{'healthy cause':>15}"]
    for (form, target, lang), f in per_class(judged).items():
        rows.append(f"{form:<11}{target:<9}{lang:<5}{f.n:>4}{f.agrees:>9.0%}{f.pass_unearned:>15}{f.healthy_cause:>15}")
    for variant in ("hand", "held-out", "held-out-2", "held-out-3", "held-out-4", "held-out-5",
                    "held-out-6", "held-out-7", "held-out-8", "held-out-9", "held-out-10",
                    "held-out-11", "held-out-12", "held-out-13"):
        part = [j for j in judged if j.variant == variant]
        if part:
            f = figures(part)
            rows.append(f"{'set: ' + variant:<25}{f.n:>4}{f.agrees:>9.1%}{f.pass_unearned:>15}{f.healthy_cause:>15}")
    total = figures(judged)
    rows.append(f"{'all':<25}{total.n:>4}{total.agrees:>9.1%}{total.pass_unearned:>15}{total.healthy_cause:>15}")
    goals = f"goals: agrees >= {GOALS['agrees']:.0%}, PASS unearned 0, healthy cause 0 -> "
    rows.append(goals + ("met" if meets_goals(total) else "NOT met"))
    return "\n".join(rows)


def report(judged: list[Judgement]) -> dict[str, Any]:
    return {"total": asdict(figures(judged)),
            "per_class": [{"form": k[0], "target": k[1], "lang": k[2], **asdict(f)}
                          for k, f in per_class(judged).items()],
            "questions": [asdict(j) for j in judged]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--json", type=Path, help="write the figures and every judgement here")
    parser.add_argument("--only", help="comma-separated question ids")
    parser.add_argument("--show", action="store_true", help="print each question, verdict, lead and why it disagrees")
    parser.add_argument("--openai-sample", type=int, metavar="N",
                        help="instead: N questions through the openai provider against the stub endpoint, which "
                             "replays each one's offline session; says which answers differ from the offline ones")
    args = parser.parse_args(argv)
    questions = load_questions()
    if args.only:
        wanted = set(args.only.split(","))
        questions = [q for q in questions if q["id"] in wanted]
    with tempfile.TemporaryDirectory(prefix="question-eval-") as folder:
        if args.openai_sample:
            judged, differ = evaluate_through_openai(sample(questions, args.openai_sample), Path(folder))
            print(f"openai provider: {len(differ)} of {len(judged)} answers differ from the offline engine's "
                  f"{', '.join(differ)}")
        else:
            judged = evaluate(questions, offline_answerer(Path(folder)))
    if args.show:
        for j in judged:
            mark = "ok " if j.agrees else "BAD"
            print(f"{mark} {j.id} [{j.verdict}] {j.question}\n    lead: {j.lead}\n    {'; '.join(j.why_not)}")
    print(table(judged))
    if args.json:
        args.json.write_text(json.dumps(report(judged), ensure_ascii=False, indent=1), encoding="utf-8")
    return 0 if meets_goals(figures(judged)) else 1


if __name__ == "__main__":
    sys.path.insert(0, str(HERE.parent))
    sys.exit(main())
