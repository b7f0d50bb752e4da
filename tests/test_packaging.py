"""`pip install .` (not editable) gives a workbench that runs from any directory.

The wheel is built from this checkout and installed into a fresh venv that borrows the already
installed dependencies (no network); then `workbench ask`, `workbench eval` and `workbench ui`
run from an empty directory, far from the source tree.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import sysconfig
import time
import urllib.request
import zipfile
from pathlib import Path

import pytest

from pipeline.core.resources import SOURCE_ROOT

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("pkg")
    wheels = base / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                    str(SOURCE_ROOT), "-w", str(wheels)], check=True, cwd=base)
    wheel = next(wheels.glob("*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    for shipped in ("evidence_workbench/rules/index.yaml", "evidence_workbench/prompts/composer.md",
                    "evidence_workbench/ui/app.py", "evidence_workbench/ui/pages/ask.py",
                    "evidence_workbench/ui/pages/_ui/frame.py", "evidence_workbench/ui/.streamlit/config.toml",
                    "pipeline/core/locale/zh/LC_MESSAGES/workbench.po"):
        assert shipped in names, f"{shipped} is not in the wheel"
    assert any(n.startswith("evidence_workbench/data/incidents/") for n in names)
    assert not any("__pycache__" in n for n in names)
    env_dir = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(env_dir)], check=True)
    # The dependencies are borrowed from the interpreter running the tests. `--system-site-packages`
    # would borrow from the *base* interpreter instead, which inside a virtualenv lacks them.
    child_site = subprocess.run([str(env_dir / "bin" / "python"), "-c",
                                 "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                check=True, capture_output=True, text=True).stdout.strip()
    ours = dict.fromkeys(sysconfig.get_paths()[key] for key in ("purelib", "platlib"))
    Path(child_site, "borrowed_dependencies.pth").write_text("".join(f"{d}\n" for d in ours))
    subprocess.run([str(env_dir / "bin" / "pip"), "install", "-q", "--no-deps", str(wheel)], check=True)
    return env_dir


def _run(venv: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    env["WORKBENCH_HOME"] = str(cwd / "home")
    return subprocess.run([str(venv / "bin" / "workbench"), *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600)


def test_installed_package_is_used_not_the_checkout(venv: Path, tmp_path: Path) -> None:
    out = subprocess.run([str(venv / "bin" / "python"), "-c",
                          "import pipeline, pipeline.core.resources as r; print(pipeline.__file__); "
                          "print(r.resource_dir('rules'))"],
                         cwd=tmp_path, capture_output=True, text=True, check=True).stdout.splitlines()
    assert str(venv) in out[0] and str(venv) in out[1]


def test_ask_and_eval_from_any_directory(venv: Path, tmp_path: Path) -> None:
    ask = _run(venv, tmp_path, "ask", "payment API times out since 10:00, what's going on?")
    assert ask.returncode == 0, ask.stderr
    assert "payment-service" in ask.stdout
    evaluation = _run(venv, tmp_path, "eval")
    assert evaluation.returncode in (0, 1), evaluation.stderr
    assert "fixture" in evaluation.stdout.lower() or "passed" in evaluation.stdout.lower()
    assert (tmp_path / "home" / "workbench.db").is_file()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_ui_serves_the_packaged_app(venv: Path, tmp_path: Path) -> None:
    port = _free_port()
    env = dict(os.environ, WORKBENCH_HOME=str(tmp_path / "home"))
    proc = subprocess.Popen([str(venv / "bin" / "workbench"), "ui", "--port", str(port), "--host", "127.0.0.1"],
                            cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        health = f"http://127.0.0.1:{port}/_stcore/health"
        body = ""
        for _ in range(120):
            try:
                body = urllib.request.urlopen(health, timeout=2).read().decode()
                break
            except OSError:
                time.sleep(0.5)
        assert body == "ok"
        page = urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5).read().decode()
        assert "<div id=\"root\">" in page or "streamlit" in page.lower()
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)


def test_every_dependency_has_a_tested_floor() -> None:
    """CI installs .ci/floors.txt and the package with --no-deps: a dependency missing there would
    only fail at the lowest versions, on the first import of the module that needs it."""
    import re
    import tomllib

    project = tomllib.loads((SOURCE_ROOT / "pyproject.toml").read_text())["project"]
    floors = {re.split(r"[=<>\[]", line)[0].strip().lower().replace("_", "-")
              for line in (SOURCE_ROOT / ".ci" / "floors.txt").read_text().splitlines()
              if line.strip() and not line.startswith("#")}
    wanted = {re.split(r"[=<>\[ ;]", dep)[0].lower().replace("_", "-") for dep in project["dependencies"]}
    assert wanted - floors == set()
