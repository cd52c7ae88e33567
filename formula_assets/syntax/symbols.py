"""A formula's symbols: the leaf tokens of its OPT (`c`, `π`, `2`), and each subscripted leaf
with a leaf subscript, written `base_subscript` (`ε_0`, `k_B`), since Wikidata declares a
concept's symbol as `ε_0`, not `ε` (`syntax.concept_symbols`).

Graph rows only, no parser: methods read symbols from `opt_graphs` without their code
version following the parser's source (a parser change reaches them through the data).
"""

from __future__ import annotations

from collections.abc import Sequence

SUBSCRIPT = "subscript"  # the OPT token of <msub>


def formula_symbols(
    node_tokens: Sequence[str], edge_parent: Sequence[int], edge_child: Sequence[int]
) -> list[str]:
    """The distinct symbols of an OPT (nodes in preorder, edges parent → child), sorted."""
    children: dict[int, list[int]] = {}
    for parent, child in zip(edge_parent, edge_child, strict=True):
        children.setdefault(parent, []).append(child)
    found: set[str] = set()
    for node, token in enumerate(node_tokens):
        below = children.get(node, [])
        if not below:
            found.add(token)
        elif token == SUBSCRIPT and len(below) == 2 and not any(n in children for n in below):
            found.add(f"{node_tokens[below[0]]}_{node_tokens[below[1]]}")
    return sorted(found)
