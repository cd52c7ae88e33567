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


@dataclass(frozen=True)
class Target:
    module: str
    tests: tuple[str, ...]
    functions: tuple[str, ...] | None = None  # only mutate these (qualified names)

    @property
    def path(self) -> str:
        return self.module.replace(".", "/") + ".py"


@dataclass(frozen=True)
class Equivalent:
    path: str
    operator: str
    source: str  # the stripped source line of the mutant
    reason: str
    # Among mutants with the same path, operator and source line, which one (1, 2, …, in the
    # order the tool lists them); None: all of them.
    occurrence: int | None = None


def load_targets(path: Path = HERE / "targets.toml") -> list[Target]:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    return [
        Target(
            module=entry["module"],
            tests=tuple(entry["tests"]),
            functions=tuple(entry["functions"]) if "functions" in entry else None,
        )
        for entry in data["module"]
    ]


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
