"""Prometheus metrics (text format), served at GET /metrics by `workbench webhook` and
`workbench metrics` (names, labels and queries: docs/deploy.md#metrics).

Read from the store at each scrape, so the sessions of every process count (workers, the app,
`workbench ask`), not only this one's:

    workbench_store_up                                   1 while the store answers the scrape
    workbench_sessions{status,verdict}                   stored sessions by verdict in force ("" while none)
    workbench_jobs_queued{kind}                          queue depth: diagnosis sessions, eval runs, checks
    workbench_sessions_finished_total{status,verdict}    sessions that ended (verdict at ask),
    workbench_stage_seconds{stage}                       their stage latencies (one observation per round),
    workbench_llm_tokens_total{provider,model,kind}      their LLM tokens (kind prompt | completion)
    workbench_llm_cost_usd_total{provider,model}         and cost (openai.price_* settings)

The last four are counters over the sessions that ended since this process started, as a
Prometheus client's counters are: they are folded in from the store's `done` and `failed`
stage events, whose ids are the cursor. From this process itself:

    workbench_webhook_requests_total{handler,code}       answers of the HTTP server
    process_*                                            its memory, CPU, open files
"""

from __future__ import annotations

import logging
import threading
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, ProcessCollector, generate_latest
from prometheus_client.metrics_core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector
from sqlalchemy import func, select
from sqlalchemy.exc import SQLAlchemyError

from pipeline.core.errors import StoreError
from pipeline.store import Store
from pipeline.store.schema import DiagnosisSession, JobRow, SessionEventRow, VerdictInForce

log = logging.getLogger(__name__)
# Seconds: offline stages take milliseconds, a model call seconds to minutes.
STAGE_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
END_EVENTS = ("done", "failed")
BATCH = 2000
# PostgreSQL hands out sequence ids before commit, so an end event can become visible after one
# with a higher id: each scrape looks this many ids back and skips the events it already folded.
LOOKBACK_IDS = 10_000


class _Ended:
    """Running totals over the sessions whose end event id is above `start`; `cursor` is the
    highest folded, `folded` the ids folded within LOOKBACK_IDS of it."""

    def __init__(self) -> None:
        self.start: int | None = None
        self.cursor = 0
        self.folded: set[int] = set()
        self.sessions: dict[tuple[str, str], int] = defaultdict(int)
        self.stage_buckets: dict[str, list[int]] = defaultdict(lambda: [0] * (len(STAGE_BUCKETS) + 1))
        self.stage_sum: dict[str, float] = defaultdict(float)
        self.tokens: dict[tuple[str, str, str], int] = defaultdict(int)
        self.cost: dict[tuple[str, str], float] = defaultdict(float)

    def fold(self, row: Any) -> None:
        self.sessions[(row.status, row.verdict or "")] += 1
        for key, ms in (row.timings_ms or {}).items():
            stage = key.rsplit("_r", 1)[0]
            seconds = float(ms) / 1000
            slot = next((i for i, bound in enumerate(STAGE_BUCKETS) if seconds <= bound), len(STAGE_BUCKETS))
            self.stage_buckets[stage][slot] += 1
            self.stage_sum[stage] += seconds
        model = (row.provider, row.model)
        self.tokens[(*model, "prompt")] += row.prompt_tokens or 0
        self.tokens[(*model, "completion")] += row.completion_tokens or 0
        self.cost[model] += row.cost_usd or 0.0


