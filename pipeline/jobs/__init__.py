"""Sessions, eval runs and batch checks as jobs (docs/architecture.md#jobs; deployment in docs/deploy.md).

- tasks.py   the job functions, shared by both queues; transient failures retry
- local.py   embedded default: a thread pool in this process (SQLite, or jobs.backend: local)
- pg.py      team setup: procrastinate on the store's PostgreSQL, run by `workbench worker`
- records.py rows of eval runs and batch checks (a session's own row is its job record)

The store side (queued rows, heartbeat lease, reaper, stage events) is pipeline/store/lease.py.
Submitting writes the row first, then defers its id: the submitter can follow it at once, and
a queue that loses the job still leaves a row that the reaper ends as `interrupted`.
"""

from __future__ import annotations

from typing import Any, Protocol

from pipeline.core.config import Settings
from pipeline.core.contracts import Trigger
from pipeline.core.errors import ConfigError
from pipeline.jobs.records import JobArgs, create_job
from pipeline.store import Store
from pipeline.store.lease import enqueue_session, rerun_session


class JobQueue(Protocol):
    # True when this process runs what it submits (it then heartbeats the queued rows).
    owned: bool

    def defer(self, kind: str, ref: str) -> object: ...  # a backend's handle (a Future, nothing): unread

    def close(self) -> None: ...


def make_queue(settings: Settings, store: Store) -> JobQueue:
    backend = settings.jobs.backend
    if backend == "auto":
        backend = "procrastinate" if store.engine.dialect.name == "postgresql" else "local"
    if backend == "procrastinate":
        queue: JobQueue = pg_module().ProcrastinateQueue(settings, store)
        return queue
    from pipeline.jobs.local import LocalQueue

    return LocalQueue(settings, store)


def pg_module() -> Any:
    """pipeline.jobs.pg, or a ConfigError naming the extra that installs procrastinate."""
    try:
        from pipeline.jobs import pg
    except ImportError as exc:
        raise ConfigError(f"the PostgreSQL job queue needs procrastinate ({exc}): "
                          "pip install 'evidence-workbench[postgres]'") from exc
    return pg


def submit_session(queue: JobQueue, settings: Settings, store: Store, question: str, *,
                   world_id: str | None = None, trigger: Trigger | None = None,
                   trigger_key: str | None = None) -> str:
    """Queue a diagnosis session; returns its id (the row exists, status `queued`)."""
    from pipeline.core.errors import InputError

    if not question.strip():
        raise InputError("the question is empty: ask about a symptom, e.g. “payment API times out since 10:00”")
    shape = "split" if settings.digest.enabled else "single"
    sid = enqueue_session(store, question=question.strip(), world=world_id, shape=shape, provider=settings.provider,
                          model="queued", trigger=trigger or {"kind": "manual"}, trigger_key=trigger_key,
                          owned=queue.owned)
    queue.defer("diagnosis", sid)
    return sid


def submit_rerun(queue: JobQueue, store: Store, session_id: str) -> str:
    """Queue the question of a failed or interrupted session again, as a new session."""
    sid = rerun_session(store, session_id, owned=queue.owned)
    queue.defer("diagnosis", sid)
    return sid


def submit_job(queue: JobQueue, store: Store, kind: str, args: JobArgs) -> str:
    """Queue an eval run (kind "eval") or batch check (kind "check"); returns the job row's id."""
    job_id = create_job(store, kind, args, owned=queue.owned)
    queue.defer(kind, job_id)
    return job_id
