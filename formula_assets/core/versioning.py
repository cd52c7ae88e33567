"""Code versions read from the source: nobody keeps a list of what an asset runs.

An asset's code version hashes the source of every project module in the import closure of
the module that defines it (imports anywhere in a module count, lazy ones inside functions
included; imports only for type checkers do not), the data files shipped beside those
modules (a package's `data/` folder), and the values of the result-changing settings those
modules declare in a module-level `RESULT_SETTINGS` tuple. A new import is picked up by
itself; an edit anywhere in the closure changes the version.

Outside every version are modules that judge, show or schedule data but never produce it,
`UNVERSIONED` and every `checks` module, each with the reason (docs/lineage.md shows
`boundary_table()`, and a test keeps the two equal). The closure does not pass through them.
Ancestor packages' `__init__` modules count only when imported by name.

Everything is read with `ast`, without importing anything, so versions cost no import time.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from formula_assets.core.hashing import bytes_hash
from formula_assets.core.settings import BY_NAME, Settings

PACKAGE = "formula_assets"
PACKAGE_DIR = Path(__file__).resolve().parent.parent
VERSION_CHARS = 16
DATA_FOLDER = "data"
SETTINGS_NAME = "RESULT_SETTINGS"
# The boundary: modules (or packages) outside every code version, with the reason.
UNVERSIONED: dict[str, str] = {
    "formula_assets.defs.metadata": "what the asset pages show: previews, Markdown tables, "
    "charts, column docs",
    "formula_assets.defs.automation": "when assets run (automation conditions, sensor, schedule)",
    "formula_assets.defs.publication": "when a checked table is shown (staged, then published "
    "once its blocking checks pass): where the bytes go, not what they hold",
    "formula_assets.core.versioning": "how versions are computed",
    "formula_assets.cli": "entry points; no asset imports them",
    "formula_assets.deploy": "deployment examples; no asset imports them",
    "formula_assets.serve": "the search service and its pages; no asset imports them",
}
UNVERSIONED_LEAF = "checks"  # every module of that name, in any package
LEAF_REASON = (
    "rules behind asset checks: they judge data; edit one and run the checks "
    "(UI: *Checks* → *Execute*)"
)


# The settings that change results (`changes_results` in core.settings), read when the
# definitions load. A module declares the ones it depends on in a module-level
# `RESULT_SETTINGS` tuple of their names.
RESULT_SETTING_NAMES = frozenset(name for name, s in BY_NAME.items() if s.changes_results)


def is_versioned(module: str) -> bool:
    if module.rsplit(".", 1)[-1] == UNVERSIONED_LEAF:
        return False
    return not any(module == u or module.startswith(u + ".") for u in UNVERSIONED)


@dataclass(frozen=True)
class ModuleInfo:
    name: str
    path: Path
    is_package: bool
    imports: frozenset[str]
    result_settings: tuple[str, ...]


def module_paths(root: Path = PACKAGE_DIR, package: str = PACKAGE) -> dict[str, Path]:
    """Every module of the package: dotted name → file."""
    out: dict[str, Path] = {}
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root.parent).with_suffix("")
        parts = relative.parts
        if any(p.startswith(".") or p == "__pycache__" for p in parts):
            continue
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def _type_checking_only(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _import_targets(tree: ast.Module, name: str, is_package: bool) -> set[str]:
    """Dotted names an import statement may refer to (modules or names inside them)."""
    targets: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _type_checking_only(child):
                for statement in child.orelse:
                    visit(ast.Module(body=[statement], type_ignores=[]))
                continue
            if isinstance(child, ast.Import):
                targets.update(alias.name for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = _absolute(child, name, is_package)
                targets.update(f"{base}.{alias.name}|{base}" for alias in child.names)
            visit(child)

    visit(tree)
    return targets


def _absolute(node: ast.ImportFrom, name: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    package = name if is_package else name.rpartition(".")[0]
    for _ in range(node.level - 1):
        package = package.rpartition(".")[0]
    return f"{package}.{node.module}" if node.module else package


def _settings_declared(tree: ast.Module, path: Path) -> tuple[str, ...]:
    for statement in tree.body:
        targets = (
            statement.targets
            if isinstance(statement, ast.Assign)
            else [statement.target]
            if isinstance(statement, ast.AnnAssign) and statement.value is not None
            else []
        )
        if any(isinstance(t, ast.Name) and t.id == SETTINGS_NAME for t in targets):
            value = ast.literal_eval(statement.value)  # type: ignore[arg-type]
            if not (isinstance(value, tuple) and all(isinstance(v, str) for v in value)):
                raise ValueError(f"{path}: {SETTINGS_NAME} must be a tuple of setting names")
            return value
    return ()


MODULE, DATA, SETTING = "module", "data", "setting"


@dataclass(frozen=True)
class Part:
    """One thing a code version covers: a module's source, a shipped data file's hash, or a
    result-changing setting's fingerprint."""

    kind: str  # MODULE | DATA | SETTING
    name: str
    content: bytes | str

    @property
    def label(self) -> str:
        return f"{self.kind} {self.name}"

    @property
    def digest(self) -> str:
        """A short hash of the content: what tells two versions of the part apart."""
        return bytes_hash(self.content)[:12]


def version_of(parts: list[Part]) -> str:
    return bytes_hash(*(x for part in parts for x in (part.name, part.content)))[:VERSION_CHARS]


def covers(parts: list[Part]) -> dict[str, str]:
    """The parts as `{"<kind> <name>": digest}`: what materializations record, so a later
    version can be compared part by part (`formula-assets stale --explain`)."""
    return {part.label: part.digest for part in parts}


