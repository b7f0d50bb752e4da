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
