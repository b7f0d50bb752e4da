"""Packaging that pyproject.toml alone cannot say: rules/, prompts/, data/ and the Streamlit UI
stay at the top of the repository (the product card fixes that layout) and ship inside the
wheel as the `evidence_workbench` package folder, where pipeline/core/resources.py finds them."""

import shutil
from pathlib import Path

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py

RESOURCES = {"rules": "rules", "prompts": "prompts", "data": "data", "ui.pages": "pages"}


class BuildWithEntry(build_py):
    """Also copy the Streamlit entry file and its config beside the shipped pages."""

    def run(self) -> None:
        super().run()
        target = Path(self.build_lib, "evidence_workbench", "ui")
        target.mkdir(parents=True, exist_ok=True)
        shutil.copy2("app.py", target / "app.py")
        (target / ".streamlit").mkdir(exist_ok=True)
        shutil.copy2(".streamlit/config.toml", target / ".streamlit" / "config.toml")


setup(
    packages=find_packages(include=["pipeline*"]) + [f"evidence_workbench.{k}" for k in RESOURCES],
    package_dir={f"evidence_workbench.{k}": v for k, v in RESOURCES.items()},
    package_data={**{f"evidence_workbench.{k}": ["**/*"] for k in RESOURCES},
                  "pipeline.core": ["locale/*/LC_MESSAGES/*.po"]},
    exclude_package_data={"": ["**/__pycache__/*", "*.pyc"]},
    cmdclass={"build_py": BuildWithEntry},
)
