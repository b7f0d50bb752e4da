"""`workbench webhook`: Alertmanager's webhook (payload version 4) at POST /alertmanager.

Each firing alert group becomes one queued diagnosis session whose question names the alerts'
service, alertname, description and start time (so the session's scope reads them like a typed
question), and whose row records the group as its `trigger`. A group seen again with the same
group key and firing fingerprints within `jobs.dedup_window_s` joins the session it started.

The row is queued before the 202 goes out: a store that fails answers 503 and Alertmanager
retries, so an accepted alert is never lost; a payload that can never be queued answers 4xx.
With WORKBENCH_WEBHOOK_TOKEN set, a matching `Authorization: Bearer` header is required.
GET /healthz answers 200 while the store answers; GET /metrics is the Prometheus exposition.

The HTTP side is Starlette served by Hypercorn (docs/deploy.md#the-webhook-under-load): the
parser refuses malformed framing (a negative or non-numeric Content-Length) with 400 itself;
Hypercorn closes a connection whose request head is not complete within `header_timeout_s`,
which uvicorn has no setting for; this module caps the body and its arrival time and the
number of groups read at once (`webhook.*` settings).
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import ipaddress
import json
import logging
import socket
import threading
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import anyio
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from sqlalchemy import text
from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from pipeline.bundles.trace_import import ForeignTrace, Span
from pipeline.core.config import Settings, WebhookSettings
from pipeline.core.contracts import Trigger
from pipeline.core.errors import BundleError, ConfigError
from pipeline.jobs import JobQueue, submit_job, submit_session
from pipeline.store import Store
from pipeline.store.listing import recent_trigger
from pipeline.telemetry.metrics import Metrics

log = logging.getLogger(__name__)
MAX_ALERTS_IN_QUESTION = 5
# Start times outside this span are not real alerts' (Alertmanager's zero time is year 1); the
# group is still diagnosed, without a "since" in its question.
EARLIEST_START = datetime(2000, 1, 1, tzinfo=UTC)
LATEST_START_AHEAD = timedelta(days=1)
# Connections the kernel holds for us while we are busy: past this, a burst is refused by a reset.
LISTEN_BACKLOG = 2048
PROTOBUF = "application/x-protobuf"
# An answer: status and a JSON body, or a serialized protobuf (OTLP/HTTP answers in the request's encoding).
Answer = tuple[int, dict[str, Any] | bytes]


class Alert(BaseModel):
    model_config = ConfigDict(extra="ignore")
    status: str
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    # In UTC; None when the sender's time lies outside EARLIEST_START .. now + LATEST_START_AHEAD.
    startsAt: datetime | None
    fingerprint: str = ""

    @field_validator("startsAt")
    @classmethod
    def _plausible_utc(cls, value: datetime | None) -> datetime | None:
        if value is None:
            return None
        try:
            value = value.astimezone(UTC) if value.tzinfo else value.replace(tzinfo=UTC)
        except OverflowError:  # year 1 east of UTC, year 9999 west of it
            return None
        return value if EARLIEST_START <= value <= datetime.now(UTC) + LATEST_START_AHEAD else None


class AlertGroup(BaseModel):
    """Alertmanager webhook payload, version 4 (field names as Alertmanager sends them)."""

    model_config = ConfigDict(extra="ignore")
    version: str
    groupKey: str
    status: str
    receiver: str = ""
    alerts: list[Alert]


def _service(alert: Alert) -> str:
    labels = alert.labels
    return labels.get("service") or labels.get("job") or labels.get("instance") or "unknown service"


def _first_start(firing: list[Alert]) -> datetime | None:
    return min((a.startsAt for a in firing if a.startsAt), default=None)


def question_for(firing: list[Alert]) -> str:
    """The question a person would type for these alerts; the scope reader finds the service
    names and the `since HH:MM` window in it."""
    parts = []
    for a in firing[:MAX_ALERTS_IN_QUESTION]:
        text = a.annotations.get("description") or a.annotations.get("summary") or ""
        parts.append(f"{a.labels.get('alertname', 'alert')} on {_service(a)}" + (f": {text}" if text else ""))
    more = f" (+{len(firing) - MAX_ALERTS_IN_QUESTION} more)" if len(firing) > MAX_ALERTS_IN_QUESTION else ""
    start = _first_start(firing)
    since = f" Firing since {start:%H:%M} UTC:" if start else ""
    return f"Alertmanager: {'; '.join(parts)}{more}.{since} what is going on?"


def trigger_for(group: AlertGroup, firing: list[Alert]) -> tuple[Trigger, str]:
    """The trigger record of the session and its dedup key (group key + firing fingerprints)."""
    fingerprints = sorted(a.fingerprint for a in firing)
    key = hashlib.sha256(json.dumps([group.groupKey, fingerprints]).encode()).hexdigest()[:32]
    start = _first_start(firing)
    trigger: Trigger = {
        "kind": "alertmanager", "receiver": group.receiver, "group_key": group.groupKey,
        "starts_at": start.isoformat() if start else None,
        "alerts": [{"fingerprint": a.fingerprint, "alertname": a.labels.get("alertname"), "service": _service(a),
                    "severity": a.labels.get("severity"), "description": a.annotations.get("description"),
                    "startsAt": a.startsAt.isoformat() if a.startsAt else None} for a in firing],
    }
    return trigger, key


def store_answers(store: Store) -> bool:
    try:
        with store.engine.connect() as conn:
            conn.execute(text("SELECT 1"))
    except Exception:  # noqa: BLE001 - any store failure means "not ready", reported as 503
        return False
    return True


class Receiver:
    """What the HTTP handler calls; one per process. The lock makes check-then-queue atomic here;
    several receivers on one store should sit behind one address (docs/deploy.md)."""

    def __init__(self, settings: Settings, store: Store, queue: JobQueue, token: str | None):
        self.settings, self.store, self.queue, self.token = settings, store, queue, token
        self._lock = threading.Lock()
        self._traces = TraceAssembler(settings.budget.max_stored_output_bytes)

    def authorized(self, header: str | None) -> bool:
        if not self.token:
            return True
        return hmac.compare_digest((header or "").encode(), f"Bearer {self.token}".encode())

    def accept(self, body: bytes) -> tuple[int, dict[str, Any]]:
        try:
            group = AlertGroup.model_validate_json(body)
        except ValidationError as exc:
            return 400, {"error": f"not an Alertmanager webhook payload: {exc.errors()[0]['msg']}"}
        if group.version != "4":
            return 400, {"error": f"payload version {group.version!r} is not supported (expected \"4\")"}
        firing = [a for a in group.alerts if a.status == "firing"]
        if not firing:
            return 202, {"ignored": "no firing alert in the group"}
        trigger, key = trigger_for(group, firing)
        note = {}
        if undated := sum(a.startsAt is None for a in firing):
            note = {"note": f"startsAt of {undated} alert(s) outside {EARLIEST_START:%Y-%m-%d} .. now + 1 day; "
                            "diagnosed without a start time"}
        since = datetime.now(UTC) - timedelta(seconds=self.settings.jobs.dedup_window_s)
        with self._lock:
            earlier = recent_trigger(self.store, key, since)
            if earlier:
                return 202, {"session_id": earlier, "deduplicated": True, **note}
            sid = submit_session(self.queue, self.settings, self.store, question_for(firing),
                                 trigger=trigger, trigger_key=key)
        log.info("alert group %s -> session %s", group.groupKey, sid)
        return 202, {"session_id": sid, "deduplicated": False, **note}


    def accept_traces(self, body: bytes, content_type: str) -> Answer:
        """An OTLP/HTTP trace export (docs/deploy.md#audit-your-own-agent): every trace whose root
        span has arrived is queued as a job that stores it as a judged session; the spans of a
        trace whose root has not arrived yet wait for it. The answer is the collector's: 200 with
        the spans rejected, in the request's encoding (JSON also names the jobs)."""
        from pipeline.bundles.trace_import import decode_protobuf, load_json

        binary = PROTOBUF in content_type
        try:
            doc = decode_protobuf(body) if binary else load_json(body.decode("utf-8", "replace"), len(body) + 1)
        except BundleError as exc:
            return 400, {"error": str(exc)}
        jobs, rejected, errors = self._traces.take(doc, self._import_trace)
        if binary:
            return 200, export_response(rejected, "; ".join(errors))
        partial = {"rejectedSpans": str(rejected), "errorMessage": "; ".join(errors)} if rejected else {}
        return 200, {"partialSuccess": partial, "jobs": jobs}

    def _import_trace(self, trace: ForeignTrace) -> str:
        """Queued, not judged here: the verifier may be a model slower than the exporter's timeout,
        and an exporter that times out sends the trace again."""
        from pipeline.bundles.trace_session import trace_args

        job_id = submit_job(self.queue, self.store, "import_trace", trace_args(trace))
        log.info("trace %s from %s -> job %s", trace.trace_id, trace.service_name, job_id)
        return job_id


def export_response(rejected: int, message: str) -> bytes:
    """An ExportTraceServiceResponse, serialized: empty when every span was taken."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

    response = ExportTraceServiceResponse()
    if rejected:
        response.partial_success.rejected_spans = rejected
        response.partial_success.error_message = message[:1000]
    return bytes(response.SerializeToString())


class TraceAssembler:
    """Spans held by trace id until the trace's root span arrives: an exporter sends spans as they
    end, in batches, and the root ends last. Bounded: past MAX_PENDING_TRACES the oldest waiting
    trace is dropped, and past MAX_PENDING_SPANS a trace's further spans are."""

    MAX_PENDING_TRACES = 1000
    MAX_PENDING_SPANS = 5000

    def __init__(self, output_cap: int) -> None:
        self._output_cap = output_cap
        self._pending: dict[str, list[Span]] = {}
        self._lock = threading.Lock()

    def take(self, doc: dict[str, Any], store: Callable[[ForeignTrace], str]) -> tuple[list[str], int, list[str]]:
        """(what `store` returned for each complete trace, spans rejected, one line per rejected trace)."""
        from pipeline.bundles.trace_import import foreign_trace, spans_by_trace

        complete: list[tuple[str, list[Span]]] = []
        with self._lock:
            for trace_id, spans in spans_by_trace(doc).items():
                held = self._pending.pop(trace_id, [])
                held.extend(spans[: max(0, self.MAX_PENDING_SPANS - len(held))])
                # The span without a parent ends last. When it is no AGENT or CHAIN span (an
                # instrumented LLM call outside any agent span), the trace is refused now, saying so.
                if any(not s.span.parentSpanId for s in held):
                    complete.append((trace_id, held))
                else:
                    self._pending[trace_id] = held
            while len(self._pending) > self.MAX_PENDING_TRACES:
                self._pending.pop(next(iter(self._pending)))
        taken, rejected, errors = [], 0, []
        for trace_id, spans in complete:
            try:
                trace = foreign_trace(trace_id, spans, self._output_cap)
            except BundleError as exc:
                rejected += len(spans)
                errors.append(f"{trace_id}: {exc}")
            else:
                taken.append(store(trace))
        return taken, rejected, errors


class _TooLarge(Exception):
    pass


async def _capped_body(request: Request, cap: int) -> bytes:
    """The body, or _TooLarge as soon as more than `cap` bytes arrived (chunked or not); the
    rest is never read."""
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > cap:
            raise _TooLarge
        chunks.append(chunk)
    return b"".join(chunks)


def _error(status: int, message: str, **headers: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers=headers or None)


class _CountRequests:
    """ASGI middleware: every answer the app gives, by handler and status code."""

    def __init__(self, app: ASGIApp, metrics: Metrics, handlers: set[str]):
        self.app, self.metrics, self.handlers = app, metrics, handlers

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        handler = scope["path"] if scope["path"] in self.handlers else "other"

        async def counted(message: Message) -> None:
            if message["type"] == "http.response.start":
                self.metrics.count_request(handler, message["status"])
            await send(message)

        await self.app(scope, receive, counted)


def _declared_length(value: str | None) -> int | None:
    """Content-Length as a number (the parser has refused anything but one non-negative integer);
    a value too long to convert counts as huge rather than as an error."""
    if value is None:
        return None
    digits = value.strip().lstrip("0") or "0"
    return int(digits) if len(digits) <= 18 and digits.isdigit() else 10**18


def make_app(store: Store, metrics: Metrics, limits: WebhookSettings, receiver: Receiver | None = None) -> ASGIApp:
    """The HTTP app: /healthz and /metrics, and with a receiver POST /alertmanager."""
    # Store calls (a session row, a health probe, a scrape) run on their own few threads.
    store_threads = anyio.CapacityLimiter(4)

    async def healthz(request: Request) -> Response:
        ok = await anyio.to_thread.run_sync(store_answers, store, limiter=store_threads)
        return JSONResponse({"ok": ok}, status_code=200 if ok else 503)

    async def scrape(request: Request) -> Response:
        body, content_type = await anyio.to_thread.run_sync(metrics.exposition, limiter=store_threads)
        return Response(body, media_type=content_type)

    routes = [Route("/healthz", healthz, methods=["GET"]), Route("/metrics", scrape, methods=["GET"])]
    if receiver is not None:
        routes.append(Route("/alertmanager", _bounded_post(receiver, limits, store_threads,
                                                           lambda body, _: receiver.accept(body)), methods=["POST"]))
        routes.append(Route("/v1/traces", _bounded_post(receiver, limits, store_threads, receiver.accept_traces),
                            methods=["POST"]))

    async def not_found(request: Request) -> Response:
        return _error(404, "POST alert groups to /alertmanager, OTLP traces to /v1/traces" if receiver else "GET /metrics")

    app = Starlette(routes=[*routes, Route("/{path:path}", not_found, methods=["GET", "POST", "PUT", "DELETE"])])
    return _CountRequests(app, metrics, {r.path for r in routes})


def _bounded_post(receiver: Receiver, limits: WebhookSettings, store_threads: anyio.CapacityLimiter,
                  accept: Callable[[bytes, str], Answer]) -> Callable[[Request], Awaitable[Response]]:
    """A POST handler with the token, the body cap, the body's time limit and the in-flight bound,
    handing the body and its content type to `accept` on a store thread."""
    cap = limits.max_body_bytes
    slots = anyio.Semaphore(limits.max_in_flight)  # bodies held at once: memory is bounded by cap x slots

    async def handler(request: Request) -> Response:
        if not receiver.authorized(request.headers.get("authorization")):
            return _error(401, "a matching bearer token is required")
        declared = _declared_length(request.headers.get("content-length"))
        if declared is not None and declared > cap:
            return _error(413, f"payload over {cap} bytes", connection="close")
        deadline = anyio.current_time() + limits.body_timeout_s
        try:
            with anyio.fail_after(limits.body_timeout_s):
                await slots.acquire()
        except TimeoutError:  # a passing overload, like a store outage: Alertmanager sends it again
            return _error(503, "too many alert groups at once; try again", **{"retry-after": "1"})
        try:
            try:
                with anyio.fail_after(max(0.0, deadline - anyio.current_time())):
                    body = await _capped_body(request, cap)
            except TimeoutError:
                return _error(408, f"the body did not arrive within {limits.body_timeout_s:g} s", connection="close")
            except _TooLarge:
                return _error(413, f"payload over {cap} bytes", connection="close")
            except ClientDisconnect:
                return Response(status_code=400)  # nobody reads it; counted as the client's failure
            # Not cancellable once started: the answer must say whether the row was queued.
            status, answer = await anyio.to_thread.run_sync(accept, body, request.headers.get("content-type", ""),
                                                             limiter=store_threads)
        except Exception as exc:  # noqa: BLE001 - not queued: 503 makes the sender send it again
            log.exception("could not take a request on %s", request.url.path)
            status, answer = 503, {"error": f"not queued: {type(exc).__name__}"}
        finally:
            slots.release()
        if isinstance(answer, bytes):
            return Response(answer, status_code=status, media_type=PROTOBUF)
        return JSONResponse(answer, status_code=status)

    return handler


def check_exposure(host: str, token: str | None, insecure_no_auth: bool) -> str | None:
    """ConfigError for an unauthenticated webhook on a non-loopback address; the warning to
    print when `--insecure-no-auth` allows it anyway; None when nothing needs saying."""
    if token or _loopback(host):
        return None
    if not insecure_no_auth:
        raise ConfigError(f"refusing to receive alerts on {host or 'every address'} without a token: set "
                          "WORKBENCH_WEBHOOK_TOKEN (Alertmanager sends it as a bearer token), bind 127.0.0.1, "
                          "or pass --insecure-no-auth")
    return (f"warning: anyone who reaches {host or 'this machine'} can start sessions "
            "(--insecure-no-auth, no WORKBENCH_WEBHOOK_TOKEN)")


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a name other than localhost may resolve anywhere


def listen(host: str, port: int) -> socket.socket:
    """The listening socket, bound here so the caller knows the port before serving (port 0)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server((host, port), family=family, backlog=LISTEN_BACKLOG)
    except OSError as exc:
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None


def serve(app: ASGIApp, sock: socket.socket, limits: WebhookSettings,
          shutdown: Callable[[], Awaitable[Any]] | None = None) -> None:
    """Serve `app` on the bound `sock` until SIGINT/SIGTERM or until `shutdown` returns."""
    from hypercorn.asyncio import serve as hypercorn_serve
    from hypercorn.config import Config

    config = Config()
    config.bind = [f"fd://{sock.detach()}"]
    config.backlog = LISTEN_BACKLOG
    # Hypercorn's idle timer runs from the connection's first byte until a request head is
    # parsed and is not reset by more bytes, so a client trickling its head is closed in time.
    config.keep_alive_timeout = limits.header_timeout_s
    config.graceful_timeout = 5.0
    config.accesslog = None
    config.errorlog = logging.getLogger("hypercorn.error")  # through this process's logging, once
    config.include_server_header = False
    _allow_many_connections()
    # Starlette types ASGI messages as plain mappings, Hypercorn as TypedDicts: the same protocol.
    asyncio.run(hypercorn_serve(app, config, shutdown_trigger=shutdown))  # type: ignore[arg-type]


def _allow_many_connections() -> None:
    """Raise this process's open-file limit to its hard limit: each client holds a descriptor,
    and a server past the (often 1,024) soft limit stops accepting anyone."""
    try:
        import resource
    except ImportError:  # not POSIX
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = 65536 if hard == resource.RLIM_INFINITY else min(hard, 65536)
    if soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
