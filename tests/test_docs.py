"""Every document a comment or prompt cites is in the repository, at an anchor that exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CITATION = re.compile(r"docs/([a-z]+)\.md#([a-z0-9-]+)")
SOURCES = ("pipeline", "pages", "prompts", "rules", "tests", "benchmarks", "scripts")


def _anchors(doc: Path) -> set[str]:
    text = doc.read_text(encoding="utf-8")
    explicit = set(re.findall(r'<a id="([a-z0-9-]+)"></a>', text))
    headings = {re.sub(r"[^a-z0-9 -]", "", h.lower()).strip().replace(" ", "-")
                for h in re.findall(r"^#+ (.*)$", text, re.M)}
    return explicit | headings


def test_every_cited_docs_anchor_exists() -> None:
    broken = []
    for folder in SOURCES:
        for path in (ROOT / folder).rglob("*"):
            if path.suffix not in (".py", ".md", ".yaml") or "screenshots" in path.parts:
                continue
            for m in CITATION.finditer(path.read_text(encoding="utf-8", errors="replace")):
                doc = ROOT / "docs" / f"{m.group(1)}.md"
                if not doc.is_file() or m.group(2) not in _anchors(doc):
                    broken.append(f"{path.relative_to(ROOT)}: {m.group(0)}")
    assert broken == []


def test_no_reference_to_documents_outside_the_repository() -> None:
    stale = re.compile(r"(seed 00[03]|design) ?§|§ ?\d", re.I)
    found = [f"{p.relative_to(ROOT)}:{n}" for folder in SOURCES for p in (ROOT / folder).rglob("*")
             if p.suffix in (".py", ".md", ".yaml") and "screenshots" not in p.parts
             for n, line in enumerate(p.read_text(encoding="utf-8", errors="replace").splitlines(), 1)
             if stale.search(line)]
    assert found == []


def _engine_modules() -> dict[str, list[str]]:
    """Every module under pipeline/, by its last name and by its dotted path without `pipeline.`."""
    found: dict[str, list[str]] = {}
    for path in (ROOT / "pipeline").rglob("*.py"):
        dotted = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        for key in {dotted.split(".")[-1], dotted.removeprefix("pipeline.")}:
            found.setdefault(key, []).append(dotted)
    return found


def test_architecture_names_only_what_exists() -> None:
    """`module.name` and `file.py` in docs/architecture.md resolve to a module and its attribute."""
    import importlib

    import yaml

    from pipeline.core.config import Settings

    rule_ids = {r["id"] for r in yaml.safe_load((ROOT / "rules" / "index.yaml").read_text())["rules"]}
    sections = set(Settings.model_fields)
    modules = _engine_modules()
    files = {p.name for folder in ("pipeline", "pages", "benchmarks", "scripts") for p in (ROOT / folder).rglob("*.py")}
    files |= {p.name for p in ROOT.glob("*.py")}
    missing = []
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    for name in sorted(set(re.findall(r"`([A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)+)`", text))):
        head, _, rest = name.partition(".")
        if name in rule_ids or head in sections or head == "st":
            continue
        if rest == "py":
            if name not in files:
                missing.append(name)
            continue
        module_path, attrs = (name.removeprefix("pipeline."), []) if name.startswith("pipeline.") else (head, [rest])
        while module_path not in modules and "." in module_path:
            module_path, last = module_path.rsplit(".", 1)
            attrs.insert(0, last)
        if module_path not in modules:
            missing.append(name)
            continue
        ok = False
        for dotted in modules[module_path]:
            obj: object = importlib.import_module(dotted)
            try:
                for attr in ".".join(attrs).split(".") if attrs else []:
                    obj = getattr(obj, attr)
                ok = True
            except AttributeError:
                pass
        if not ok:
            missing.append(name)
    assert missing == []


def test_no_comment_cites_an_issue_tracker() -> None:
    """Comments give reasons; a tracker number points at something the reader cannot open."""
    tracker = re.compile(r"\bissues? \d+\b", re.I)
    found = [f"{p.relative_to(ROOT)}:{n}" for folder in ("pipeline", "pages", "tests", "benchmarks", "scripts")
             for p in (ROOT / folder).rglob("*.py")
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
             if tracker.search(line) and p.name != "test_docs.py"]
    assert found == []
