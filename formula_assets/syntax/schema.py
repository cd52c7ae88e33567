"""The vocabulary of an operator tree: node types and edge roles, in a fixed order so their
ids are stable across runs (the graph encoder embeds them by id)."""

from __future__ import annotations

SYMBOL, OPERATOR, FUNCTION = "symbol", "operator", "function"
NODE_TYPES = (SYMBOL, OPERATOR, FUNCTION)

ROLES = (
    "arg",
    "base",
    "exp",
    "sub",
    "sup",
    "num",
    "den",
    "index",
    "under",
    "over",
    "row",
    "cell",
    "label",
    "presub",
    "presup",
)
