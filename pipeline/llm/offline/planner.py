"""Offline Planner: one log query per asked service (known or not), the symptom across all
services, the alerts, and the runbooks for the symptom; per asked (service, symptom) pair, the
metrics that measure that symptom and the service's log lines about it (a memory question asks
for heap/memory series and OutOfMemory lines), so coverage can show it answered or healthy; for a
when, or a why named by no service, of one happening, the lines of any level holding its words."""

from __future__ import annotations

from datetime import datetime

from pydantic import JsonValue

from pipeline.core.contracts import PlannedToolCall, PlannerPlan, QuestionScope
from pipeline.core.messages import tr
from pipeline.text.primitives import synonyms
from pipeline.verdict.proposition import change_names
from pipeline.verdict.scope import ANY, SYMPTOMS, asked_pairs, symptom_words


def search_words(scope: QuestionScope) -> list[str]:
    return symptom_words(t.strip() for t in scope.symptom.split(",") if t.strip())


def plan(question: str, scope: QuestionScope, window: tuple[datetime, datetime] | None) -> PlannerPlan:
    words = search_words(scope)
    time_args = {"start": window[0].isoformat(), "end": window[1].isoformat()} if window else {}

    calls = [PlannedToolCall(tool_name="query_metrics", arguments={"status": "all", **time_args},
                             purpose="alerts firing or resolved around the incident")]
    for service in scope.services:
        # Every level: a healthy service is shown healthy by its ordinary lines, and a service no
        # backend knows gets a no-data answer of its own rather than silence.
        calls.append(PlannedToolCall(tool_name="query_logs",
                                     arguments={"service": service, "level": "INFO", **time_args},
                                     purpose=f"what {service} logged"))
    for service, symptom in asked_pairs(scope):
        entry = SYMPTOMS.get(symptom) if symptom != ANY else None
        if entry is None:
            continue
        selector = f'__name__=~".*({entry.metric}).*"' + (f', service="{service}"' if service else "")
        calls.append(PlannedToolCall(tool_name="query_metrics",
                                     arguments={"promql": "{" + selector + "}", **({"service": service} if service else {}),
                                                "status": "all", **time_args},
                                     purpose=f"metrics of {symptom} for {service or 'every service'}"))
        if service:
            calls.append(PlannedToolCall(tool_name="query_logs",
                                         arguments={"service": service, "keywords": [*entry.search], "level": "INFO",
                                                    **time_args},
                                         purpose=f"what {service} logged about {symptom}"))
    if words or not scope.services:
        calls.append(PlannedToolCall(tool_name="query_logs",
                                     arguments={"keywords": [*words], "level": "INFO" if words else "WARN",
                                                **time_args},
                                     purpose="the symptom across all services"))
    if scope.event and (scope.moment or not scope.services):
        # A when or a why of one happening: its own record may be an ordinary line of any service
        # ("风控评分规则已更新", "对账任务分片完成, 差异 0 笔"), which the warnings across services leave out.
        said: list[JsonValue] = list(dict.fromkeys(s for w in scope.event for s in synonyms(w)))  # "预热" is the record's "warmup"
        calls.append(PlannedToolCall(tool_name="query_logs",
                                     arguments={"keywords": said, "level": "INFO", **time_args},
                                     purpose="the happening asked about, by its words"))
    if scope.since_event:
        # How long from one happening to the next: the earlier one's record may be an ordinary line too.
        earlier: list[JsonValue] = list(dict.fromkeys(s for w in scope.since_event for s in synonyms(w)))
        calls.append(PlannedToolCall(tool_name="query_logs", arguments={"keywords": earlier, "level": "INFO", **time_args},
                                     purpose="the earlier happening asked about, by its words"))
    measured = scope.proposition.measure if scope.proposition and scope.proposition.kind == "value" else []
    if measured:
        # A figure said of words ("inv's heap is capped at 8g"): the lines holding them, any level, hold
        # the figure to set against it ("feature flag ... enabled for 100% of users" is an INFO line).
        measure: list[JsonValue] = list(dict.fromkeys(s for w in measured for s in synonyms(w)))
        calls.append(PlannedToolCall(tool_name="query_logs", arguments={"keywords": measure, "level": "INFO", **time_args},
                                     purpose="what the figure asked about measures, by its words"))
    named = change_names(scope.proposition.subject) if scope.proposition and scope.proposition.subject_kind == "change" else []
    if named:
        # A change blamed by its name ("commit 9f3c2ab"): the lines naming it say what it was.
        calls.append(PlannedToolCall(tool_name="query_logs", arguments={"keywords": [*named], "level": "INFO", **time_args},
                                     purpose="the change asked about, by its name"))
    prop = scope.proposition
    if prop is not None and prop.subject_kind == "thing":
        # A thing blamed ("is that order-history-export flag what's eating the connections"): the lines naming
        # it, any level, say whether it happened and when ("feature flag ... enabled" is an INFO line); a
        # cause comes before what it causes, so before the window the question gives too.
        thing: list[JsonValue] = list(dict.fromkeys(s for w in prop.words for s in synonyms(w)))
        calls.append(PlannedToolCall(tool_name="query_logs", arguments={"keywords": thing, "level": "INFO"},
                                     purpose="the thing asked about, by its words"))
    calls.append(PlannedToolCall(tool_name="lookup_knowledge",
                                 arguments={"query": " ".join([question, *words[:4]]), "top_k": 3},
                                 purpose="runbooks for this symptom"))
    skill = "timeout_diagnosis" if any(w in words for w in ("timeout", "slow")) else (
        "error_diagnosis" if words else "general_diagnosis")
    lang = scope.language
    steps = [tr("offline.planner.alerts", lang), tr("offline.planner.logs", lang), tr("offline.planner.runbooks", lang),
             tr("offline.planner.digest", lang), tr("offline.planner.separate", lang)]
    return PlannerPlan(skill=skill, language=scope.language, services=list(scope.services), keywords=words,
                       steps=steps, tool_calls=calls)
