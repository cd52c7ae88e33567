"""The layering contract: domain modules never import Dagster or the Dagster layer."""

import importlib
import pkgutil
from pathlib import Path

from importlinter.cli import lint_imports

import formula_assets

ROOT = Path(__file__).resolve().parent.parent
DAGSTER_LAYER = {
    "formula_assets.cli",
    "formula_assets.definitions",
    "formula_assets.defs",
    "formula_assets.deploy",
}


def test_import_linter_contracts_hold(monkeypatch) -> None:
    monkeypatch.chdir(ROOT)
    assert lint_imports(no_cache=True) == 0


def test_every_domain_module_is_under_the_contract() -> None:
    """A new domain module must be added to the contract, or it escapes the check."""
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    (contract,) = config["tool"]["importlinter"]["contracts"]
    covered = set(contract["source_modules"])
    modules = {
        m.name
        for m in pkgutil.iter_modules(formula_assets.__path__, "formula_assets.")
        if m.name not in DAGSTER_LAYER
    }
    uncovered = {m for m in modules if not any(m == c or m.startswith(c + ".") for c in covered)}
    assert not uncovered, f"add to the import-linter contract: {sorted(uncovered)}"
    for name in covered:
        importlib.import_module(name)
