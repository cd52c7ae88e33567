"""Which modules are mutated and which tests judge each: `targets.toml`; which surviving
mutants are equivalent (no test can tell them apart): `equivalent/<module>.toml`, one entry
per mutant with `path`, `operator`, `source` (the mutated line, stripped) and `reason`, and
`occurrence` where the same operator applies more than once to the same line of source."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HERE = Path(__file__).resolve().parent
PACKAGE = "formula_assets"
TESTS = "formula_assets_tests"


@dataclass(frozen=True)
class Target:
    module: str
    tests: tuple[str, ...]
    functions: tuple[str, ...] | None = None  # only mutate these (qualified names)
    args: tuple[str, ...] = ()  # extra pytest arguments
    operators: tuple[str, ...] = ()  # operator sets beyond the defaults (`EXTRA_OPERATORS`)

    @property
    def conditions(self) -> bool:
        return "conditions" in self.operators

    @property
    def path(self) -> str:
        return self.module.replace(".", "/") + ".py"


@dataclass(frozen=True)
class Excluded:
    module: str
    reason: str


@dataclass(frozen=True)
class Equivalent:
    path: str
    operator: str
    source: str  # the stripped source line of the mutant
    reason: str
    # Among mutants with the same path, operator and source line, which one (1, 2, …, in the
    # order the tool lists them); None: all of them.
    occurrence: int | None = None


def mirror(module: str) -> str:
    """The test file mirroring a module: formula_assets.a.b → formula_assets_tests/a/test_b.py."""
    parts = module.split(".")[1:]
    return "/".join([TESTS, *parts[:-1], f"test_{parts[-1]}.py"])


def _read(path: Path) -> dict:
    return tomllib.loads(path.read_text(encoding="utf-8"))


def load_targets(path: Path = HERE / "targets.toml") -> list[Target]:
    return [
        Target(
            module=entry["module"],
            tests=tuple(entry.get("tests") or [mirror(entry["module"])]),
            functions=tuple(entry["functions"]) if "functions" in entry else None,
            args=tuple(entry.get("args", ())),
            operators=_operator_sets(entry),
        )
        for entry in _read(path)["module"]
    ]


def _operator_sets(entry: dict) -> tuple[str, ...]:
    from mutation.operators import EXTRA_OPERATORS

    names = tuple(entry.get("operators", ()))
    unknown = sorted(set(names) - EXTRA_OPERATORS)
    if unknown:
        raise ValueError(f"{entry['module']}: unknown operator sets {unknown}")
    return names


def load_excluded(path: Path = HERE / "targets.toml") -> list[Excluded]:
    out = []
    for entry in _read(path).get("excluded", []):
        if not entry.get("reason", "").strip():
            raise ValueError(f"{path.name}: a module left out without a reason: {entry}")
        out.append(Excluded(entry["module"], entry["reason"]))
    return out


def scope(path: Path = HERE / "targets.toml", root: Path = ROOT) -> list[str]:
    """Every module that must be measured or left out with a reason: each module of the
    domain packages (`packages`) and the `extra` ones."""
    data = _read(path)
    modules = []
    for package in data.get("packages", []):
        for source in sorted((root / PACKAGE / package).glob("*.py")):
            if source.name != "__init__.py":
                modules.append(f"{PACKAGE}.{package}.{source.stem}")
    return modules + list(data.get("extra", []))


def load_equivalents(folder: Path = HERE / "equivalent") -> list[Equivalent]:
    out = []
    for path in sorted(folder.glob("*.toml")):
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        for entry in data.get("equivalent", []):
            if not entry.get("reason", "").strip():
                raise ValueError(f"{path.name}: equivalent mutant without a reason: {entry}")
            out.append(
                Equivalent(
                    entry["path"],
                    entry["operator"],
                    entry["source"],
                    entry["reason"],
                    entry.get("occurrence"),
                )
            )
    return out
