"""Where the shipped rules, prompts, bundled data and UI files are.

In a source checkout they sit at the top of the repository (the product card fixes that
layout); in an installed wheel setup.py has copied them into the `evidence_workbench` package
folder. Code asks here instead of walking up from `__file__`, so both layouts work from any
directory.
"""

from __future__ import annotations

import os
from pathlib import Path

SOURCE_ROOT = Path(__file__).resolve().parents[2]
NAMES = ("rules", "prompts", "data", "ui")


def _from_source() -> bool:
    # A checkout (editable install or tests) has the project file beside the package.
    return (SOURCE_ROOT / "pyproject.toml").is_file() and (SOURCE_ROOT / "rules").is_dir()


def resource_dir(name: str) -> Path:
    """The folder of a shipped resource: rules, prompts, data or ui (app.py + pages/)."""
    if name not in NAMES:
        raise ValueError(f"unknown resource {name!r}")
    if _from_source():
        return SOURCE_ROOT if name == "ui" else SOURCE_ROOT / name
    # setup.py installs the resources beside this package. Not importlib.resources: an editable
    # install elsewhere on sys.path maps the same namespace and would answer instead.
    return SOURCE_ROOT / "evidence_workbench" / name


def default_home() -> Path:
    """The data directory (SQLite file, exports) when WORKBENCH_HOME is not set."""
    if _from_source():
        return SOURCE_ROOT / ".workbench"
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "evidence-workbench"


def default_config_file() -> Path:
    """workbench.yaml: beside the checkout, else in the directory the command runs from."""
    return SOURCE_ROOT / "workbench.yaml" if _from_source() else Path.cwd() / "workbench.yaml"
