"""The architecture holds: layers in the order the stages build on each other, syntax and
semantics independent, no Dagster in the domain, and no import cycle anywhere."""

import pkgutil
import tomllib
from pathlib import Path

import grimp
from importlinter.cli import lint_imports

import formula_assets

ROOT = Path(__file__).resolve().parent.parent


def contracts() -> list[dict]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]


def test_import_linter_contracts_hold(monkeypatch) -> None:
    monkeypatch.chdir(ROOT)
    assert lint_imports(no_cache=True) == 0


def test_every_top_level_module_has_a_layer() -> None:
    """A new stage must take its place in the layers, or it escapes every contract."""
    (layers,) = [c["layers"] for c in contracts() if c["type"] == "layers"]
    layered = [name.strip() for layer in layers for name in layer.split("|")]
    assert len(layered) == len(set(layered))
    top_level = {m.name for m in pkgutil.iter_modules(formula_assets.__path__, "formula_assets.")}
    assert top_level == set(layered)


def strongly_connected(graph: grimp.ImportGraph) -> list[set[str]]:
    """Tarjan's algorithm over the module import graph: components with more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for imported in graph.find_modules_directly_imported_by(module):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in on_stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == module:
                    break
            if len(component) > 1:
                found.append(component)

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    return found


def test_no_import_cycles() -> None:
    graph = grimp.build_graph("formula_assets", cache_dir=None)
    assert strongly_connected(graph) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = grimp.ImportGraph()
    for module in ("p", "p.a", "p.b", "p.c"):
        graph.add_module(module)
    graph.add_import(importer="p.a", imported="p.b")
    graph.add_import(importer="p.b", imported="p.a")
    graph.add_import(importer="p.c", imported="p.a")
    assert strongly_connected(graph) == [{"p.a", "p.b"}]
