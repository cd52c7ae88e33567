"""`opt_graphs` and `rejected_formulae`: MathML → operator trees, and the formulae that failed.

One parse yields both tables; either can be materialized alone (the asset is subsettable, so
a selection such as `*correspondence_metrics` runs). The checks that compare the two tables
are evaluated inside the step, on the very tables it produced, so they never judge a graph
table against an older quarantine.
"""

import statistics
import time
from collections import Counter

import dagster as dg
import pyarrow as pa

from formula_assets.core.hashing import table_content_hash
from formula_assets.core.settings import Settings
from formula_assets.defs import metadata
from formula_assets.defs.checks import check_result, schema_contract
from formula_assets.defs.metadata import markdown_table, preview
from formula_assets.defs.publication import settle
from formula_assets.syntax.checks import graphs_are_trees, one_graph_per_formula, reject_rate
from formula_assets.syntax.opt import build_opt_graphs, parse_options

ONE_PER_FORMULA = "opt_graphs_one_per_formula"
ARE_TREES = "opt_graphs_are_trees"
REJECT_RATE = "opt_graphs_reject_rate"
CHECKS = {
    ONE_PER_FORMULA: "Every formula is parsed into exactly one graph or quarantined, never lost "
    "or doubled.",
    ARE_TREES: "Each graph is a tree: edges = nodes − 1, a single root, no cycles.",
    REJECT_RATE: "The share of rejected formulae is not significantly above 1% (one-sided "
    "binomial test, p < 0.01 fails): more means the parser or the source broke.",
}


@dg.multi_asset(
    group_name="syntax",
    can_subset=True,
    outs={
        "opt_graphs": dg.AssetOut(
            description="Operator tree (OPT) of every formula that parses: nodes in preorder, "
            "typed symbol/operator/function, edges with role and child position.",
            kinds={"python", "parquet"},
            is_required=False,
        ),
        "rejected_formulae": dg.AssetOut(
            description="Formulae that failed parsing, with the stage, the reason and an excerpt.",
            kinds={"python", "parquet"},
            is_required=False,
        ),
    },
    check_specs=[
        dg.AssetCheckSpec(name, asset="opt_graphs", description=text, blocking=True)
        for name, text in CHECKS.items()
    ],
)
def parse_formulae(context: dg.AssetExecutionContext, wikidata_formulae: pa.Table):
    """Parse each formula's MathML; a failure quarantines that formula, the run goes on."""
    pairs = zip(
        wikidata_formulae.column("qid").to_pylist(),
        wikidata_formulae.column("mathml").to_pylist(),
        strict=True,
    )
    started = time.perf_counter()
    built = build_opt_graphs(pairs, parse_options(Settings.from_environment().styled_letters))
    seconds = time.perf_counter() - started
    graphs, rejected = built.graphs, built.rejected
    context.log.info(
        f"parsed {graphs.num_rows:,} formulae, rejected {rejected.num_rows:,} in {seconds:.2f} s"
    )
    selected = context.op_execution_context.selected_output_names
    if "opt_graphs" in selected:
        yield _graphs_output(graphs, rejected, built.reject_rate, seconds)
    if "rejected_formulae" in selected:
        yield _rejected_output(rejected)
    outcomes = {
        ONE_PER_FORMULA: lambda: one_graph_per_formula(wikidata_formulae, graphs, rejected),
        ARE_TREES: lambda: graphs_are_trees(graphs),
        REJECT_RATE: lambda: reject_rate(graphs, rejected),
    }
    for key in context.selected_asset_check_keys:
        result = check_result(outcomes[key.name](), asset_key=key.asset_key, check_name=key.name)
        yield settle(result)


def _graphs_output(graphs: pa.Table, rejected: pa.Table, rate: float, seconds: float) -> dg.Output:
    sizes = graphs.column("num_nodes").to_pylist() or [0]
    statuses = Counter(graphs.column("parse_status").to_pylist())
    return dg.Output(
        graphs,
        output_name="opt_graphs",
        data_version=dg.DataVersion(table_content_hash(graphs)),
        metadata={
            "formulae": graphs.num_rows,
            "repaired": statuses.get("repaired", 0),
            "reject_rate": rate,
            "nodes_median": statistics.median(sizes),
            "nodes_max": max(sizes),
            "depth_max": max(graphs.column("depth").to_pylist() or [0]),
            **metadata.tokens(graphs),
            "formulae_per_second": round(
                (graphs.num_rows + rejected.num_rows) / max(seconds, 1e-9)
            ),
            "preview": preview(graphs, ["qid", "num_nodes", "depth", "linearised_opt"]),
        },
    )


def _rejected_output(rejected: pa.Table) -> dg.Output:
    reasons = Counter(r.split(":")[0] for r in rejected.column("reason").to_pylist())
    return dg.Output(
        rejected,
        output_name="rejected_formulae",
        data_version=dg.DataVersion(table_content_hash(rejected)),
        metadata={
            "rejected": rejected.num_rows,
            "reasons": dg.MetadataValue.md(
                markdown_table(
                    [{"reason": r, "count": c} for r, c in reasons.most_common()],
                    ["reason", "count"],
                )
            ),
            "preview": preview(rejected, ["qid", "stage", "reason", "excerpt"]),
        },
    )


opt_graphs_schema = schema_contract(["opt_graphs", "rejected_formulae"])
