"""Mutants of a module's source, made on its syntax tree.

Operators (one mutant per site): comparison flips (`<` ↔ `<=`, `>` ↔ `>=`, `==` ↔ `!=`,
`in` ↔ `not in`, `is` ↔ `is not`), arithmetic swaps (`+` ↔ `-`, `*` ↔ `/`, `//` → `/`,
`%` → `//`, `**` → `*`), boolean swaps (`and` ↔ `or`, `not x` → `x`), unary minus dropped,
constant tweaks (an int n → n + 1, a float x → 2x (0.0 → 1.0), `True` ↔ `False`),
`return X` → `return None`, and a call made as a statement dropped. A module whose entry asks
for `conditions` (`operators = ["conditions"]` in targets.toml: Dagster's automation conditions,
composed with `&`, `|` and `~`) also gets `&` ↔ `|` and `~x` → `x`; elsewhere those operators
are mostly set unions and array masks, and a module's score stays comparable with the one
recorded before.

Left alone: docstrings, annotations, code under `if TYPE_CHECKING:`, the text of error
messages and f-strings, and the arguments of calls that only log or print (such a call made
as a statement may still be dropped: what a command prints is what its user sees). A site is
named by its position in a deterministic walk of the tree, so a mutant is rebuilt from the
source alone.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

COMPARE = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}
ARITHMETIC = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.Div,
    ast.Div: ast.Mult,
    ast.FloorDiv: ast.Div,
    ast.Mod: ast.FloorDiv,
    ast.Pow: ast.Mult,
}
BOOLEAN = {ast.And: ast.Or, ast.Or: ast.And}
CONDITIONS = {ast.BitAnd: ast.BitOr, ast.BitOr: ast.BitAnd}
# the operator sets a targets.toml entry may add to the defaults
EXTRA_OPERATORS = frozenset({"conditions"})
# Calls that only report: methods of loggers (`context.log.info(...)`), and the project's
# `log(...)`/`echo(...)`/`progress(...)` callbacks — not `math.log` or `np.log`, which compute.
QUIET_METHODS = {"warn", "warning", "info", "debug"}
QUIET_FUNCTIONS = {"log", "print", "echo", "progress", "warn"}


@dataclass(frozen=True)
class Mutant:
    module: str  # dotted name
    path: str  # relative to the repository root
    site: int  # index in the walk
    line: int
    operator: str  # e.g. "Lt→LtE", "return→None"

    @property
    def id(self) -> str:
        return f"{self.path}:{self.line}:{self.site}:{self.operator}"


def _name(node: ast.AST) -> str:
    return type(node).__name__


def _quiet(call: ast.Call) -> bool:
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr in QUIET_METHODS
    return isinstance(func, ast.Name) and func.id in QUIET_FUNCTIONS


def _walk(tree: ast.Module, functions: Sequence[str] | None) -> Iterator[tuple[ast.AST, ast.AST]]:
    """(node, parent) in a fixed order, skipping what is never mutated."""

    def visit(node: ast.AST, scope: str, mutable: bool) -> Iterator[tuple[ast.AST, ast.AST]]:
        for field, value in ast.iter_fields(node):
            children = value if isinstance(value, list) else [value]
            for index, child in enumerate(children):
                if not isinstance(child, ast.AST):
                    continue
                if field in ("annotation", "returns", "type_comment"):
                    continue
                if isinstance(child, ast.If) and _type_checking(child):
                    continue
                if _is_docstring(node, field, index, child):
                    continue
                if isinstance(child, ast.JoinedStr | ast.Raise | ast.Assert):
                    continue
                if isinstance(child, ast.Call) and _quiet(child):
                    continue
                inner = scope
                if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    inner = f"{scope}.{child.name}" if scope else child.name
                inside = mutable or functions is None or _selected(inner, functions)
                if inside and not isinstance(child, ast.FunctionDef | ast.ClassDef):
                    yield child, node
                yield from visit(child, inner, inside)

    yield from visit(tree, "", functions is None)


def _selected(scope: str, functions: Sequence[str]) -> bool:
    return any(scope == f or scope.startswith(f + ".") for f in functions)


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _is_docstring(parent: ast.AST, field: str, index: int, child: ast.AST) -> bool:
    return (
        field == "body"
        and index == 0
        and isinstance(parent, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        and isinstance(child, ast.Expr)
        and isinstance(child.value, ast.Constant)
        and isinstance(child.value.value, str)
    )


def _operators(node: ast.AST, parent: ast.AST, conditions: bool = False) -> list[str]:
    """The mutations possible at one node, as operator names."""
    out: list[str] = []
    if conditions and isinstance(node, ast.BinOp | ast.AugAssign) and type(node.op) in CONDITIONS:
        return [f"{_name(node.op)}→{CONDITIONS[type(node.op)].__name__}"]
    if conditions and isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Invert):
        return ["Invert→drop"]
    if isinstance(node, ast.Compare):
        for position, op in enumerate(node.ops):
            if type(op) in COMPARE:
                out.append(f"{position}:{_name(op)}→{COMPARE[type(op)].__name__}")
    elif isinstance(node, ast.BinOp | ast.AugAssign) and type(node.op) in ARITHMETIC:
        out.append(f"{_name(node.op)}→{ARITHMETIC[type(node.op)].__name__}")
    elif isinstance(node, ast.BoolOp):
        out.append(f"{_name(node.op)}→{BOOLEAN[type(node.op)].__name__}")
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not | ast.USub):
        out.append(f"{_name(node.op)}→drop")
    elif isinstance(node, ast.Constant) and not isinstance(parent, ast.Expr):
        value = node.value
        if isinstance(value, bool):
            out.append(f"{value}→{not value}")
        elif isinstance(value, int):
            out.append(f"{value}→{value + 1}")
        elif isinstance(value, float):
            out.append(f"{value!r}→{(value * 2 if value else 1.0)!r}")
    elif isinstance(node, ast.Return) and node.value is not None:
        if not (isinstance(node.value, ast.Constant) and node.value.value is None):
            out.append("return→None")
    elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        out.append("call→drop")
    return out


def mutants(
    source: str,
    module: str,
    path: str,
    functions: Sequence[str] | None = None,
    conditions: bool = False,
) -> list[Mutant]:
    tree = ast.parse(source)
    found = []
    for site, (node, parent) in enumerate(_walk(tree, functions)):
        for operator in _operators(node, parent, conditions):
            found.append(Mutant(module, path, site, getattr(node, "lineno", 0), operator))
    return found


def mutate(source: str, mutant: Mutant, functions: Sequence[str] | None = None) -> ast.Module:
    """The module's tree with one mutant applied."""
    tree = ast.parse(source)
    for site, (node, parent) in enumerate(_walk(tree, functions)):
        if site == mutant.site:
            _apply(node, parent, mutant.operator)
            return ast.fix_missing_locations(tree)
    raise LookupError(f"no site {mutant.site} in {mutant.path}")


def _apply(node: ast.AST, parent: ast.AST, operator: str) -> None:
    if isinstance(node, ast.Compare):
        position, change = operator.split(":", 1)
        new = change.split("→")[1]
        node.ops[int(position)] = getattr(ast, new)()
    elif isinstance(node, ast.BinOp | ast.AugAssign | ast.BoolOp):
        node.op = getattr(ast, operator.split("→")[1])()
    elif isinstance(node, ast.UnaryOp):
        _replace(parent, node, node.operand)
    elif isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, bool):
            node.value = not value
        elif isinstance(value, int):
            node.value = value + 1
        else:
            node.value = value * 2 if value else 1.0
    elif isinstance(node, ast.Return):
        node.value = ast.Constant(value=None)
    elif isinstance(node, ast.Expr):
        _replace(parent, node, ast.Pass())
    else:
        raise ValueError(f"cannot apply {operator} to {_name(node)}")


def _replace(parent: ast.AST, old: ast.AST, new: ast.AST) -> None:
    for field, value in ast.iter_fields(parent):
        if isinstance(value, list):
            for index, item in enumerate(value):
                if item is old:
                    value[index] = new
                    return
        elif value is old:
            setattr(parent, field, new)
            return
    raise LookupError("node not found in its parent")
