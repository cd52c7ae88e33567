"""What structure search stores of each formula: a few hashes of its canonical tree.

* `pattern` — the whole formula up to renaming, operand order and sides (`syntax.canonical`);
  `named` — the same with the identifiers' names: equal patterns are a match, equal named
  forms the same formula; `loose` — the pattern without signs (`F = −kx` and `F = kx`: sign
  conventions differ between authors);
* `links` — the pattern of each relation the formula states on its own: `C = πd = 2πr` holds
  `C = πd`, `C = 2πr` and `πd = 2πr`, so a query of one link finds the chain;
* `parts` — the pattern of every subtree of three nodes or more: a query that is one side, or
  a term, of a formula finds it;
* `features` — for near matches, counted: the shape of every subtree (identifiers unnamed),
  every parent → child step (Tangent's symbol pairs, with identifiers unnamed and named),
  and the identifiers and constants themselves.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from formula_assets.syntax.canonical import (
    NEG,
    VAR,
    Canonical,
    Expr,
    canonical,
    fingerprint,
    links,
)

MIN_PART_SIZE = 3  # a part smaller than `x^2` says little about a formula


@dataclass(frozen=True)
class StructureKeys:
    pattern: int
    named: int
    loose: int
    loose_named: int
    links: tuple[int, ...]
    parts: tuple[int, ...]
    features: dict[int, int]  # feature hash → count
    size: int
    identifiers: tuple[str, ...]  # the names of v1, v2, … of `pattern`


def _shape(expr: Expr) -> str:
    """A subtree's shape: its canonical writing with every identifier one `v`."""
    if expr.head == VAR:
        return "v"
    if not expr.args:
        return f"{expr.head}:{expr.name}"
    return f"{expr.head}:{expr.name}(" + ",".join(_shape(a) for a in expr.args) + ")"


def _step(expr: Expr, named: bool) -> str:
    if expr.head == VAR:
        return f"v:{expr.name}" if named else "v"
    return f"{expr.head}:{expr.name}"


def _unsigned(expr: Expr) -> Expr:
    if expr.head == NEG and len(expr.args) == 1:
        return _unsigned(expr.args[0])
    return Expr(expr.head, expr.name, tuple(_unsigned(a) for a in expr.args))


def structure_keys(formula: Canonical) -> StructureKeys:
    tree = formula.tree
    features: Counter[str] = Counter()
    parts: set[int] = set()
    for node in tree.nodes():
        if node.args:
            features["s:" + _shape(node)] += 1
            if node is not tree and node.size() >= MIN_PART_SIZE:
                parts.add(fingerprint(canonical(node).pattern))
            for arg in node.args:
                features[f"e:{_step(node, False)}>{_step(arg, False)}"] += 1
                if arg.head == VAR:
                    features[f"n:{_step(node, False)}>{arg.name}"] += 1
        elif node.head == VAR:
            features[f"v:{node.name}"] += 1
        else:
            features[f"c:{node.head}:{node.name}"] += 1
    own = [link for link in links(tree) if link is not tree]
    unsigned = canonical(_unsigned(tree))
    return StructureKeys(
        pattern=fingerprint(formula.pattern),
        named=fingerprint(formula.named),
        loose=fingerprint(unsigned.pattern),
        loose_named=fingerprint(unsigned.named),
        links=tuple(sorted({fingerprint(canonical(link).pattern) for link in own})),
        parts=tuple(sorted(parts)),
        features={fingerprint(k): v for k, v in features.items()},
        size=tree.size(),
        identifiers=tuple(sorted(formula.variables, key=lambda n: int(formula.variables[n][1:]))),
    )
