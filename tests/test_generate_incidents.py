"""scripts/generate_incidents.py regenerates data/incidents/ byte for byte from scripts/incidents/.

Tests, eval fixtures and the offline engine depend on exact values in the bundled worlds (order
ids, latencies, timestamps), so a change to the definitions or the generator that moves the
random stream shows up here, not as a puzzling failure elsewhere.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "generate_incidents.py"
COMMITTED = ROOT / "data" / "incidents"

pytestmark = pytest.mark.slow  # runs the generator in a process of its own


def _run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True, timeout=300)


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_regenerating_reproduces_every_committed_file(tmp_path: Path) -> None:
    result = _run("--out", tmp_path)
    assert result.returncode == 0, result.stderr
    assert "self-check OK" in result.stdout
    generated, committed = _files(tmp_path), _files(COMMITTED)
    assert sorted(generated) == sorted(committed)
    changed = [name for name in committed if generated[name] != committed[name]]
    assert changed == []


def test_self_check_rejects_key_evidence_in_noise(tmp_path: Path) -> None:
    # A noise template that utters a world's key evidence would let the pipeline pass on noise.
    defs = tmp_path / "defs"
    shutil.copytree(ROOT / "scripts" / "incidents", defs)
    common = defs / "common.yaml"
    text = common.read_text(encoding="utf-8")
    leak = "- [INFO, 'Kafka consumer heartbeat ok, lag={lag}']"
    assert leak in text
    common.write_text(text.replace(leak, "- [INFO, 'evicted_keys=48213 lag={lag}']"), encoding="utf-8")
    result = _run("--out", tmp_path / "out", "--defs", defs)
    assert result.returncode == 1
    assert "redis-latency: noise line contains key evidence 'evicted_keys=48213'" in result.stderr