class StoreCollector(Collector):
    """The store's figures at scrape time (a custom collector: nothing is kept between scrapes
    but the running totals of ended sessions)."""

    def __init__(self, store: Store):
        self.store = store
        self._ended = _Ended()
        self._lock = threading.Lock()  # scrapes may overlap; the totals advance once per event
        try:
            self._ended.start = self._ended.cursor = self._last_event_id()
        except SQLAlchemyError:
            pass  # the store is down: counting starts at the first scrape that reaches it

    def _last_event_id(self) -> int:
        with self.store.engine.connect() as conn:
            return int(conn.execute(select(func.coalesce(func.max(SessionEventRow.id), 0))).scalar_one())

    def _catch_up(self) -> None:
        ended = self._ended
        if ended.start is None:
            ended.start = ended.cursor = self._last_event_id()
            return
        after = max(ended.start, ended.cursor - LOOKBACK_IDS)
        with self.store.engine.connect() as conn:
            while True:
                events = conn.execute(
                    select(SessionEventRow.id, SessionEventRow.session_id)
                    .where(SessionEventRow.id > after, SessionEventRow.stage.in_(END_EVENTS))
                    .order_by(SessionEventRow.id).limit(BATCH)).all()
                if not events:
                    break
                fresh = [e for e in events if e.id not in ended.folded]
                if fresh:
                    s = DiagnosisSession
                    rows = conn.execute(select(s.status, s.verdict, s.provider, s.model, s.timings_ms,
                                               s.prompt_tokens, s.completion_tokens, s.cost_usd)
                                        .where(s.id.in_({e.session_id for e in fresh}))).all()
                    for row in rows:
                        ended.fold(row)
                    ended.folded.update(e.id for e in fresh)
                after = events[-1].id
                ended.cursor = max(ended.cursor, after)
        ended.folded = {i for i in ended.folded if i > ended.cursor - LOOKBACK_IDS}

    def collect(self) -> Iterator[Metric]:
        up = GaugeMetricFamily("workbench_store_up", "1 while the store answers the scrape")
        try:
            with self._lock:
                self._catch_up()
                families = list(self._families())
        except (SQLAlchemyError, StoreError) as exc:
            log.warning("metrics: the store did not answer: %s", type(exc).__name__)
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        yield from families

    def _families(self) -> Iterator[Metric]:
        s = DiagnosisSession
        v = VerdictInForce
        with self.store.engine.connect() as conn:
            at_ask = conn.execute(select(s.status, s.verdict, func.count()).group_by(s.status, s.verdict)).all()
            # Only the sessions a re-judge moved have a row; each is looked up by its id (a join
            # let SQLite walk every session to probe the small table).
            pairs = select(select(s.status).where(s.id == v.session_id).scalar_subquery().label("status"),
                           select(s.verdict).where(s.id == v.session_id).scalar_subquery().label("at_ask"),
                           v.verdict.label("now")).subquery()
            moved = conn.execute(select(pairs.c.status, pairs.c.at_ask, pairs.c.now, func.count())
                                 .group_by(pairs.c.status, pairs.c.at_ask, pairs.c.now)).all()
            jobs = conn.execute(select(JobRow.kind, func.count()).where(JobRow.status == "queued")
                                .group_by(JobRow.kind)).all()
        in_force: dict[tuple[str, str], int] = defaultdict(int)
        for status, verdict, n in at_ask:
            in_force[(status, verdict or "")] += n
        for status, verdict, now, n in moved:
            in_force[(status, verdict or "")] -= n
            in_force[(status, now)] += n
        stored = GaugeMetricFamily("workbench_sessions", "Stored diagnosis sessions by their verdict in force",
                                   labels=["status", "verdict"])
        for (status, verdict), n in sorted(in_force.items()):
            if n:
                stored.add_metric([status, verdict], n)
        yield stored
        queued = {"diagnosis": in_force.get(("queued", ""), 0), "eval": 0, "check": 0}
        for kind, n in jobs:
            queued[kind] = n
        depth = GaugeMetricFamily("workbench_jobs_queued", "Jobs waiting for a worker", labels=["kind"])
        for kind, n in sorted(queued.items()):
            depth.add_metric([kind], n)
        yield depth

        ended = self._ended
        finished = CounterMetricFamily("workbench_sessions_finished", "Sessions that ended since this process "
                                       "started, by how", labels=["status", "verdict"])
        for (status, verdict), n in sorted(ended.sessions.items()):
            finished.add_metric([status, verdict], n)
        yield finished
        stages = HistogramMetricFamily("workbench_stage_seconds", "Stage latency of the sessions that ended",
                                       labels=["stage"])
        for stage, counts in sorted(ended.stage_buckets.items()):
            cumulative, buckets = 0, []
            for bound, n in zip([*map(str, STAGE_BUCKETS), "+Inf"], counts, strict=True):
                cumulative += n
                buckets.append((bound, float(cumulative)))
            stages.add_metric([stage], buckets, ended.stage_sum[stage])
        yield stages
        tokens = CounterMetricFamily("workbench_llm_tokens", "LLM tokens of the sessions that ended",
                                     labels=["provider", "model", "kind"])
        for (provider, model, kind), n in sorted(ended.tokens.items()):
            tokens.add_metric([provider, model, kind], n)
        yield tokens
        cost = CounterMetricFamily("workbench_llm_cost_usd", "LLM cost of the sessions that ended (USD)",
                                   labels=["provider", "model"])
        for (provider, model), usd in sorted(ended.cost.items()):
            cost.add_metric([provider, model], usd)
        yield cost


class Metrics:
    """One process's registry: the store's figures, this server's answers, the process itself."""

    def __init__(self, store: Store):
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(StoreCollector(store))
        ProcessCollector(registry=self.registry)
        self._requests = Counter("workbench_webhook_requests", "HTTP answers of this server",
                                 ["handler", "code"], registry=self.registry)

    def count_request(self, handler: str, code: int) -> None:
        self._requests.labels(handler, str(code)).inc()

    def exposition(self) -> tuple[bytes, str]:
        """The scrape body and its content type (the Prometheus text format)."""
        return generate_latest(self.registry), CONTENT_TYPE_LATEST
