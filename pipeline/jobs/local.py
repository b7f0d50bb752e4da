"""The embedded queue: the job functions on a thread pool inside this process (no extra process).

Used with SQLite, and wherever `jobs.backend: local`. What this process submits, it runs; it
heartbeats the rows it holds, queued ones included, so if the process dies the reaper of the
next start marks them `interrupted` rather than leaving them queued for ever.
"""

from __future__ import annotations

import logging
import time
from concurrent.futures import Future, ThreadPoolExecutor

from pipeline.core.config import Settings
from pipeline.jobs.tasks import TASKS, TransientJobError
from pipeline.store import Store
from pipeline.store.lease import Heartbeat, reap

log = logging.getLogger(__name__)


class LocalQueue:
    owned = True  # rows submitted here are run here

    def __init__(self, settings: Settings, store: Store, *, concurrency: int | None = None):
        self.settings, self.store = settings, store
        reap(store, settings.jobs.lease_s)
        self._pool = ThreadPoolExecutor(max_workers=concurrency or settings.jobs.concurrency,
                                        thread_name_prefix="workbench-job")
        self._heartbeat = Heartbeat(store, settings.jobs.heartbeat_s).__enter__()

    def defer(self, kind: str, ref: str) -> Future[None]:
        self._heartbeat.hold(ref)
        return self._pool.submit(self._run, kind, ref)

    def _run(self, kind: str, ref: str) -> None:
        retries = self.settings.jobs.retries
        try:
            for attempt in range(retries + 1):
                try:
                    TASKS[kind](self.settings, self.store, ref)
                    return
                except TransientJobError as exc:
                    if attempt == retries:
                        log.warning("job %s %s gave up after %d attempts: %s", kind, ref, attempt + 1, exc)
                        return
                    time.sleep(min(60.0, 2.0 * 2**attempt))  # the endpoint or database may be back
                except Exception:  # noqa: BLE001 - a pool thread has no caller; the row holds the error
                    log.exception("job %s %s failed", kind, ref)
                    return
        finally:
            self._heartbeat.release(ref)

    def close(self) -> None:
        """Waits for every job submitted here, retries included."""
        self._pool.shutdown(wait=True)
        self._heartbeat.__exit__(None, None, None)
