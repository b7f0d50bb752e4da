"""A newcomer's first hour: the README's own set-up commands, run as written from a clean clone in
a fresh virtualenv, start the workbench and run tests.

Two changes keep the test off the network (tests never need it): the venv borrows the packages
already installed here (`--system-site-packages`), and pip is told to use no index and no build
isolation. The commands themselves are read from the README, so a README that drifts fails here.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from pipeline.core.resources import SOURCE_ROOT

pytestmark = pytest.mark.slow


def _setup_commands() -> list[str]:
    readme = (SOURCE_ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Set up", 1)[1].split("\n## ", 1)[0]
    return [block.strip() for block in re.findall(r"```bash\n(.*?)```", section, re.S)]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_readme_commands_work_in_a_fresh_venv_from_a_clean_clone(tmp_path: Path) -> None:
    venv, start, tests = _setup_commands()[:3]
    assert venv.startswith("python3 -m venv .venv") and start.endswith("workbench ui")
    assert tests == 'pip install -e ".[test]" && python -m pytest'

    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(SOURCE_ROOT), str(clone)], check=True)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "DATABASE_URL")}
    env.update(PIP_NO_INDEX="1", PIP_NO_BUILD_ISOLATION="0", PIP_DISABLE_PIP_VERSION_CHECK="1",
               WORKBENCH_HOME=str(tmp_path / "home"))
    # The README's venv line, borrowing what is installed here instead of downloading it.
    offline_venv = venv.replace("python3 -m venv .venv", f"{sys.executable} -m venv --system-site-packages .venv")
    subprocess.run(["bash", "-c", offline_venv], cwd=clone, env=env, check=True)
    # Python 3.11's venv seeds setuptools 65, which needs the `wheel` package to build; with no index
    # the borrowed, newer setuptools (the test extra's) builds instead.
    for seeded in (clone / ".venv" / "lib").glob("python3*/site-packages/setuptools*"):
        subprocess.run(["rm", "-rf", str(seeded)], check=True)
    offline_venv = ". .venv/bin/activate"

    def sh(command: str, **kw: object) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["bash", "-c", f"set -e; {offline_venv}; {command}"], cwd=clone, env=env, text=True,
                              capture_output=True, **kw)  # type: ignore[call-overload]

    install, launch = start.split(" && ")
    done = sh(install, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    where = sh("python -c 'import pipeline; print(pipeline.__file__)'", timeout=60).stdout.strip()
    assert where.startswith(str(clone)), where  # the clone's code, not the checkout running this test

    port = _free_port()
    ui = subprocess.Popen(["bash", "-c", f"{offline_venv}; exec {launch} --port {port} --host 127.0.0.1"],
                          cwd=clone, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          start_new_session=True)
    try:
        for _ in range(120):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2) as r:
                    assert r.read() == b"ok"
                    break
            except OSError:
                if ui.poll() is not None:
                    pytest.fail(f"workbench ui exited: {ui.stdout.read().decode()[-2000:] if ui.stdout else ''}")
                time.sleep(0.5)
        else:
            pytest.fail("workbench ui did not answer in 60 s")
    finally:
        os.killpg(ui.pid, signal.SIGTERM)
        ui.wait(timeout=30)

    # The README's test command, on one test file (the whole suite is what runs this test).
    install_tests, run_tests = tests.split(" && ")
    done = sh(f"{install_tests} && {run_tests} -q -p no:cacheprovider tests/test_cli.py -k 'ask_json_shape or help'",
              timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert re.search(r"\d+ passed", done.stdout)
