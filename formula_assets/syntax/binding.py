"""What each identifier of a formula is doing: a quantity it states something about, or a
placeholder an editor would not annotate (a summation index, an integration variable, the
`d` of a differential, a function's argument, a standard constant such as `e`, `i`, ℝ or ∀).

Read on the tree in written order (`syntax.canonical.written_order`: the canonical tree sorts
the factors of `ρ dV`), with the names the structure index and the annotations use (`E_k`,
`Δx`)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

from formula_assets.syntax.canonical import Expr

FREE, FUNCTION = "free", "function"
BOUND, DIFFERENTIAL, ARGUMENT, CONSTANT = "bound", "differential", "argument", "constant"
PLACEHOLDERS = frozenset({BOUND, DIFFERENTIAL, ARGUMENT, CONSTANT})
# names of a constant wherever they stand alone (π is a constant already): e, i, the number
# sets however the formula writes them, and the logical signs a parser reads as letters
_SETS = "NZQRC"
STANDARD_CONSTANTS = frozenset(
    {"e", "i", *(f"double-struck {s}" for s in _SETS), *"ℕℤℚℝℂ", *"∀∃∄¬◻□◇⊤⊥"}
)
_DIFFERENTIALS = frozenset({"d", "∂", "δ"})
_INTEGRALS = frozenset({"∫", "∬", "∭", "∮", "∯", "∰"})


def roles(tree: Expr) -> dict[str, set[str]]:
    """identifier → the roles it plays anywhere in the formula (`tree` in written order)."""
    out: dict[str, set[str]] = {}
    for name, role in _walk(tree):
        out.setdefault(name, set()).add(role)
    return out


def placeholders(tree: Expr) -> set[str]:
    """The identifiers that are only placeholders (never a quantity of their own). A bound
    variable or a differential's `d` also reads as a plain leaf where it is used (`f(t)`,
    the `t` of `d t`): its binding decides."""
    out = set()
    for name, found in roles(tree).items():
        if found & {BOUND, DIFFERENTIAL}:
            found = found - {FREE}
        if found <= PLACEHOLDERS:
            out.add(name)
    return out


def _walk(expr: Expr) -> Iterator[tuple[str, str]]:
    if expr.head == "var":
        yield expr.name, CONSTANT if expr.name in STANDARD_CONSTANTS else FREE
        return
    args = expr.args
    if expr.head == "bigop" and args:
        lower = args[0]
        index = _index(lower) if lower.head.startswith("rel:") else None
        if index is not None:
            yield index, BOUND  # ∑_{i=1}, lim_{h→0}, ⋃_{k∈K}
            args = (*(a for a in lower.args if a.name != index), *args[1:])
        elif lower.head == "var" and expr.name not in _INTEGRALS and len(args) == 2:
            yield lower.name, BOUND  # ∑_i x_i
            args = args[1:]
        if expr.name in _INTEGRALS:
            yield from _differentials(expr)
    elif expr.head == "apply" and args:
        function, *arguments = args
        if function.head == "var":
            yield function.name, FUNCTION
        else:
            yield from _walk(function)
        for argument in arguments:
            if argument.head == "var":
                yield argument.name, ARGUMENT
            else:
                yield from _walk(argument)
        return
    elif expr.head == "prod":
        yield from _differentials(expr)
    for arg in args:
        yield from _walk(arg)


def _index(relation: Expr) -> str | None:
    """The variable a big operator's lower limit binds: the one variable of `i = 1` (its
    sides in canonical order), the left of `h → 0` or `k ∈ K`."""
    if relation.head == "rel:=":
        names = [a.name for a in relation.args if a.head == "var"]
        return names[0] if len(names) == 1 else None
    first = relation.args[0] if relation.args else None
    return first.name if first is not None and first.head == "var" else None


def _differentials(expr: Expr) -> Iterator[tuple[str, str]]:
    """`d x` side by side in a product: `d` is the differential; under an integral, the
    variable it integrates over is bound."""
    for node in _products(expr):
        items = node.args
        for left, right in itertools.pairwise(items):
            if left.head == "var" and _is_differential(left.name) and right.head == "var":
                yield left.name, DIFFERENTIAL
                if expr.name in _INTEGRALS:
                    yield right.name, BOUND


def _is_differential(name: str) -> bool:
    """`d`, `∂`, `δ`, also in an upright or sans-serif style (`sans-serif d`)."""
    return name.rsplit(" ", 1)[-1] in _DIFFERENTIALS


def _products(expr: Expr) -> Iterator[Expr]:
    if expr.head == "prod":
        yield expr
    for arg in expr.args:
        if arg.head != "bigop":  # an inner integral binds its own variable
            yield from _products(arg)
