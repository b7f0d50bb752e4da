"""`workbench webhook` against hostile and many clients, beside a naive receiver measured in the
same run: a thread per connection (http.server's ThreadingHTTPServer, listen backlog 5) that
reads the body to the length the client declares, which is how the webhook was built before.

Both run as their own processes on loopback; figures come from /proc/<pid>/status:

- memory: the most resident memory gained (VmRSS, sampled every 10 ms) while one client
  streams --stream-mb of body, declared
  `Content-Length: -1` (the naive server reads it to the end) and, for the webhook, chunked;
- threads: the server's thread count with --slow clients connected, each sending a request
  head one header at a time and never finishing it (the most seen while they are held);
- failed posts: of --posts clients posting an alert group at the same instant (after the slow
  clients left), how many saw their connection reset or refused or got no answer within 30 s,
  over --rounds rounds.

    python benchmarks/bench_webhook.py [--stream-mb 300] [--slow 1500] [--posts 100] [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import socket
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "bench-token"


def naive_server(port_file: str) -> None:
    """The baseline, run in its own process by `--naive-server PORT_FILE`."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(length if length >= 0 else -1)
            json.loads(body)
            payload = b'{"session_id": "s"}'
            self.send_response(202)
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    Path(port_file).write_text(str(server.server_address[1]))
    server.serve_forever()


def _status(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field} for {pid}")


class Server:
    def __init__(self, name: str, home: Path):
        self.name = name
        log = home / f"{name}.log"
        env = {**os.environ, "WORKBENCH_HOME": str(home / name), "WORKBENCH_WEBHOOK_TOKEN": TOKEN,
               "PYTHONPATH": str(ROOT)}
        env.pop("DATABASE_URL", None)
        port_file = home / f"{name}.port"
        if name == "naive":
            argv = [sys.executable, __file__, "--naive-server", str(port_file)]
        else:
            argv = [sys.executable, "-m", "pipeline", "webhook", "--port", "0"]
        with log.open("wb") as out:
            self.proc = subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT)
        deadline = time.monotonic() + 60
        self.port = 0
        while not self.port:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{name} did not start: {log.read_text()[-2000:]}")
            if name == "naive" and port_file.exists() and port_file.read_text():
                self.port = int(port_file.read_text())
            for line in log.read_text().splitlines():
                if line.startswith("receiving Alertmanager webhooks on http://127.0.0.1:"):
                    self.port = int(line.split("127.0.0.1:")[1].split("/")[0])
            time.sleep(0.1)
        time.sleep(0.5)

    def rss_mb(self) -> float:
        return _status(self.proc.pid, "VmRSS") / 1024

    def threads(self) -> int:
        return _status(self.proc.pid, "Threads")

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()


def request_head(length: str | None = None, *, token: str = TOKEN, chunked: bool = False) -> bytes:
    """The head of an Alertmanager POST as raw bytes (the hostile-client test sends the same)."""
    lines = ["POST /alertmanager HTTP/1.1", "Host: webhook", f"Authorization: Bearer {token}",
             "Content-Type: application/json", "Connection: close"]
    if length is not None:
        lines.append(f"Content-Length: {length}")
    if chunked:
        lines.append("Transfer-Encoding: chunked")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def alert_group(key: str) -> bytes:
    """A version-4 Alertmanager payload of one firing alert, grouped under `key`."""
    return json.dumps({"version": "4", "groupKey": key, "status": "firing", "receiver": "workbench", "alerts": [{
        "status": "firing", "labels": {"alertname": "HighCPUUsage", "service": "payment-service"},
        "annotations": {"description": "CPU 92%"}, "startsAt": "2026-12-01T04:52:00Z", "fingerprint": key}]}).encode()


def stream(server: Server, megabytes: int, chunked: bool) -> dict[str, Any]:
    """Peak resident growth while one client streams `megabytes` at the server."""
    before = server.rss_mb()
    most, done = [before], threading.Event()

    def sample() -> None:
        while not done.is_set():
            most[0] = max(most[0], server.rss_mb())
            time.sleep(0.01)

    sampler = threading.Thread(target=sample)
    sampler.start()
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=120)
    sock.sendall(request_head(chunked=True) if chunked else request_head("-1"))
    block, sent, started = b"x" * (1 << 20), 0, time.perf_counter()
    try:
        while sent < megabytes << 20:
            sock.sendall(b"%x\r\n%s\r\n" % (len(block), block) if chunked else block)
            sent += len(block)
        sock.shutdown(socket.SHUT_WR)
    except OSError as exc:  # the server stopped reading: its answer may be waiting all the same
        stopped = type(exc).__name__
    else:
        stopped = "read to the end"
    try:
        answer = sock.recv(200).split(b"\r\n")[0].decode(errors="replace") or "closed without an answer"
    except OSError as exc:
        answer = type(exc).__name__
    sock.close()
    time.sleep(0.5)
    done.set()
    sampler.join()
    return {"sent_mb": round(sent / (1 << 20)), "peak_growth_mb": round(most[0] - before, 1),
            "client": stopped, "answer": answer, "s": round(time.perf_counter() - started, 2)}