class Versioner:
    """The import graph of one copy of the package, read from its files."""

    def __init__(self, root: Path = PACKAGE_DIR, settings: Settings | None = None) -> None:
        self.root = root
        self.settings = Settings.from_environment() if settings is None else settings
        self.paths = module_paths(root, root.name)
        self._modules: dict[str, ModuleInfo] = {}

    def module(self, name: str) -> ModuleInfo:
        """One module's imports and declared settings, read when first needed."""
        if name not in self._modules:
            if name not in self.paths:
                raise KeyError(f"{name} is not a module of {self.root}")
            self._modules[name] = self._read(name, self.paths[name])
        return self._modules[name]

    def _read(self, name: str, path: Path) -> ModuleInfo:
        is_package = path.name == "__init__.py"
        targets, declared = _parsed(path.read_bytes(), name, is_package, str(path))
        imports = set()
        for target in targets:
            submodule, _, base = target.partition("|")
            if submodule in self.paths:
                imports.add(submodule)
            elif (base or submodule) in self.paths:
                imports.add(base or submodule)
        return ModuleInfo(name, path, is_package, frozenset(imports - {name}), declared)

    def closure(self, module: str, without: frozenset[str] = frozenset()) -> list[str]:
        """The versioned modules `module` imports, directly or not, itself included; the
        closure does not pass through the modules `without`."""
        seen, stack = {module}, [module]
        while stack:
            for imported in self.module(stack.pop()).imports:
                if imported not in seen and imported not in without and is_versioned(imported):
                    seen.add(imported)
                    stack.append(imported)
        return sorted(seen)

    def data_files(self, module: str) -> list[Path]:
        folder = self.module(module).path.parent / DATA_FOLDER
        return sorted(p for p in folder.rglob("*") if p.is_file()) if folder.is_dir() else []

    def result_settings(self, module: str, without: frozenset[str] = frozenset()) -> list[str]:
        names = {s for m in self.closure(module, without) for s in self.module(m).result_settings}
        unknown = names - RESULT_SETTING_NAMES
        if unknown:
            raise ValueError(
                f"unknown result settings {sorted(unknown)} declared in the closure of {module}"
            )
        return sorted(names)

    def parts(self, module: str, without: frozenset[str] = frozenset()) -> list[Part]:
        """What the code version of `module` hashes, in order."""
        out: list[Part] = []
        files: set[Path] = set()
        for name in self.closure(module, without):
            out.append(Part(MODULE, name, self.module(name).path.read_bytes()))
            files.update(self.data_files(name))
        for path in sorted(files):
            stat = path.stat()
            digest = _file_hash(path, stat.st_size, stat.st_mtime_ns)
            out.append(Part(DATA, str(path.relative_to(self.root)), digest))
        for setting in self.result_settings(module, without):
            value = BY_NAME[setting].fingerprint(self.settings.value(setting))
            out.append(Part(SETTING, setting, value))
        return out

    def code_version(self, module: str, without: frozenset[str] = frozenset()) -> str:
        return version_of(self.parts(module, without))


@cache
def _parsed(
    source: bytes, name: str, is_package: bool, filename: str
) -> tuple[frozenset[str], tuple[str, ...]]:
    """Import targets and declared settings of one module's source (cached by content)."""
    tree = ast.parse(source, filename=filename)
    return frozenset(_import_targets(tree, name, is_package)), _settings_declared(
        tree, Path(filename)
    )


@cache
def _file_hash(path: Path, size: int, mtime_ns: int) -> str:
    """Shipped data files are large and rarely change: hashed once per (path, size, mtime)."""
    return bytes_hash(path.read_bytes())


@cache
def _default() -> Versioner:
    return Versioner()


def code_version(module: str, without: frozenset[str] = frozenset()) -> str:
    """The code version of the assets defined in `module` (pass `__name__`); `without`: of
    the part of its closure that does not pass through those modules."""
    return _default().code_version(module, without)


def parts(module: str) -> list[Part]:
    """What the code version of the assets defined in `module` hashes."""
    return _default().parts(module)


def is_package_module(module: str) -> bool:
    """Whether `module` is a module of this package (its source is versioned by import)."""
    return module in _default().paths


def closure(module: str) -> list[str]:
    return _default().closure(module)


def unreached(versioner: Versioner | None = None) -> list[str]:
    """Modules (not packages) in no code version although not on the boundary: reached only
    through it (or imported by no asset at all)."""
    versioner = versioner or _default()
    assets = [m for m in versioner.paths if m.startswith(f"{PACKAGE}.defs") and is_versioned(m)]
    reached = {m for asset in assets for m in versioner.closure(asset)}
    return sorted(
        m
        for m in versioner.paths
        if is_versioned(m) and m not in reached and versioner.paths[m].name != "__init__.py"
    )


def _path(module: str, versioner: Versioner) -> str:
    path = versioner.paths[module].relative_to(versioner.root)
    return f"`{path.parent}/`" if path.name == "__init__.py" else f"`{path}`"


def boundary_table(versioner: Versioner | None = None) -> str:
    """The boundary as docs/lineage.md shows it (a test keeps the two equal)."""
    versioner = versioner or _default()
    rows = [
        "| outside every code version | why |",
        "|---|---|",
        f"| every `{UNVERSIONED_LEAF}.py` (each stage's, and `defs/{UNVERSIONED_LEAF}.py`) "
        f"| {LEAF_REASON} |",
        *(
            f"| {_path(m, versioner)} | {why} |"
            for m, why in UNVERSIONED.items()
            if m in versioner.paths
        ),
    ]
    only = ", ".join(_path(m, versioner) for m in unreached(versioner))
    if only:
        rows.append(
            f"| {only} | imported only through the modules above (or by no asset): "
            "an asset never runs them |"
        )
    return "\n".join(rows)
