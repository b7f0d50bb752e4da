"""The orchestrator: one diagnosis session from question to persisted audit chain (docs/architecture.md#pipeline).

The session row is written first and updated after every stage, so a crash leaves a visible
partial session. Stages run in a fixed order (docs/spec.md#split-chain: no supervisor agent).
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pipeline.core.config import Settings
from pipeline.core.contracts import EvidenceDigest, LlmCallRecord, RetryContext, ToolArguments, ToolInvocation, Verdict
from pipeline.core.errors import ConfigError, InputError, StoreError, WorkbenchError
from pipeline.core.events import (
    Collected,
    Diagnosed,
    Digested,
    Done,
    Failed,
    Planned,
    Retrying,
    SessionEvent,
    SessionOpened,
    ToolCalled,
    Verified,
)
from pipeline.gatekeeper import RuleSet
from pipeline.gatekeeper.features import prepare_output
from pipeline.llm import make_provider
from pipeline.replay.history import record_session
from pipeline.runs.judge import Evaluation, evaluate
from pipeline.runs.rulebook import judge_late, rules_in_force
from pipeline.store import Store
from pipeline.store.engine import database_fault
from pipeline.store.lease import Heartbeat, add_event, claim_session, reap
from pipeline.telemetry import session_ended
from pipeline.text.bounds import cap_text, encodable, storable, unstorable
from pipeline.text.primitives import detect_language, extract_entities, normalize
from pipeline.text.redact import mask_known, redact, redact_value, remember_settings
from pipeline.tools import ToolBox, build_toolbox
from pipeline.tools.incidents import World, load_worlds, world_by_id
from pipeline.tools.queries import NoData
from pipeline.tools.registry import model_name, persisted_name
from pipeline.verdict.provider import Provider, StageContext
from pipeline.verdict.scope import asked_services, read_scope

OnEvent = Callable[[SessionEvent], None]


def failure_cause(exc: BaseException) -> str:
    """What the session row says about why it failed; a database fault by its name first."""
    fault = database_fault(exc)
    named = {"disk_full": "disk full", "busy": "database busy", "unreachable": "database unreachable"}
    return f"{named[fault]}: {exc}" if fault else f"{type(exc).__name__}: {exc}"


class SessionFailed(WorkbenchError):
    """A stage raised after the session row existed; the row is marked `failed` at that stage."""

    def __init__(self, session_id: str, stage: str, message: str):
        super().__init__(f"session {session_id} failed at {stage}: {message}")
        self.session_id = session_id
        self.stage = stage


@dataclass
class SessionResult:
    session_id: str
    verdict: Verdict
    final_answer: str
    evaluation: Evaluation
    world: str | None
    ungated_by: list[str]  # RuleSet.ungated_by of the rules it was judged under; empty: gated


def _uses_bundled(settings: Settings) -> bool:
    b = settings.backends
    return "bundled" in (b.query_logs.kind, b.query_metrics.kind, b.lookup_knowledge.kind)


def _pick_world(settings: Settings, question: str, world_id: str | None) -> World | None:
    if not _uses_bundled(settings):
        return None
    if world_id:
        return world_by_id(settings.incidents_dir, world_id)
    return route_question(settings.incidents_dir, question)


def route_question(incidents_dir: Path, question: str) -> World | None:
    """The world whose services (weight 3) and keywords (weight 1) the question names most.

    A question that names services is only routed to a world holding one of them: a world
    without "billing-service" would answer a billing question with another incident's story.
    """
    worlds = load_worlds(incidents_dir)
    asked = asked_services(question, sorted({s for w in worlds for s in w.services}))
    text = normalize(question)
    best: tuple[int, World | None] = (0, None)
    for world in worlds:
        if asked and not set(asked) & set(world.services):
            continue
        score = 3 * sum(1 for s in asked if s in world.services)
        score += sum(1 for kw in world.keywords if normalize(kw) in text)
        if score > best[0]:
            best = (score, world)
    return best[1]


class _ToolRunner:
    """Runs one tool call and stores it; a tool error becomes an error invocation, never an exception."""

    def __init__(self, store: Store, session_id: str, toolbox: ToolBox, settings: Settings, on_event: OnEvent):
        self.store, self.session_id, self.toolbox = store, session_id, toolbox
        self.max_bytes = settings.budget.max_stored_output_bytes
        self.on_event = on_event
        self.round = 1

    def __call__(self, tool_name: str, arguments: ToolArguments) -> ToolInvocation:
        persisted = persisted_name(tool_name)
        started = time.perf_counter()
        status, output, error = "ok", "", None
        refused = unstorable(arguments)
        try:
            if persisted is None:
                raise ValueError(f"unknown tool {tool_name!r}")
            if refused:
                # The same on both backends: never run, kept with the number written as text.
                raise ValueError(f"arguments refused, {refused}; nothing was run")
            output = self.toolbox.call(persisted, arguments).to_json()
        except NoData as exc:
            status, output = "no_data", json.dumps({"no_data": str(exc)}, ensure_ascii=False)
        except Exception as exc:  # noqa: BLE001 - any backend failure is evidence of a gap, not a crash
            status, error = "error", redact(f"{type(exc).__name__}: {exc}")
        arguments = storable(arguments)
        # Stored as the prompts will see it: capped, and without credentials a backend echoed.
        output, cut = cap_text(output, self.max_bytes)
        output = redact(output)
        inv = self.store.add_invocation(
            session_id=self.session_id, round=self.round, tool_name=persisted or tool_name,
            model_tool_name=model_name(persisted) if persisted else tool_name, arguments=redact_value(arguments),
            status=status, output=output, error=error, latency_ms=(time.perf_counter() - started) * 1000,
            stored_cut_bytes=cut,
        )
        # Fold and index the output now, while the collector goes on: the gatekeeper later checks
        # every binding citing it against the prepared form (cached per invocation id).
        prepare_output(inv.id, inv.output)
        self.on_event(ToolCalled(id=inv.id, tool=inv.model_tool_name, arguments=arguments, status=inv.status,
                                 latency_ms=round(inv.latency_ms, 1), error=error))
        return inv


def _retry_context(ev: Evaluation, next_round: int) -> RetryContext:
    """docs/spec.md#verifier-payload: what the next round must close — the claims not directly observed and the
    executor's own missing_info (not the composer's wording of them)."""
    output = ev.output
    claims = {c.key: c.claim_text or "" for c in output.claim_objects()} if output is not None else {}
    # A LOW_CONFID round may hold only inferences; those need direct evidence too.
    weak = [claims.get(c.claim_id, c.claim_id) for c in ev.verifier_output.claim_checks
            if c.verification != "direct_observation"]
    missing = list(output.missing_info) if output is not None else []
    return RetryContext(round=next_round, unsupported_claims=weak, missing_info=missing)


def run_session(
    question: str,
    *,
    settings: Settings,
    store: Store,
    provider: Provider | None = None,
    world_id: str | None = None,
    on_event: OnEvent | None = None,
    rules: RuleSet | None = None,
    session_id: str | None = None,
) -> SessionResult:
    """Run one session. `rules` overrides the rules in force (the Eval page's candidate rules);
    `session_id` names a queued row to run (pipeline/jobs) instead of creating one. The row's
    heartbeat is kept fresh until this returns, so a dead process leaves it to the reaper."""
    # The embedded default has no separate reaper: every session start is one (docs/architecture.md#store).
    reap(store, settings.jobs.lease_s)
    # A database that drops its connections or stays busy for a while is waited out (jobs.retries).
    store = store.patient(settings.jobs.retries)
    try:
        with Heartbeat(store, settings.jobs.heartbeat_s) as heartbeat:
            result = _run_session(question, settings=settings, store=store, provider=provider, world_id=world_id,
                                  on_event=on_event, rules=rules, session_id=session_id, heartbeat=heartbeat)
    except SessionFailed as exc:
        session_ended(settings, store, exc.session_id)
        raise
    session_ended(settings, store, result.session_id)
    return result


def _open_row(store: Store, session_id: str | None, **columns: Any) -> str:
    if session_id is None:
        return store.create_session(**columns)
    columns.pop("question")
    if not claim_session(store, session_id, stage="created", **columns):
        raise StoreError(f"session {session_id} is not queued (another worker took it, or it already ran)")
    return session_id


def _run_session(
    question: str, *, settings: Settings, store: Store, provider: Provider | None, world_id: str | None,
    on_event: OnEvent | None, rules: RuleSet | None, session_id: str | None, heartbeat: Heartbeat,
) -> SessionResult:
    remember_settings(settings)  # settings built in code, not by load_settings, hold secrets too
    # A configured secret typed into the question reaches no prompt, event, row or trace.
    question = mask_known(encodable(question.strip()))
    if not question:
        raise InputError("the question is empty: ask about a symptom, e.g. “payment API times out since 10:00”")
    callback: OnEvent = on_event or (lambda event: None)
    provider = provider or make_provider(settings)
    world = _pick_world(settings, question, world_id)
    # The version that judges this session; None when the caller brought its own rules.
    version: int | None = None
    if rules is None:
        rules, applied = rules_in_force(settings, store)
        version = applied or 0
    split = settings.digest.enabled
    # Backends are set up before the row exists: a misconfigured one is a ConfigError with
    # nothing stored, never a session left `running`.
    try:
        toolbox = build_toolbox(settings, world.path if world else None)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"evidence backends cannot be set up: {exc} (see backends.* in workbench.yaml, "
                          "WORKBENCH_LOG_DIR, WORKBENCH_RUNBOOK_DIR)") from exc
    # Bundled worlds are recordings: "last 30 minutes" is relative to the recording's end.
    now = datetime.fromisoformat(world.end.replace("Z", "+00:00")) if world and world.end else datetime.now(UTC)
    # Law 8: what the question asks (services known or not, symptom, window), read once in code.
    # A clock time without a date is read on the day of the latest evidence of the asked services.
    scope = read_scope(question, world.services if world else (), now, latest=toolbox.latest_evidence)
    sid = _open_row(store, session_id, question=question, world=world.id if world else None, shape=settings.shape,
                    provider=provider.name, model=provider.model_for("diagnosis"))
    heartbeat.hold(sid)

    watching = [callback]

    def emit(event: SessionEvent) -> None:
        # Stored first: any page or replica follows the run from the store (session_event).
        add_event(store, sid, event.type, storable(json.loads(json.dumps(event.data(), ensure_ascii=False, default=str))))
        try:
            for watcher in watching:
                watcher(event)
        except OSError:
            # Whoever watched has gone (`workbench ask ... | head -1`): the session goes on unwatched.
            watching.clear()

    timings: dict[str, float] = {}
    tokens = {"prompt": 0, "completion": 0}

    def record(rec: LlmCallRecord) -> None:
        tokens["prompt"] += rec.prompt_tokens
        tokens["completion"] += rec.completion_tokens
        store.add_llm_call(sid, rec.redacted())

    runner = _ToolRunner(store, sid, toolbox, settings, emit)
    ctx = StageContext(settings=settings, session_id=sid, language=detect_language(question), record=record,
                       run_tool=runner, services=list(world.services) if world else [], now=now, scope=scope,
                       progress=emit)
    stage = "created"

    def enter(name: str) -> float:
        nonlocal stage
        stage = name
        store.update_session(sid, stage=name)
        return time.perf_counter()

    def leave(started: float, event: SessionEvent, **columns: Any) -> None:
        timings[f"{event.type}_r{ctx.round}"] = round((time.perf_counter() - started) * 1000, 2)
        store.update_session(sid, timings_ms=dict(timings), **columns)
        emit(event)

    # Every write after the row exists is inside: one refused (a full disk) fails the session
    # with its cause instead of leaving it `running` for the reaper to call a stopped worker.
    try:
        store.update_session(sid, self_evaluation={"question_scope": scope.model_dump(mode="json")})
        emit(SessionOpened(session_id=sid, world=world.id if world else None, provider=provider.name,
                           shape=settings.shape, question_scope=scope))
        t = enter("planner")
        plan = provider.plan(ctx, question)
        leave(t, Planned(plan=plan), planner_plan=plan.model_dump())

        digests: list[EvidenceDigest] = []
        earlier: list[dict[str, Any]] = []
        retry: RetryContext | None = None
        for rnd in range(1, settings.retry.max_rounds + 1):
            ctx.round = runner.round = rnd
            t = enter("collector")
            summary = provider.collect(ctx, question, plan, retry)
            leave(t, Collected(summary=summary))

            invocations = store.invocations(sid)
            if split:
                t = enter("digest")
                digests = digests + provider.digest(ctx, question, [i for i in invocations if i.round == rnd])
                leave(t, Digested(digests=digests), evidence_digests=[d.model_dump() for d in digests])

            t = enter("diagnosis")
            raw = provider.diagnose(ctx, question, plan, digests if split else None, invocations, retry)
            leave(t, Diagnosed(chars=len(raw)), executor_raw_output=raw)

            t = enter("verification")
            ev = evaluate(ctx=ctx, provider=provider, settings=settings, rules=rules, question=question,
                          raw_output=raw, invocations=invocations, lookup_invocation=store.invocation,
                          digests=digests if split else None, retry_context=retry)
            leave(t, Verified(gatekeeper_result=ev.gatekeeper_result, verdict=ev.verdict,
                              parse_status=ev.parse_status.status))
            if ev.verdict == "LOW_CONFID" and rnd < settings.retry.max_rounds:
                earlier.append(ev.round_audit.model_dump(mode="json"))
                retry = _retry_context(ev, rnd + 1)
                emit(Retrying(retry_context=retry))
                continue
            break
        services = sorted({e.value for e in extract_entities(question + " " + " ".join(
            c.claim_text for c in ev.composer_input.allowed_claims)) if e.kind == "service"} | set(plan.services))
        audit = {"verifier_evaluation": ev.round_audit.model_dump(mode="json"), "rounds": earlier,
                 "question_scope": scope.model_dump(mode="json")}
        o = settings.openai
        cost = (tokens["prompt"] * o.price_prompt_per_m + tokens["completion"] * o.price_completion_per_m) / 1e6
        ungated_by = rules.ungated_by(gatekeeper_enabled=settings.gatekeeper.enabled)
        store.update_session(
            sid, status="completed", stage="done", verdict=ev.verdict, gatekeeper_status=ev.gatekeeper_result.status,
            failed_rules=ev.gatekeeper_result.failed_rules, groundedness=ev.verifier_output.groundedness_score,
            final_answer=ev.final_answer, rounds=ctx.round, services=",".join(services),
            verifier_output=ev.verifier_output.model_dump(mode="json"),
            composer_output=ev.composer_output.model_dump(mode="json"), self_evaluation=audit,
            gatekeeper_features=ev.features, prompt_tokens=tokens["prompt"], completion_tokens=tokens["completion"],
            cost_usd=cost, ungated=bool(ungated_by), rules_version=version,
        )
    except Exception as exc:
        error = redact(failure_cause(exc))
        # The real cause goes on the row even through an outage: were it left `running`, the reaper
        # would record a stopped worker instead.
        recorder = store.patient(settings.jobs.retries, until_s=settings.jobs.lease_s)
        failed = {"status": "failed", "error": error, "timings_ms": timings, "prompt_tokens": tokens["prompt"],
                  "completion_tokens": tokens["completion"]}
        try:
            recorder.update_session(sid, **failed)
        except StoreError as full:
            # A full disk takes this last write in the space the store held back for it.
            if database_fault(full) != "disk_full" or not store.release_reserve():
                raise
            recorder.update_session(sid, **failed)
        with contextlib.suppress(StoreError):
            emit(Failed(stage=stage, error=redact(str(exc))))
        fault = database_fault(exc)
        raise SessionFailed(sid, stage, error if fault else redact(str(exc))) from exc

    record_session(store, sid, rules)  # its row in the columnar replay history
    if version is not None:
        judge_late(settings, store, sid, version)
    emit(Done(verdict=ev.verdict, final_answer=ev.final_answer))
    return SessionResult(session_id=sid, verdict=ev.verdict, final_answer=ev.final_answer, evaluation=ev,
                         world=world.id if world else None, ungated_by=ungated_by)
