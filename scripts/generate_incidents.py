#!/usr/bin/env python3
"""Generate the bundled incident worlds under data/incidents/ from scripts/incidents/.

Definitions are data: scripts/incidents/common.yaml (world order, hosts, noise templates),
scripts/incidents/<world-id>.yaml (meta, alerts, metrics, ground truth, questions, scripted
timeline), scripts/incidents/runbooks/*.md and README.template.md. Per world, `noise_lines`
noise lines are drawn from the templates, then the timeline's lines are added (the incident's key
evidence plus hand-placed red herrings and hostile strings tagged as noise); all randomness
comes from the world's seeded random.Random, so a rerun writes byte-identical files.
tests/test_generate_incidents.py checks that regenerating changes nothing.

Usage: python3 scripts/generate_incidents.py [--out DIR] [--defs DIR]
(defaults: data/incidents and scripts/incidents)
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml

# Siblings in scripts/ (on sys.path when this file runs as a script); never part of the package.
from incident_check import self_check
from incident_timeline import Hosts, Line, Timeline, draw, render

ROOT = Path(__file__).resolve().parent.parent
DEFS = ROOT / "scripts" / "incidents"
META_KEYS = ("id", "title_zh", "title_en", "services", "keywords", "start", "end")


def parse_ts(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)


def _scalar(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return repr(v)
    return json.dumps(str(v), ensure_ascii=False)  # a JSON string is a valid double-quoted YAML scalar


def to_yaml(obj: Any, indent: int = 0) -> str:
    """Block YAML with every string double-quoted; yaml.safe_dump cannot produce this layout."""
    pad = "  " * indent
    lines = []
    items = obj.items() if isinstance(obj, dict) else ((None, v) for v in obj)
    for key, v in items:
        lead = f"{pad}{key}:" if key is not None else f"{pad}-"
        if isinstance(v, dict | list) and not v:
            lines.append(f"{lead} {'{}' if isinstance(v, dict) else '[]'}")
        elif isinstance(v, dict) and key is None:  # a mapping in a list starts on the dash's line
            sub = to_yaml(v, indent + 1).split("\n")
            lines += [f"{pad}- {sub[0].lstrip()}", *sub[1:]]
        elif isinstance(v, dict | list):
            lines += [lead, to_yaml(v, indent + 1)]
        else:
            lines.append(f"{lead} {_scalar(v)}")
    return "\n".join(lines)


def noise(common: dict[str, Any], world: dict[str, Any], rng: random.Random, hosts: Hosts) -> list[Line]:
    start, end = parse_ts(world["start"]), parse_ts(world["end"])
    span_ms = int((end - start).total_seconds() * 1000)
    own = common["services"]
    out = []
    for _ in range(common["noise_lines"]):
        service = rng.choice(world["services"])
        pool = own[service] if service in common["own_noise_only"] else own.get(service, []) * 2 + common["generic"]
        level, template = rng.choice(pool)
        ts = start + timedelta(milliseconds=rng.randint(0, span_ms - 1))
        values: dict[str, Any] = {}
        for name, spec in common["noise_values"].items():
            values[name] = draw(spec, rng, values)
        values["slow_path"] = render(common["slow_paths"].get(service, common["default_slow_path"]), rng, values)
        out.append(Line(ts, service, level, render(template, rng, values), hosts.pick(service, rng), "noise"))
    return out


def alert(start: datetime, a: dict[str, Any]) -> dict[str, Any]:
    def at(minute: int | None) -> str | None:
        return None if minute is None else (start + timedelta(minutes=minute)).strftime("%Y-%m-%dT%H:%M:%SZ")

    labels = {"alertname": a["alertname"], "service": a["service"], "severity": a["severity"], "namespace": "prod"}
    return {"alertname": a["alertname"], "service": a["service"], "severity": a["severity"], "status": a["status"],
            "startsAt": at(a["starts_min"]), "endsAt": at(a["ends_min"]), "description": a["description"],
            "labels": {**labels, **a["labels"]}}


def build_world(d: dict[str, Any], common: dict[str, Any], hosts: Hosts, defs_dir: Path, out: Path) -> list[Line]:
    world = d["world"]
    rng = random.Random(d["seed"])
    wdir = out / world["id"]
    (wdir / "knowledge").mkdir(parents=True, exist_ok=True)
    for old in (wdir / "knowledge").glob("*.md"):
        old.unlink()

    timeline = Timeline(parse_ts(world["start"]), rng, hosts, d.get("macros", {}))
    lines = noise(common, world, rng, hosts)
    timeline.run(d["timeline"], {})
    lines = sorted(lines + timeline.lines, key=lambda r: r.ts)  # stable: ties keep noise-then-script order
    with open(wdir / "logs.jsonl", "w", encoding="utf-8") as f:
        for r in lines:
            ts = r.ts.strftime("%Y-%m-%dT%H:%M:%S.") + f"{r.ts.microsecond // 1000:03d}Z"
            record = {"ts": ts, "service": r.service, "level": r.level, "message": r.message, "host": r.host}
            f.write(json.dumps(record, ensure_ascii=False) + "\n")

    alerts = [alert(parse_ts(world["start"]), a) for a in d["alerts"]]
    (wdir / "world.yaml").write_text(to_yaml({k: world[k] for k in META_KEYS}) + "\n", encoding="utf-8")
    (wdir / "alerts.json").write_text(json.dumps(alerts, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    for name in ("metrics", "ground_truth", "questions"):
        (wdir / f"{name}.yaml").write_text(to_yaml(d[name]) + "\n", encoding="utf-8")
    for name in d["knowledge"]:
        (wdir / "knowledge" / f"{name}.md").write_text((defs_dir / "runbooks" / f"{name}.md").read_text(encoding="utf-8"), encoding="utf-8")
    return lines


def readme(defs: list[dict[str, Any]], defs_dir: Path) -> str:
    rows = [f"| `{d['world']['id']}` | {d['summary']} | {d['ground_truth']['category']} | {d['ground_truth']['root_cause_service']} |"
            for d in defs]
    return (defs_dir / "README.template.md").read_text(encoding="utf-8").replace("@WORLD_ROWS@", "\n".join(rows))


def load(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "data" / "incidents", help="directory to write the worlds into")
    parser.add_argument("--defs", type=Path, default=DEFS, help="directory holding the definitions")
    args = parser.parse_args(argv)
    out: Path = args.out
    defs_dir: Path = args.defs
    common = load(defs_dir / "common.yaml")
    hosts = Hosts(common["hosts"]["prefix"], common["hosts"]["fixed"])
    defs = [load(defs_dir / f"{wid}.yaml") for wid in common["worlds"]]
    out.mkdir(parents=True, exist_ok=True)
    built = {d["world"]["id"]: build_world(d, common, hosts, defs_dir, out) for d in defs}
    (out / "README.md").write_text(readme(defs, defs_dir), encoding="utf-8")
    for wid, lines in built.items():
        n_noise = sum(1 for r in lines if r.kind == "noise")
        print(f"{wid:22s} lines={len(lines):4d} noise={n_noise:4d} evidence={len(lines) - n_noise:3d}")
    problems = self_check(out, defs, built, common["runbooks"])
    for p in problems:
        print("SELF-CHECK FAILED:", p, file=sys.stderr)
    if not problems:
        print("self-check OK")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
