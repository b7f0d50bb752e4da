"""The team queue: procrastinate on the PostgreSQL of DATABASE_URL (no other server to run).

Submitting processes (app replicas, the webhook receiver) only defer; `workbench worker` runs
the same job functions as the in-process pool, with procrastinate's retry strategy for
`TransientJobError`. The worker also reaps: sessions whose lease lapsed become `interrupted`,
and procrastinate jobs left `doing` by a dead worker are retried (the retry runs the question
again as a new session, see tasks.run_diagnosis).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import procrastinate
from sqlalchemy import text
from sqlalchemy.engine import make_url

from pipeline.core.config import Settings
from pipeline.core.errors import ConfigError, StoreError
from pipeline.jobs.tasks import TASKS, TransientJobError
from pipeline.store import Store
from pipeline.store.engine import display_url, failure_reason
from pipeline.store.lease import ended, live, reap

log = logging.getLogger(__name__)
QUEUE = "workbench"
_SCHEMA_LOCK = 4_711_013  # pg_advisory_lock key: one process applies procrastinate's schema


def conninfo(db_url: str) -> str:
    """The libpq URI of a SQLAlchemy PostgreSQL URL (drops the +psycopg driver suffix)."""
    url = make_url(db_url)
    if url.get_backend_name() != "postgresql":
        raise ConfigError(f"procrastinate needs PostgreSQL; the store is {url.get_backend_name()} (set DATABASE_URL)")
    return url.set(drivername="postgresql").render_as_string(hide_password=False)


def build_app(settings: Settings, store: Store) -> procrastinate.App:
    app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=conninfo(store.url)))
    retry = procrastinate.RetryStrategy(max_attempts=settings.jobs.retries, exponential_wait=2,
                                        retry_exceptions={TransientJobError})
    for kind, func in TASKS.items():
        def job(ref: str, _func: Any = func) -> None:
            _func(settings, store, ref)

        app.task(name=f"workbench.{kind}", queue=QUEUE, retry=retry, pass_context=False)(job)
    return app


def ensure_schema(app: procrastinate.App, store: Store) -> None:
    """Apply procrastinate's tables once per database, whoever starts first."""
    with store.engine.connect() as conn:
        conn.execute(text("SELECT pg_advisory_lock(:k)"), {"k": _SCHEMA_LOCK})
        try:
            present = conn.execute(text("SELECT to_regclass('procrastinate_jobs') IS NOT NULL")).scalar_one()
            if not present:
                app.schema_manager.apply_schema()
        finally:
            conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": _SCHEMA_LOCK})
            conn.commit()


@contextmanager
def _queue_writes(store: Store) -> Iterator[None]:
    """procrastinate's own writes (its schema, a job) fail in one line with the cause, as the
    store's do: a read-only or full database is said, not a traceback."""
    try:
        yield
    except procrastinate.exceptions.ConnectorException as exc:
        cause = exc.__cause__ or exc
        raise StoreError(f"cannot write to the database {display_url(store.url)}: {failure_reason(cause, store.url)}") \
            from exc


class ProcrastinateQueue:
    owned = False  # rows submitted here are run by `workbench worker` processes

    def __init__(self, settings: Settings, store: Store):
        self.app = build_app(settings, store)
        self.store = store
        self.app.open()
        with _queue_writes(store):
            ensure_schema(self.app, store)

    def defer(self, kind: str, ref: str) -> None:
        with _queue_writes(self.store):
            self.app.tasks[f"workbench.{kind}"].defer(ref=ref)

    def close(self) -> None:
        self.app.close()


def _worker_beat(settings: Settings) -> float:
    return min(10.0, settings.jobs.heartbeat_s)


def _stalled_after(settings: Settings) -> float:
    # A live worker beats every _worker_beat seconds: three missed beats make it dead. Counted on
    # top of the session lease, so a dead worker's sessions are already `interrupted` when its
    # jobs are retried, and the retry runs them again instead of taking them for live duplicates.
    return settings.jobs.lease_s + 3 * _worker_beat(settings)


async def _reap_forever(app: procrastinate.App, settings: Settings, store: Store) -> None:
    lease = settings.jobs.lease_s
    orphans: dict[int, float] = {}  # job id -> when it was first seen `doing` for an ended ref
    while True:
        try:
            lost = await asyncio.to_thread(reap, store, lease)
            if lost:
                log.warning("interrupted sessions whose worker stopped: %s", ", ".join(lost))
            stalled = await app.job_manager.get_stalled_jobs(seconds_since_heartbeat=_stalled_after(settings))
            # A worker whose own beats failed while the database was down still holds its sessions'
            # leases (their heartbeat wins): its job is not taken from it.
            held = await asyncio.to_thread(live, store, [str(j.task_kwargs.get("ref")) for j in stalled], lease)
            for job in stalled:
                if job.task_kwargs.get("ref") in held:
                    continue
                log.warning("retrying job %s left running by a stopped worker", job.id)
                await app.job_manager.retry_job(job)
            orphans = await _retry_orphans(app, store, lease, orphans)
        except Exception:  # noqa: BLE001 - a database blip must not stop the worker; next round retries
            log.exception("reaper round failed")
        await asyncio.sleep(settings.jobs.heartbeat_s)


async def _retry_orphans(app: procrastinate.App, store: Store, lease: float, seen: dict[int, float]) -> dict[int, float]:
    """A live worker whose write of a job's outcome failed (the database went down as the job
    ended) leaves it `doing` for ever: its beats resume, so it never stalls. A job `doing` for a
    session or job row that has ended, with no rerun of it under way, for a whole lease, is retried;
    the retry finds the session ended (completed: nothing runs; failed: its one rerun)."""
    doing = await app.job_manager.list_jobs_async(queue=QUEUE, status="doing")
    gone = await asyncio.to_thread(ended, store, [str(j.task_kwargs.get("ref")) for j in doing])
    now = asyncio.get_running_loop().time()
    still: dict[int, float] = {}
    for job in doing:
        if job.id is None or str(job.task_kwargs.get("ref")) not in gone:
            continue
        if now - seen.get(job.id, now) < lease:
            still[job.id] = seen.get(job.id, now)
            continue
        log.warning("retrying job %s whose outcome was never written (its session has ended)", job.id)
        await app.job_manager.retry_job(job)
    return still


async def _serve(app: procrastinate.App, settings: Settings, store: Store, concurrency: int) -> None:
    async with app.open_async():
        reaper = asyncio.create_task(_reap_forever(app, settings, store))
        try:
            await app.run_worker_async(queues=[QUEUE], concurrency=concurrency, install_signal_handlers=True,
                                       update_heartbeat_interval=_worker_beat(settings),
                                       stalled_worker_timeout=_stalled_after(settings))
        finally:
            reaper.cancel()


def run_worker(settings: Settings, store: Store, concurrency: int) -> None:
    """`workbench worker`: runs jobs until SIGINT/SIGTERM (finishing the ones in hand)."""
    app = build_app(settings, store)
    with app.open():
        ensure_schema(app, store)
    asyncio.run(_serve(app, settings, store, concurrency))
