"""Formula variants made from an item's own formula, as people rewrite a formula they know:
identifiers renamed (consistently), the sides of `=` swapped, the operands of a sum or a
product in another order, one link of a chain. Each is an OPT, written back as MathML by the
caller, so a variant goes through the whole query path; a kind that does not apply to a
formula (no `=` to swap) gives None.
"""

from __future__ import annotations

import random
import unicodedata
from collections.abc import Callable

from formula_assets.syntax.canonical import KNOWN_FUNCTIONS, renamable
from formula_assets.syntax.mathml import OptNode
from formula_assets.syntax.schema import OPERATOR, SYMBOL

RENAMED, SWAPPED, REORDERED, LINK = "renamed", "swapped_sides", "reordered", "one_link"
_POOL = list("abcdfghjklmnpqrstuvwxyzABCDFGHJKLMNPQRSTUVWXYZ") + list("αβγδζηθκλμνξρστφχψω")
_RELATION = "="


def _copy(node: OptNode, children: list[OptNode] | None = None) -> OptNode:
    kids = [_copy(c) for c in node.children] if children is None else children
    for position, child in enumerate(kids):
        child.position = position
    return OptNode(node.type, node.token, kids, node.role, node.position)


def _renamable(node: OptNode) -> bool:
    """A one-letter identifier (as structure search reads identifiers)."""
    token = node.token
    return (
        node.type == SYMBOL
        and not node.children
        and len(token) == 1
        and unicodedata.category(token).startswith("L")
        and renamable(token)
    )


def renamed(root: OptNode, seed: int = 0) -> OptNode | None:
    """Every single-letter identifier replaced by a letter the formula does not use, the
    same letter for the same identifier everywhere."""
    letters = sorted({n.token for n in _walk(root) if _renamable(n)})
    if not letters:
        return None
    used = {n.token for n in _walk(root) if not n.children}
    free = [c for c in _POOL if c not in used]
    random.Random(seed).shuffle(free)  # noqa: S311 (a reproducible draw, no secret)
    if len(free) < len(letters):
        return None
    mapping = dict(zip(letters, free, strict=False))

    def rename(node: OptNode) -> OptNode:
        if _renamable(node):
            return OptNode(node.type, mapping[node.token], [], node.role, node.position)
        return _copy(node, [rename(c) for c in node.children])

    return rename(root)


def _top(root: OptNode) -> OptNode:
    """The row that holds a formula's relations: the root group, or its only group child."""
    node = root
    while node.token == "group" and len(node.children) == 1 and node.children[0].children:
        node = node.children[0]
    return node


def _relations(row: OptNode) -> list[int]:
    return [
        i
        for i, c in enumerate(row.children)
        if c.type == OPERATOR and not c.children and c.token == _RELATION
    ]


def swapped_sides(root: OptNode, seed: int = 0) -> OptNode | None:
    """`a = b` written `b = a` (a formula with exactly one `=` in its top row)."""
    row = _top(root)
    if row.token != "group":
        return None
    at = _relations(row)
    if len(at) != 1 or at[0] in (0, len(row.children) - 1):
        return None
    i = at[0]
    kids = [_copy(c) for c in row.children]
    return _replace(root, row, [*kids[i + 1 :], kids[i], *kids[:i]])


def one_link(root: OptNode, seed: int = 0) -> OptNode | None:
    """One link of a chain `a = b = c`: `a = b` or `b = c`, chosen by `seed`."""
    row = _top(root)
    if row.token != "group":
        return None
    at = _relations(row)
    if len(at) < 2:
        return None
    bounds = [-1, *at, len(row.children)]
    k = random.Random(seed).randrange(len(at))  # noqa: S311 (a reproducible draw)
    start, end = bounds[k] + 1, bounds[k + 2]
    kids = [_copy(c) for c in row.children[start:end]]
    if not kids or kids[0].type == OPERATOR or kids[-1].type == OPERATOR:
        return None
    return _replace(root, row, kids)


def _sides(row: OptNode) -> list[tuple[int, int]]:
    """The spans of a row between its relation signs (the whole row when it has none)."""
    cuts = [-1, *_relations(row), len(row.children)]
    return [(cuts[k] + 1, cuts[k + 1]) for k in range(len(cuts) - 1)]


def _terms(children: list[OptNode]) -> list[list[OptNode]] | None:
    """The terms of a plain sum (`a + b + c`, no other operator), else None."""
    terms: list[list[OptNode]] = [[]]
    for child in children:
        if child.type == OPERATOR and not child.children:
            if child.token != "+":
                return None
            terms.append([])
        else:
            terms[-1].append(child)
    return terms if len(terms) > 1 and all(terms) else None


def _factors(row: OptNode) -> bool:
    """A row that is a plain product by juxtaposition: no operator, no function name."""
    return len(row.children) > 1 and all(
        c.type != OPERATOR and c.token not in KNOWN_FUNCTIONS and c.token not in ("d", "∂")
        for c in row.children
    )


def reordered(root: OptNode, seed: int = 0) -> OptNode | None:
    """The first sum met in the tree (a row, or one side of a relation in it), its terms in
    reverse order; without a sum, the first product by juxtaposition reversed."""
    for node in _walk(root):
        if node.token != "group":
            continue
        for start, end in _sides(node):
            terms = _terms(node.children[start:end])
            if terms is None:
                continue
            plus = next(c for c in node.children[start:end] if c.type == OPERATOR)
            side: list[OptNode] = []
            for k, term in enumerate(reversed(terms)):
                if k:
                    side.append(_copy(plus))
                side.extend(_copy(c) for c in term)
            kids = [_copy(c) for c in node.children]
            return _replace(root, node, [*kids[:start], *side, *kids[end:]])
    for node in _walk(root):
        if node.token == "group" and _factors(node) and node is not _top(root):
            return _replace(root, node, [_copy(c) for c in reversed(node.children)])
    return None


def _walk(node: OptNode):
    yield node
    for child in node.children:
        yield from _walk(child)


def _replace(root: OptNode, target: OptNode, children: list[OptNode]) -> OptNode:
    """A copy of `root` in which `target`'s children are `children`."""

    def visit(node: OptNode) -> OptNode:
        if node is target:
            return _copy(node, children)
        return _copy(node, [visit(c) for c in node.children])

    return visit(root)


VARIANTS: dict[str, Callable[[OptNode, int], OptNode | None]] = {
    RENAMED: renamed,
    SWAPPED: swapped_sides,
    REORDERED: reordered,
    LINK: one_link,
}
