"""The parser over the whole embedded snapshot: what the snapshot holds must parse."""

from collections import Counter

from formula_assets.ingest.snapshot import read_snapshot_items
from formula_assets.syntax.opt import build_opt_graphs, is_tree


def test_every_snapshot_formula_parses_into_a_tree() -> None:
    items = read_snapshot_items()
    built = build_opt_graphs((i["item"].rsplit("/", 1)[1], i["formula"]) for i in items)
    assert built.rejected.num_rows == 0
    assert built.graphs.num_rows == len(items) == 1758
    rows = built.graphs.to_pylist()
    assert all(is_tree(r["num_nodes"], r["edge_parent"], r["edge_child"]) for r in rows)
    statuses = Counter(r["parse_status"] for r in rows)
    assert statuses == {"ok": 1757, "repaired": 1}  # the one msup with a single child
    tokens = {t for r in rows for t in r["node_tokens"]}
    assert "\u2061" not in tokens  # function application is dropped
    assert {"power", "subscript", "frac", "sqrt", "root", "table", "underover"} <= tokens
    sizes = sorted(r["num_nodes"] for r in rows)
    assert sizes[len(sizes) // 2] >= 10 and sizes[-1] < 1000
