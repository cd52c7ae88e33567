"""The symbols Wikidata declares for a formula's concepts (`concept_symbols`).

Wikidata states, for many formulae, which concept each symbol stands for (the formula's "has
part" statements with their "in defining formula" symbol): `c` is the speed of light, `ε_0`
the permittivity of vacuum. The symbol is parsed by the same parser, with the same options,
as the formulae, so that a declared symbol and the same symbol in a formula's OPT are the
same string (`syntax.symbols`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pyarrow as pa

from formula_assets.syntax.mathml import MathMLError, ParseOptions, parse_mathml_tree
from formula_assets.syntax.opt import flatten
from formula_assets.syntax.symbols import formula_symbols

CONCEPT_SYMBOLS_SCHEMA = pa.schema(
    [
        ("qid", pa.string()),  # the formula's item
        ("concept", pa.string()),  # the concept's item
        ("label", pa.string()),
        ("symbols", pa.list_(pa.string())),  # empty when the symbol did not parse
        ("error", pa.string()),  # why it did not parse (null: it did)
    ]
)


def symbols_of_mathml(mathml: str, options: ParseOptions) -> list[str]:
    """The symbols of one MathML expression (a MathMLError when it does not parse)."""
    graph = flatten(parse_mathml_tree(mathml, options).root)
    return formula_symbols(graph.node_tokens, graph.edge_parent, graph.edge_child)


def build_concept_symbols(
    formulae: Iterable[tuple[str, Sequence[Mapping[str, Any]] | None]], options: ParseOptions
) -> pa.Table:
    """One row per declared symbol of each formula's concepts ((qid, concepts) pairs, the
    concepts as `wikidata_formulae` has them); a concept without a symbol declares none. A
    symbol that does not parse keeps its row, with no symbols and the reason."""
    rows: dict[str, list[Any]] = {name: [] for name in CONCEPT_SYMBOLS_SCHEMA.names}
    for qid, concepts in formulae:
        for concept in concepts or ():
            mathml = concept.get("symbol_mathml")
            if not mathml or not mathml.strip():
                continue
            try:
                symbols, error = symbols_of_mathml(mathml, options), None
            except MathMLError as exc:
                symbols, error = [], exc.reason
            rows["qid"].append(qid)
            rows["concept"].append(concept.get("qid"))
            rows["label"].append(concept.get("label") or "")
            rows["symbols"].append(symbols)
            rows["error"].append(error)
    return pa.Table.from_pydict(rows, schema=CONCEPT_SYMBOLS_SCHEMA)
