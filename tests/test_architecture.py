"""Dependencies flow one way (docs/architecture.md#layers): core and text <- verdict <- gatekeeper,
stages, providers, tools, store <- runs, replay, bundles, jobs <- front ends <- pages.

An AST walk over every module's imports (deferred imports inside functions included), so a new
module must sit in a layer's folder, and a shortcut upwards fails with the import that made it.
Within a layer nothing goes round in a circle either: no module reaches itself through its
imports, and no two folders import each other, so each folder can be read after the ones it uses.
"""

from __future__ import annotations

import ast
import graphlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# One layer per folder (a module may import its own layer or any layer below it); the longest
# matching prefix wins, so the one module placed apart from its folder says so here.
LAYERS: dict[str, int] = {
    # 0: contracts, settings, errors, messages, and text primitives every layer may read
    "pipeline.core": 0, "pipeline.text": 0,
    # the typed tool records: what a tool returns is a contract every consumer reads
    "pipeline.tools.results": 0,
    # 1: the verdict policy, question scope and coverage, the neutral ground stages and providers share
    "pipeline.verdict": 1,
    # 2: the engine's parts
    **dict.fromkeys(["pipeline.gatekeeper", "pipeline.stages", "pipeline.llm", "pipeline.tools", "pipeline.store"], 2),
    # 3: what runs a session, a replay, a bundle check or import, an eval, a job
    **dict.fromkeys(["pipeline.runs", "pipeline.replay", "pipeline.bundles", "pipeline.jobs", "pipeline.eval",
                     "pipeline.telemetry"], 3),
    # 4: front ends of the engine
    **dict.fromkeys(["pipeline.frontends", "pipeline.__main__"], 4),
}
# Same-layer packages that must still not see each other: a provider (the offline engine
# included) never imports a stage, a stage never imports a provider, the gatekeeper neither.
SEPARATE: dict[str, tuple[str, ...]] = {
    "pipeline.llm": ("pipeline.stages",),
    "pipeline.stages": ("pipeline.llm",),
    "pipeline.gatekeeper": ("pipeline.stages", "pipeline.llm"),
}


def _module(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> list[tuple[int, str, list[str]]]:
    """(line, module, imported names) of every absolute import in a file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name, []) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module, [a.name for a in node.names]))
    return found


def _layer(module: str) -> int | None:
    matches = [p for p in LAYERS if module == p or module.startswith(p + ".")]
    return LAYERS[max(matches, key=len)] if matches else None


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


ENGINE = sorted((ROOT / "pipeline").rglob("*.py"))


def test_every_engine_module_has_a_layer():
    unplaced = [m for m in map(_module, ENGINE) if m != "pipeline" and _layer(m) is None]
    assert unplaced == [], "put each new module in a folder of LAYERS above"


def test_the_folders_show_the_layers():
    """Only the package marker and `python -m pipeline` sit directly in pipeline/; each layer is a folder."""
    loose = sorted(p.name for p in (ROOT / "pipeline").glob("*.py"))
    assert loose == ["__init__.py", "__main__.py"]


@pytest.mark.parametrize("path", ENGINE, ids=lambda p: _module(p))
def test_engine_imports_flow_one_way(path: Path):
    here = _module(path)
    mine = _layer(here)
    wrong = []
    for line, target, _ in _imports(path):
        if _within(target, "streamlit"):
            wrong.append(f"line {line}: {target} (the engine never imports streamlit)")
        if not _within(target, "pipeline") or target == "pipeline" or mine is None:
            continue
        theirs = _layer(target)
        if theirs is not None and theirs > mine:
            wrong.append(f"line {line}: {target} (layer {theirs}) from layer {mine}")
        for package, banned in SEPARATE.items():
            if _within(here, package):
                wrong += [f"line {line}: {target} ({package} stays apart from {b})" for b in banned if _within(target, b)]
    assert wrong == []


def test_the_verdict_policy_reads_only_contracts_targets_and_text():
    targets = {t for _, t, _ in _imports(ROOT / "pipeline" / "verdict" / "policy.py") if _within(t, "pipeline")}
    assert targets <= {"pipeline.core.contracts", "pipeline.core.feature_shapes", "pipeline.text.primitives",
                       "pipeline.core.messages"}


MODULES = {_module(p): p for p in ENGINE}


def _imported_modules(path: Path) -> set[str]:
    """The engine modules a file imports: `from pipeline.x import y` is module pipeline.x.y when there is one."""
    found: set[str] = set()
    for _, target, names in _imports(path):
        if not _within(target, "pipeline"):
            continue
        for name in [f"{target}.{n}" for n in names] or [target]:
            while name not in MODULES:  # "pipeline" itself is one, so this ends
                name = name.rpartition(".")[0]
            found.add(name)
    return found - {"pipeline"}


def _folder(module: str) -> str:
    return ".".join(module.split(".")[:2])


def _circle(graph: dict[str, set[str]]) -> list[str]:
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as exc:
        return list(exc.args[1])
    return []


IMPORTS = {m: _imported_modules(p) - {m} for m, p in MODULES.items() if m != "pipeline"}


def test_no_module_reaches_itself_through_its_imports() -> None:
    """A circle is split by moving what both ends need (shapes, protocols) into a module of its own."""
    assert _circle(IMPORTS) == []


def test_no_two_folders_import_each_other() -> None:
    graph: dict[str, set[str]] = {}
    for module, targets in IMPORTS.items():
        graph.setdefault(_folder(module), set()).update(_folder(t) for t in targets if _folder(t) != _folder(module))
    assert _circle(graph) == []


PAGES = sorted((ROOT / "pages").rglob("*.py")) + [ROOT / "app.py"]


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.name)
def test_pages_use_no_private_engine_names(path: Path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    aliases = {a.asname or a.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
               and node.module and _within(node.module, "pipeline") for a in node.names}
    aliases |= {(a.asname or a.name).split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                for a in node.names if _within(a.name, "pipeline")}
    wrong = []
    for line, target, names in _imports(path):
        if _within(target, "pipeline"):
            private = [n for n in [*target.split("."), *names] if n.startswith("_") and not n.startswith("__")]
            wrong += [f"line {line}: {target} {n}" for n in private]
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                and node.attr.startswith("_") and not node.attr.startswith("__")):
            wrong.append(f"line {node.lineno}: {node.value.id}.{node.attr}")
    assert wrong == []
