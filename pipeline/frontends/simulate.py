"""An incident world as a live metrics target, so a real Prometheus can scrape it and fire alerts.

`serve_metrics` exposes data/incidents/<world>/metrics.yaml `series:` at /metrics in the
Prometheus text format; `write_prometheus_config` writes a prometheus.yml scraping it every
second and a rule file built from the same file's `rules:`. Then the query_metrics tool can
be pointed at a genuine Prometheus instead of the bundled alerts.

    python -m pipeline.frontends.simulate data/incidents/cpu-saturation --port 9109
"""

from __future__ import annotations

import argparse
import math
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml

from pipeline.core.errors import InputError, NotFound, WorkbenchError, one_line


def load_metrics(world_dir: Path | str) -> dict[str, Any]:
    path = Path(world_dir) / "metrics.yaml"
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except OSError as exc:
        raise NotFound(f"{path}: no metrics to serve ({exc.strerror or exc})") from None
    if not isinstance(data, dict):
        raise InputError(f"{path}: top level must be a mapping with series: and rules:")
    return data


def _label_value(value: Any) -> str:
    return str(value).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _sample(value: Any) -> str:
    num = float(value)
    if math.isnan(num):
        return "NaN"
    if math.isinf(num):
        return "+Inf" if num > 0 else "-Inf"
    return repr(num)


def exposition(series: list[dict[str, Any]]) -> str:
    """Prometheus text format (0.0.4): one HELP/TYPE header per metric name, then its samples."""
    by_name: dict[str, list[dict[str, Any]]] = {}
    for s in series:
        by_name.setdefault(str(s["name"]), []).append(s)
    lines: list[str] = []
    for name, samples in by_name.items():
        help_text = next((s.get("help") for s in samples if s.get("help")), name)
        lines.append(f"# HELP {name} {_help(str(help_text))}")
        lines.append(f"# TYPE {name} gauge")
        for s in samples:
            labels = s.get("labels") or {}
            inner = ",".join(f'{k}="{_label_value(v)}"' for k, v in sorted(labels.items()))
            lines.append(f"{name}{{{inner}}} {_sample(s['value'])}" if inner else f"{name} {_sample(s['value'])}")
    return "\n".join(lines) + "\n"


class _Handler(BaseHTTPRequestHandler):
    body: bytes = b""

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        if self.path.split("?", 1)[0] != "/metrics":
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        """Silent: a scrape every second would flood the console."""


def serve_metrics(world_dir: Path | str, port: int = 0, host: str = "127.0.0.1") -> ThreadingHTTPServer:
    """Start serving the world's series in a daemon thread; port 0 picks a free one.

    Stop it with server.shutdown(); server.server_close().
    """
    body = exposition(load_metrics(world_dir).get("series") or []).encode("utf-8")
    handler = type("WorldMetricsHandler", (_Handler,), {"body": body})
    try:
        server = ThreadingHTTPServer((host, port), handler)
    except OSError as exc:  # port taken, or not ours to bind
        raise InputError(f"cannot serve on {host}:{port}: {exc.strerror or exc}; pick another --port") from None
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="metrics-simulator", daemon=True).start()
    return server


def write_prometheus_config(
    tmpdir: Path | str, scrape_port: int, world_dir: Path | str, *, for_override: str | None = None
) -> Path:
    """prometheus.yml + rules.yml in tmpdir; `for_override` replaces every rule's `for`
    (a test passes "0s" so alerts fire on the first evaluation)."""
    tmp = Path(tmpdir)
    tmp.mkdir(parents=True, exist_ok=True)
    world = Path(world_dir)
    rules = []
    for rule in load_metrics(world).get("rules") or []:
        item = {"alert": rule["alert"], "expr": rule["expr"], "for": for_override or rule.get("for") or "0s"}
        if rule.get("labels"):
            item["labels"] = {str(k): str(v) for k, v in rule["labels"].items()}
        if rule.get("annotations"):
            item["annotations"] = {str(k): str(v) for k, v in rule["annotations"].items()}
        rules.append(item)
    rules_path = tmp / "rules.yml"
    rules_path.write_text(
        yaml.safe_dump({"groups": [{"name": world.name, "interval": "1s", "rules": rules}]}, allow_unicode=True),
        encoding="utf-8",
    )
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(rules_path)],
        "scrape_configs": [
            {
                "job_name": world.name,
                # Keep the world's own labels (service, pod, ...) as written.
                "honor_labels": True,
                "static_configs": [{"targets": [f"127.0.0.1:{scrape_port}"]}],
            }
        ],
    }
    config_path = tmp / "prometheus.yml"
    config_path.write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")
    return config_path


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Serve an incident world's metrics for Prometheus to scrape.")
    parser.add_argument("world_dir", type=Path)
    parser.add_argument("--port", type=int, default=9109)
    parser.add_argument("--config-dir", type=Path, help="also write prometheus.yml and rules.yml here")
    args = parser.parse_args(argv)
    try:
        server = serve_metrics(args.world_dir, args.port)
    except WorkbenchError as exc:
        print(f"simulate: {one_line(exc)}", file=sys.stderr)
        raise SystemExit(2) from None
    port = server.server_address[1]
    print(f"serving {args.world_dir}/metrics.yaml at http://127.0.0.1:{port}/metrics")
    if args.config_dir:
        print(f"prometheus config: {write_prometheus_config(args.config_dir, port, args.world_dir)}")
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        server.shutdown()
        server.server_close()


if __name__ == "__main__":
    main()
