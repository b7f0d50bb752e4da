"""The job functions: the same code runs on the in-process pool and on procrastinate workers.

Each takes the id of a row that already exists (a queued session, a job row), so a job carries
nothing but an id and whoever submitted it can follow it in the store at once. A job delivered
twice runs once (the row is claimed atomically). A transient failure (an LLM endpoint that kept
timing out or answering 429/5xx, a lost database connection) raises `TransientJobError` so the
queue tries again; anything else is final and stays on the row.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from pydantic import TypeAdapter

from pipeline.core.config import Settings
from pipeline.core.errors import NotFound, WorkbenchError
from pipeline.jobs.records import (
    CheckArgs,
    CheckJobResult,
    JobResult,
    TraceJobResult,
    claim_job,
    finish_job,
    get_job,
    report_progress,
)
from pipeline.store import Store
from pipeline.store.engine import database_fault
from pipeline.store.lease import Heartbeat, fail_unclaimed, reap, retry_session

if TYPE_CHECKING:
    from pipeline.eval.history import EvalJobResult

_Args = TypeVar("_Args")


class TransientJobError(WorkbenchError):
    """The job failed for a reason that may pass; the queue runs it again (jobs.retries)."""


def is_transient(exc: BaseException | None) -> bool:
    """A database that could not be reached or stayed busy, or an LLM endpoint that never
    answered; a full disk is final (running again would only fill it further)."""
    if database_fault(exc) in ("unreachable", "busy"):
        return True
    while exc is not None:
        # LlmCallError.reason "transport": no answer at all after the invoker's own retries.
        if getattr(exc, "reason", None) == "transport":
            return True
        exc = exc.__cause__
    return False


def run_diagnosis(settings: Settings, store: Store, session_id: str) -> str | None:
    """Run the queued session `session_id`; returns the id that ran, None for a duplicate delivery.

    A retry finds its row `failed` or `interrupted` and runs the question again as a new session
    (`rerun_of`, the same group key), leaving the first attempt's partial audit chain as it was;
    a second retry of the same attempt finds that rerun made and runs nothing."""
    from pipeline.runs.session import SessionFailed, run_session

    # A redelivered job may find its first attempt's row still `running` after that worker died.
    reap(store, settings.jobs.lease_s)
    row = store.get_session(session_id)
    if row is None:
        raise NotFound(f"no session {session_id}")
    if row["status"] in ("failed", "interrupted"):
        again = retry_session(store, session_id)
        if again is None:
            return None
        session_id = again
    elif row["status"] != "queued":
        return None
    try:
        run_session(row["question"], settings=settings, store=store, world_id=row["world"], session_id=session_id)
    except SessionFailed as exc:
        if is_transient(exc):
            raise TransientJobError(str(exc)) from exc
    except Exception as exc:
        # It failed before its row was claimed (settings, backends, provider): the row says why.
        fail_unclaimed(store, session_id, f"{type(exc).__name__}: {exc}")
        if is_transient(exc):
            raise TransientJobError(str(exc)) from exc
        raise
    return session_id


def run_eval(settings: Settings, store: Store, job_id: str) -> None:
    """The eval fixture suite. args: "who" ran it, "origin" (where it was asked: page, cli, job),
    "candidate" ({"index", "metadata"}: rule texts to run instead of the rules in force) or
    "rules_dir" (a candidate rules directory). Each fixture's result is written as it is made, so a
    page follows the run (n of N), a reaped run keeps the sessions it made, and a run asked to stop
    ends `cancelled` after the fixture in hand, its sessions attached."""
    from pipeline.eval.history import EvalArgs, suite_rules
    from pipeline.eval.runner import StoredResult, iter_suite, load_fixtures
    from pipeline.gatekeeper import load_rules
    from pipeline.runs.rulebook import parsed_rules

    def suite(args: EvalArgs) -> EvalJobResult:
        texts = args.get("candidate")
        candidate = (parsed_rules(texts["index"], texts["metadata"]) if texts
                     else load_rules(Path(args["rules_dir"])) if args.get("rules_dir") else None)
        rules, label = suite_rules(settings, store, candidate=candidate)
        args = {"origin": "job", **args, "rules": label}
        results: list[StoredResult] = []
        total = len(load_fixtures(settings.fixtures_dir))
        if report_progress(store, job_id, done=0, total=total, result={"results": results}, args=args):
            raise _Cancelled({"results": results})
        for result, total in iter_suite(settings, rules, store):
            results.append(result.as_dict())
            if report_progress(store, job_id, done=len(results), total=total, result={"results": results}):
                raise _Cancelled({"results": results})
        return {"results": results}

    _run_job(settings, store, job_id, EvalArgs, suite)


def run_check(settings: Settings, store: Store, job_id: str) -> None:
    """`workbench check` over many bundles; args: {"bundles": [bundle JSON, ...]}."""
    from pipeline.bundles.check import check_bundle, check_report
    from pipeline.bundles.session_bundle import parse_bundle
    from pipeline.llm import make_provider
    from pipeline.runs.rulebook import rules_in_force

    def check_all(args: CheckArgs) -> CheckJobResult:
        rules, _ = rules_in_force(settings, store)
        provider = make_provider(settings)
        reports = []
        for data in args.get("bundles", []):
            report = check_report(check_bundle(parse_bundle(data), settings=settings, rules=rules, provider=provider))
            reports.append(json.loads(json.dumps(report, ensure_ascii=False, default=str)))
        return {"reports": reports}

    _run_job(settings, store, job_id, CheckArgs, check_all)


def run_import_trace(settings: Settings, store: Store, job_id: str) -> None:
    """A foreign trace the webhook took (pipeline/bundles/trace_session.py); args: `trace_args`."""
    from pipeline.bundles.trace_session import TraceArgs, import_trace, imported_as, trace_of
    from pipeline.llm import make_provider
    from pipeline.runs.rulebook import rules_in_force

    def store_trace(args: TraceArgs) -> TraceJobResult:
        trace = trace_of(args)
        if (earlier := imported_as(store, trace.trace_id)) is not None:
            return {"session_id": earlier, "duplicate": True}
        rules, _ = rules_in_force(settings, store)
        result = import_trace(store, trace, settings=settings, rules=rules, provider=make_provider(settings))
        return {"session_id": result.session_id, "verdict": result.verdict}

    _run_job(settings, store, job_id, TraceArgs, store_trace)


class _Cancelled(Exception):  # noqa: N818 - not an error: a person asked the job to stop
    """Raised by a job's work between steps when asked to stop; carries what it made so far."""

    def __init__(self, result: EvalJobResult):
        super().__init__("cancelled")
        self.result = result


def _run_job(settings: Settings, store: Store, job_id: str, shape: type[_Args],
             work: Callable[[_Args], JobResult]) -> None:
    """Claim the job and run `work` on its args, read as its kind's `shape` (args that are not
    fail the job, saying why)."""
    if not claim_job(store, job_id):
        return
    try:
        with Heartbeat(store, settings.jobs.heartbeat_s, [job_id]):
            result = work(TypeAdapter(shape).validate_python(get_job(store, job_id).args))
    except _Cancelled as stop:
        finish_job(store, job_id, result=stop.result, cancelled=True)
        return
    except Exception as exc:  # noqa: BLE001 - the failure is the job's result; the queue decides on a retry
        finish_job(store, job_id, error=f"{type(exc).__name__}: {exc}")
        if is_transient(exc):
            raise TransientJobError(str(exc)) from exc
        return
    finish_job(store, job_id, result=result)


TASKS = {"diagnosis": run_diagnosis, "eval": run_eval, "check": run_check, "import_trace": run_import_trace}
