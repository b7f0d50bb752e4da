"""Generate the labelled question set: questions over every bundled world, each with its expected outcome.

    python benchmarks/question_set.py            # writes benchmarks/question_set.jsonl
    python benchmarks/question_set.py --check    # exit 1 if the committed file is stale

The set is the yardstick the answerer is measured by (benchmarks/question_eval.py), so it owes the
answerer nothing: it imports nothing from `pipeline/` (tests/test_question_set.py reads its AST),
reads each world's ground_truth.yaml, world.yaml, alerts.json and logs.jsonl with yaml/json only,
and keeps its own symptom words.

What it reads from a world:
- the root-cause service and the involved services (ground truth's `expected_services` and the root);
  every other service of world.yaml is one the ground truth calls healthy;
- the root's symptom: the symptom of its first firing alert (alert name and description read with
  this file's own words);
- a healthy target: a service outside the involved ones with no firing alert, at most one ERROR
  line, no WARN/ERROR line naming an involved service (a gateway relaying the root's 500s is not
  asked about as "healthy") and no WARN/ERROR line or alert about the symptom asked;
- a victim (for "is X the cause of Y"): an involved service other than the root whose first firing
  alert started after the root's (an effect follows its cause); none in some worlds;
- the time the root's symptom began: the root's first firing alert, and the first WARN/ERROR line of
  the root about that symptom; a "since when" / "how long" answer may name a time between them.

Each question is asked about the root, a healthy service, a service absent from the data and two
services at once, in the forms why / yes-no (plain, negated, "is it healthy", "is X the cause of Y")
/ what / how-long / since-when, in English and Chinese. Expected outcome per question:
- `polarity` (yes-no forms only): yes / no / unknown. A negated question keeps each language's
  habit: English "Isn't X slow?" is answered "Yes" when X is slow; Chinese "X 是否没有报错？" is
  answered 是 when X has no errors. `absence_means`: the polarity of a lead that only says the
  symptom is absent ("No sign of errors in X"): "no" to "is X failing", "yes" to "is X healthy";
- `cause`: the service the lead may name as the cause ("none": no cause is to be named; "unknown":
  the data cannot tell), with `cause_required` when the lead must name it (a why about the root);
- `symptom`: the symptom the lead must speak of, or "none";
- `since`: [earliest, latest] HH:MM a time-form lead may name;
- `pass_allowed`: whether PASS can be an earned mark. Nothing about a service absent from the data
  can earn it (the evidence says nothing either way: docs/spec.md#laws, law 8). A why / how-long /
  since-when about a healthy service may: a lead that shows by evidence the symptom is not there
  answers it (coverage: "shown healthy"), so it is judged on saying so and naming no cause.
Deterministic (seeded).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
INCIDENTS = ROOT / "data" / "incidents"
OUT = HERE / "question_set.jsonl"
SEED = 32

# Names no bundled world has: "a service absent from the data".
ABSENT = ("ledger-service", "shipping-service", "billing-service", "fraud-service", "media-service")

# This set's own symptom words: what an alert or log line about the symptom says (any language).
EVIDENCE_WORDS: dict[str, tuple[str, ...]] = {
    "cpu": ("cpu", "load average", "负载"),
    "memory": ("memory", "heap", "oom", "outofmemory", "内存", "堆"),
    "errors": ("error", "5xx", "exception", " 500", "错误", "异常", "报错"),
    "timeout": ("timeout", "timed out", "超时", "504"),
    "latency": ("latency", "slow", "p99", "延迟", "慢"),
    "connection_pool": ("connection pool", "hikari", "pool", "连接池"),
    "restarts": ("restart", "oomkilled", "crashloop", "重启"),
}
# Order matters: an alert named "...Timeout" is about timeouts before anything else it mentions.
ALERT_ORDER = ("connection_pool", "cpu", "memory", "timeout", "errors", "latency", "restarts")

# How a user says each symptom. en: (adjective phrase after "is X", noun phrase); zh: (predicate, noun).
PHRASES: dict[str, dict[str, tuple[str, str]]] = {
    "cpu": {"en": ("running at high CPU", "high CPU"), "zh": ("CPU 很高", "CPU 过高")},
    "memory": {"en": ("running out of memory", "memory problem"), "zh": ("内存占用很高", "内存问题")},
    "errors": {"en": ("returning errors", "errors"), "zh": ("一直报错", "报错")},
    "timeout": {"en": ("timing out", "timeouts"), "zh": ("超时", "超时")},
    "latency": {"en": ("slow", "slowness"), "zh": ("很慢", "变慢")},
    "connection_pool": {"en": ("running out of database connections", "connection pool exhaustion"),
                        "zh": ("数据库连接池耗尽", "连接池耗尽")},
    "restarts": {"en": ("restarting", "restarts"), "zh": ("一直在重启", "重启")},
}


@dataclass(frozen=True)
class World:
    id: str
    services: tuple[str, ...]
    root: str
    involved: frozenset[str]
    symptom: str
    since: tuple[str, str]
    clock: str  # the hour the root's symptom began, as a user would say it ("10:00")
    healthy: str
    healthy_symptom: str
    victim: str  # "" when no involved service's alert follows the root's
    victim_symptom: str
    category: str
    restarted: tuple[str, ...]  # services with a restart alert (firing or resolved) in the window
    healthy_restarts: bool  # whether the healthy target's records speak of a restart


def _hhmm(ts: str) -> str:
    return ts[11:16]


def _symptoms_of(text: str) -> list[str]:
    low = text.lower()
    return [s for s in ALERT_ORDER if any(w in low for w in EVIDENCE_WORDS[s])]


def _alert_symptom(alert: dict[str, Any]) -> str:
    found = _symptoms_of(re.sub(r"(?<=[a-z])(?=[A-Z])", " ", alert["alertname"])) or _symptoms_of(alert["description"])
    return found[0] if found else "errors"


def _first_firing(alerts: list[dict[str, Any]], service: str) -> dict[str, Any] | None:
    firing = sorted((a for a in alerts if a["service"] == service and a["status"] == "firing"),
                    key=lambda a: a["startsAt"])
    return firing[0] if firing else None


def _read_world(folder: Path, rng: random.Random) -> World:
    truth = yaml.safe_load((folder / "ground_truth.yaml").read_text(encoding="utf-8"))
    world = yaml.safe_load((folder / "world.yaml").read_text(encoding="utf-8"))
    alerts = json.loads((folder / "alerts.json").read_text(encoding="utf-8"))
    logs = [json.loads(line) for line in (folder / "logs.jsonl").read_text(encoding="utf-8").splitlines() if line]
    services = tuple(world["services"])
    root = truth["root_cause_service"]
    involved = frozenset(truth["expected_services"]) | {root}
    root_alert = _first_firing(alerts, root)
    assert root_alert, f"{folder.name}: the root-cause service has no firing alert"
    symptom = _alert_symptom(root_alert)
    noisy = [r for r in logs if r["level"] in ("WARN", "ERROR")]
    first_line = next((r["ts"] for r in noisy if r["service"] == root and symptom in _symptoms_of(r["message"])),
                      root_alert["startsAt"])
    since = tuple(sorted((_hhmm(first_line), _hhmm(root_alert["startsAt"]))))
    healthy, healthy_symptom = _pick_healthy(services, involved, symptom, alerts, noisy, rng)
    victim, victim_symptom = "", ""
    for service in services:
        alert = _first_firing(alerts, service)
        if service in involved and service != root and alert and alert["startsAt"] > root_alert["startsAt"]:
            victim, victim_symptom = service, _alert_symptom(alert)
            break
    restarted = tuple(s for s in services if any(a["service"] == s and "restart" in a["alertname"].lower()
                                                  for a in alerts))
    healthy_texts = [r["message"] for r in logs if r["service"] == healthy] + [
        a["alertname"] + " " + a["description"] for a in alerts if a["service"] == healthy]
    return World(id=world["id"], services=services, root=root, involved=involved, symptom=symptom,
                 since=(since[0], since[1]), clock=_hhmm(root_alert["startsAt"])[:3] + "00", healthy=healthy,
                 healthy_symptom=healthy_symptom, victim=victim, victim_symptom=victim_symptom,
                 category=truth["category"], restarted=restarted,
                 healthy_restarts=any("restarts" in _symptoms_of(t) for t in healthy_texts))


def _pick_healthy(services: tuple[str, ...], involved: frozenset[str], symptom: str, alerts: list[dict[str, Any]],
                  noisy: list[dict[str, Any]], rng: random.Random) -> tuple[str, str]:
    candidates = []
    for service in services:
        own = [r["message"] for r in noisy if r["service"] == service]
        if (service in involved or _first_firing(alerts, service)
                or sum(r["level"] == "ERROR" for r in noisy if r["service"] == service) > 1
                or any(other in line for line in own for other in involved)):
            continue
        texts = own + [a["description"] + " " + a["alertname"] for a in alerts if a["service"] == service]
        for asked in (symptom, *ALERT_ORDER):
            if asked != "latency" and not any(asked in _symptoms_of(t) for t in texts):
                candidates.append((service, asked))
                break
    assert candidates, "a world with no healthy service to ask about"
    return rng.choice(candidates)


# ---- question templates --------------------------------------------------------------------------------------

def _yesno_plain(lang: str, s: str, sym: str, rng: random.Random) -> str:
    adj = PHRASES[sym][lang][0]
    if lang == "en":
        return rng.choice((f"Is {s} {adj}?", f"Is {s} {adj} right now?"))
    return rng.choice((f"{s} 是不是{adj}？", f"{s} {adj}吗？"))


def _yesno_negated(lang: str, s: str, sym: str, rng: random.Random) -> str:
    if lang == "en":
        return rng.choice((f"Isn't {s} {PHRASES[sym]['en'][0]}?", f"Isn't {s} {PHRASES[sym]['en'][0]} at the moment?"))
    return rng.choice((f"{s} 是否没有{PHRASES[sym]['zh'][1]}？", f"{s} 是不是没有{PHRASES[sym]['zh'][1]}？"))


def _yesno_clock(lang: str, s: str, sym: str, clock: str) -> str:
    if lang == "en":
        return f"Has {s} been {PHRASES[sym]['en'][0]} since {clock}?"
    return f"{s} 从 {clock} 开始是不是{PHRASES[sym]['zh'][0]}？"


def _yesno_restarts(lang: str, s: str) -> str:
    return f"Has {s} restarted?" if lang == "en" else f"{s} 是不是重启过？"


def _yesno_healthy(lang: str, s: str, rng: random.Random) -> str:
    if lang == "en":
        return rng.choice((f"Is {s} healthy?", f"Is {s} working normally?"))
    return rng.choice((f"{s} 正常吗？", f"{s} 现在健康吗？"))


def _yesno_cause(lang: str, cause: str, effect: str, sym: str, rng: random.Random) -> str:
    if lang == "en":
        noun = PHRASES[sym]["en"][1]
        return rng.choice((f"Is {cause} the cause of the {noun} on {effect}?", f"Are {effect}'s {noun} caused by {cause}?"))
    noun = PHRASES[sym]["zh"][1]
    return rng.choice((f"{effect} 的{noun}是 {cause} 导致的吗？", f"是不是 {cause} 引起了 {effect} 的{noun}？"))


def _yesno_deploy(lang: str, s: str, sym: str) -> str:
    if lang == "en":
        return f"Did the latest deploy of {s} cause its {PHRASES[sym]['en'][1]}?"
    return f"{s} 的{PHRASES[sym]['zh'][1]}是最近一次发布导致的吗？"


def _why(lang: str, s: str, sym: str, rng: random.Random) -> str:
    adj = PHRASES[sym][lang][0]
    if lang == "en":
        return rng.choice((f"Why is {s} {adj}?", f"{s} is {adj}. Why?"))
    return rng.choice((f"为什么 {s} {adj}？", f"{s} {adj}，原因是什么？"))


def _why_clock(lang: str, s: str, sym: str, clock: str) -> str:
    if lang == "en":
        return f"{s} has been {PHRASES[sym]['en'][0]} since {clock}, why?"
    return f"{s} 从 {clock} 开始{PHRASES[sym]['zh'][0]}，为什么？"


def _why_pair(lang: str, a: str, b: str) -> str:
    return f"Why are {a} and {b} having problems?" if lang == "en" else f"{a} 和 {b} 为什么出问题了？"


def _what(lang: str, s: str, rng: random.Random) -> str:
    if lang == "en":
        return rng.choice((f"What is wrong with {s}?", f"What's going on with {s}?"))
    return rng.choice((f"{s} 怎么了？", f"{s} 出了什么问题？"))


def _what_pair(lang: str, a: str, b: str) -> str:
    return f"What is going on with {a} and {b}?" if lang == "en" else f"{a} 和 {b} 出了什么问题？"


def _how_long(lang: str, s: str, sym: str) -> str:
    adj = PHRASES[sym][lang][0]
    return f"How long has {s} been {adj}?" if lang == "en" else f"{s} {adj}多久了？"


def _since_when(lang: str, s: str, sym: str, rng: random.Random) -> str:
    adj = PHRASES[sym][lang][0]
    if lang == "en":
        return rng.choice((f"Since when has {s} been {adj}?", f"When did {s} start {adj}?"))
    return rng.choice((f"{s} 从什么时候开始{adj}的？", f"{s} 是几点开始{adj}的？"))


# ---- the set ---------------------------------------------------------------------------------------------------

def _q(w: World, lang: str, form: str, variant: str, target: str, services: list[str], symptom: str,
       question: str, *, polarity: str | None = None, cause: str = "none", cause_required: bool = False,
       expect_symptom: str = "none", since: bool = False, pass_allowed: bool = True) -> dict[str, Any]:
    # What a lead that only states the symptom's absence ("No sign of errors in X") answers: "no" to
    # "is X failing", "yes" to "is X healthy" and to the Chinese negated "X 是否没有报错".
    healthy_side = variant == "healthy" or (variant == "negated" and lang == "zh")
    return {"world": w.id, "lang": lang, "form": form, "variant": variant, "target": target,
            "services": services, "symptom": symptom, "question": question,
            "expected": {"polarity": polarity, "absence_means": None if polarity is None else
                         "yes" if healthy_side else "no",
                         "cause": cause, "cause_required": cause_required,
                         "symptom": expect_symptom, "since": list(w.since) if since else None,
                         "pass_allowed": pass_allowed},
            "involved": sorted(w.involved), "healthy": sorted(set(w.services) - w.involved)}


def _world_questions(w: World, lang: str, rng: random.Random) -> list[dict[str, Any]]:
    root, sym, ok = w.root, w.symptom, w.healthy
    hs = w.healthy_symptom
    gone = rng.choice(ABSENT)
    other = w.victim or next((s for s in w.services if s in w.involved and s != root), ok)
    qs = [
        # why
        _q(w, lang, "why", "plain", "root", [root], sym, _why(lang, root, sym, rng),
           cause=root, cause_required=True, expect_symptom=sym),
        _q(w, lang, "why", "clock", "root", [root], sym, _why_clock(lang, root, sym, w.clock),
           cause=root, cause_required=True, expect_symptom=sym),
        _q(w, lang, "why", "plain", "healthy", [ok], hs, _why(lang, ok, hs, rng)),
        _q(w, lang, "why", "plain", "absent", [gone], sym, _why(lang, gone, sym, rng), cause="unknown",
           pass_allowed=False),
        _q(w, lang, "why", "pair", "pair", [root, other], "any", _why_pair(lang, root, other),
           cause=root, cause_required=True, expect_symptom=sym),
        # yes / no
        _q(w, lang, "yesno", "plain", "root", [root], sym, _yesno_plain(lang, root, sym, rng), polarity="yes",
           cause=root, expect_symptom=sym),
        _q(w, lang, "yesno", "plain", "healthy", [ok], hs, _yesno_plain(lang, ok, hs, rng), polarity="no"),
        _q(w, lang, "yesno", "plain", "absent", [gone], sym, _yesno_plain(lang, gone, sym, rng), polarity="unknown",
           cause="unknown", pass_allowed=False),
        _q(w, lang, "yesno", "negated", "root", [root], sym, _yesno_negated(lang, root, sym, rng),
           polarity="yes" if lang == "en" else "no", cause=root, expect_symptom=sym),
        _q(w, lang, "yesno", "negated", "healthy", [ok], hs, _yesno_negated(lang, ok, hs, rng),
           polarity="no" if lang == "en" else "yes"),
        _q(w, lang, "yesno", "healthy", "root", [root], "any", _yesno_healthy(lang, root, rng), polarity="no",
           cause=root, expect_symptom=sym),
        _q(w, lang, "yesno", "healthy", "healthy", [ok], "any", _yesno_healthy(lang, ok, rng), polarity="yes"),
        _q(w, lang, "yesno", "healthy", "absent", [gone], "any", _yesno_healthy(lang, gone, rng),
           polarity="unknown", cause="unknown", pass_allowed=False),
        # what
        _q(w, lang, "what", "plain", "root", [root], "any", _what(lang, root, rng), cause=root, expect_symptom=sym),
        _q(w, lang, "what", "plain", "healthy", [ok], "any", _what(lang, ok, rng)),
        _q(w, lang, "what", "plain", "absent", [gone], "any", _what(lang, gone, rng), cause="unknown",
           pass_allowed=False),
        _q(w, lang, "what", "pair", "pair", [root, ok], "any", _what_pair(lang, root, ok), cause=root,
           expect_symptom=sym),
        # how long / since when
        _q(w, lang, "how_long", "plain", "root", [root], sym, _how_long(lang, root, sym), cause=root,
           expect_symptom=sym, since=True),
        _q(w, lang, "how_long", "plain", "healthy", [ok], hs, _how_long(lang, ok, hs)),
        _q(w, lang, "how_long", "plain", "absent", [gone], sym, _how_long(lang, gone, sym), cause="unknown",
           pass_allowed=False),
        _q(w, lang, "since_when", "plain", "root", [root], sym, _since_when(lang, root, sym, rng), cause=root,
           expect_symptom=sym, since=True),
        _q(w, lang, "since_when", "plain", "healthy", [ok], hs, _since_when(lang, ok, hs, rng)),
        _q(w, lang, "since_when", "plain", "absent", [gone], sym, _since_when(lang, gone, sym, rng),
           cause="unknown", pass_allowed=False),
    ]
    # "Is X the cause of Y": the root of its victim's symptom (yes); a healthy service of the
    # victim's (or the root's) symptom (no); an absent one (the data cannot tell).
    effect, effect_sym = (w.victim, w.victim_symptom) if w.victim else (root, sym)
    if w.victim:
        qs.append(_q(w, lang, "yesno", "cause", "pair", [root, effect], effect_sym,
                     _yesno_cause(lang, root, effect, effect_sym, rng), polarity="yes", cause=root))
    qs.append(_q(w, lang, "yesno", "cause", "healthy", [ok, effect], effect_sym,
                 _yesno_cause(lang, ok, effect, effect_sym, rng), polarity="no", cause=root))
    qs.append(_q(w, lang, "yesno", "cause", "absent", [gone, effect], effect_sym,
                 _yesno_cause(lang, gone, effect, effect_sym, rng), polarity="unknown", cause=root,
                 pass_allowed=False))
    qs.append(_q(w, lang, "yesno", "clock", "root", [root], sym, _yesno_clock(lang, root, sym, w.clock),
                 polarity="yes", cause=root, expect_symptom=sym))
    # "Has X restarted": yes for every service with a restart alert (the ground truth may call
    # it healthy: a restart is not the incident); no for the healthy target when nothing says so.
    for service in w.restarted:
        kind = "root" if service == root else "involved" if service in w.involved else "healthy"
        qs.append(_q(w, lang, "yesno", "restarts", kind, [service], "restarts", _yesno_restarts(lang, service),
                     polarity="yes", cause=root, expect_symptom="restarts"))
    if not w.healthy_restarts and ok not in w.restarted:
        qs.append(_q(w, lang, "yesno", "restarts", "healthy", [ok], "restarts", _yesno_restarts(lang, ok),
                     polarity="no"))
    if w.category == "deploy":
        qs.append(_q(w, lang, "yesno", "change", "root", [root], sym, _yesno_deploy(lang, root, sym),
                     polarity="yes", cause=root, expect_symptom=sym))
    return qs


def build() -> list[dict[str, Any]]:
    rng = random.Random(SEED)
    out: list[dict[str, Any]] = []
    for folder in sorted(p for p in INCIDENTS.iterdir() if (p / "ground_truth.yaml").is_file()):
        world = _read_world(folder, rng)
        for lang in ("en", "zh"):
            out.extend(_world_questions(world, lang, rng))
    for n, q in enumerate(out, start=1):
        q["id"] = f"gen-{n:03d}"
    return [{"id": q.pop("id"), **q} for q in out]


def render(questions: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(q, ensure_ascii=False, sort_keys=False) + "\n" for q in questions)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the committed set is stale")
    args = parser.parse_args(argv)
    text = render(build())
    if args.check:
        stale = not OUT.is_file() or OUT.read_text(encoding="utf-8") != text
        print("stale: run python benchmarks/question_set.py" if stale else "up to date")
        return int(stale)
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {text.count(chr(10))} questions to {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