def slow_clients(server: Server, count: int) -> dict[str, Any]:
    """Threads of the server while `count` clients hold connections with unfinished heads."""
    socks: list[socket.socket] = []
    refused = 0
    for _ in range(count):
        try:
            s = socket.create_connection(("127.0.0.1", server.port), timeout=5)
            s.sendall(b"POST /alertmanager HTTP/1.1\r\nHost: bench\r\n")
            socks.append(s)
        except OSError:
            refused += 1
    most = server.threads()
    closed_by_server = 0
    deadline = time.monotonic() + 8  # longer than the webhook's header_timeout_s (5 s)
    while time.monotonic() < deadline:
        most = max(most, server.threads())
        time.sleep(0.25)
    for s in socks:
        try:
            s.sendall(b"X-Slow: 1\r\n")
            s.settimeout(0.01)
            if s.recv(1) == b"":
                closed_by_server += 1
        except (BlockingIOError, TimeoutError):
            pass
        except OSError:
            closed_by_server += 1
        s.close()
    return {"clients": count, "connect_failed": refused, "threads_max": most,
            "cut_off_by_server_after_8s": closed_by_server}


def concurrent_posts(server: Server, count: int, rounds: int) -> dict[str, Any]:
    resets = refused = other = ok = 0
    statuses: dict[str, int] = {}
    for r in range(rounds):
        barrier = threading.Barrier(count)
        results: list[str] = []
        lock = threading.Lock()

        def post(i: int, r: int = r, barrier: threading.Barrier = barrier, results: list[str] = results,
                 lock: threading.Lock = lock) -> None:
            body = alert_group(f"round-{r}-group-{i}")
            barrier.wait()
            try:
                with socket.create_connection(("127.0.0.1", server.port), timeout=30) as s:
                    s.sendall(request_head(str(len(body))) + body)
                    data = b""
                    while chunk := s.recv(65536):
                        data += chunk
                outcome = data.split(b" ", 2)[1].decode() if data else "closed"
            except ConnectionResetError:
                outcome = "reset"
            except ConnectionRefusedError:
                outcome = "refused"
            except OSError as exc:
                outcome = type(exc).__name__
            with lock:
                results.append(outcome)

        threads = [threading.Thread(target=post, args=(i,)) for i in range(count)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for outcome in results:
            statuses[outcome] = statuses.get(outcome, 0) + 1
            resets += outcome == "reset"
            refused += outcome == "refused"
            ok += outcome == "202"
            other += outcome not in ("reset", "refused", "202")
    return {"posts": count * rounds, "answered_202": ok, "resets": resets, "refused": refused, "other": other,
            "outcomes": statuses}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stream-mb", type=int, default=300)
    parser.add_argument("--slow", type=int, default=1500)
    parser.add_argument("--posts", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--naive-server", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.naive_server:
        naive_server(args.naive_server)
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 65536), hard))  # 1,500 clients, one descriptor each
    report: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("naive", "webhook"):
            server = Server(name, Path(tmp))
            try:
                row: dict[str, Any] = {"idle_rss_mb": round(server.rss_mb(), 1), "idle_threads": server.threads()}
                row["stream_negative_length"] = stream(server, args.stream_mb, chunked=False)
                if name == "webhook":
                    row["stream_chunked"] = stream(server, args.stream_mb, chunked=True)
                row["slow_clients"] = slow_clients(server, args.slow)
                # Last: the webhook's posts queue sessions, which then run in its process.
                row["posts"] = concurrent_posts(server, args.posts, args.rounds)
                report[name] = row
            finally:
                server.stop()
            print(json.dumps({name: row}, indent=2), flush=True)
    naive, webhook = report["naive"], report["webhook"]
    growth = webhook["stream_negative_length"]["peak_growth_mb"]
    print(json.dumps({"ratios (naive / webhook)": {
        "peak memory growth under the stream": round(naive["stream_negative_length"]["peak_growth_mb"] / max(growth, 0.1), 1),
        "threads under slow clients": round(naive["slow_clients"]["threads_max"] / webhook["slow_clients"]["threads_max"], 1),
        "failed posts": f'{naive["posts"]["posts"] - naive["posts"]["answered_202"]} vs '
                        f'{webhook["posts"]["posts"] - webhook["posts"]["answered_202"]} of {args.posts * args.rounds}',
    }}, indent=2))


if __name__ == "__main__":
    main()
