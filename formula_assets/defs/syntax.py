"""Group `syntax`: MathML → operator trees, and the formulae that could not be parsed."""

import statistics
import time
from collections import Counter

import dagster as dg
import pyarrow as pa

from formula_assets import mathml, opt
from formula_assets.defs.automation import AUTOMATION
from formula_assets.defs.metadata import markdown_table, preview
from formula_assets.defs.outcomes import check_result
from formula_assets.hashing import table_content_hash
from formula_assets.opt import TokenVocabulary, build_opt_graphs
from formula_assets.quality import graphs_are_trees, one_graph_per_formula, reject_rate
from formula_assets.versioning import code_version

PARSE_VERSION = code_version(mathml, opt)
TOP_TOKENS = 25


@dg.multi_asset(
    group_name="syntax",
    outs={
        "opt_graphs": dg.AssetOut(
            code_version=PARSE_VERSION,
            automation_condition=AUTOMATION,
            description="Operator tree (OPT) of every formula that parses: nodes in preorder, "
            "typed symbol/operator/function, edges with role and child position.",
            kinds={"python", "parquet"},
            owners=["team:formula-assets"],
        ),
        "rejected_formulae": dg.AssetOut(
            code_version=PARSE_VERSION,
            automation_condition=AUTOMATION,
            description="Formulae that failed parsing, with the stage, the reason and an excerpt.",
            kinds={"python", "parquet"},
            owners=["team:formula-assets"],
        ),
    },
)
def parse_formulae(context: dg.AssetExecutionContext, wikidata_formulae: pa.Table):
    """Parse each formula's MathML; a failure quarantines that formula, the run goes on."""
    pairs = zip(
        wikidata_formulae.column("qid").to_pylist(),
        wikidata_formulae.column("mathml").to_pylist(),
        strict=True,
    )
    started = time.perf_counter()
    built = build_opt_graphs(pairs)
    seconds = time.perf_counter() - started
    graphs, rejected = built.graphs, built.rejected
    context.log.info(
        f"parsed {graphs.num_rows:,} formulae, rejected {rejected.num_rows:,} in {seconds:.2f} s"
    )
    sizes = graphs.column("num_nodes").to_pylist() or [0]
    vocabulary = TokenVocabulary.build(graphs.column("node_tokens").to_pylist())
    statuses = Counter(graphs.column("parse_status").to_pylist())
    yield dg.Output(
        graphs,
        output_name="opt_graphs",
        data_version=dg.DataVersion(table_content_hash(graphs)),
        metadata={
            "formulae": graphs.num_rows,
            "repaired": statuses.get("repaired", 0),
            "reject_rate": built.reject_rate,
            "nodes_median": statistics.median(sizes),
            "nodes_max": max(sizes),
            "depth_max": max(graphs.column("depth").to_pylist() or [0]),
            "vocabulary_size": len(vocabulary) - 2,
            "top_tokens": dg.MetadataValue.md(
                markdown_table(
                    [{"token": t, "count": c} for t, c in vocabulary.most_common(TOP_TOKENS)],
                    ["token", "count"],
                )
            ),
            "token_vocabulary": dg.MetadataValue.json(
                dict(zip(vocabulary.tokens[2:], vocabulary.counts[2:], strict=True))
            ),
            "formulae_per_second": round(
                (graphs.num_rows + rejected.num_rows) / max(seconds, 1e-9)
            ),
            "preview": preview(graphs, ["qid", "num_nodes", "depth", "linearised_opt"]),
        },
    )
    reasons = Counter(r.split(":")[0] for r in rejected.column("reason").to_pylist())
    yield dg.Output(
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


@dg.asset_check(
    asset="opt_graphs",
    blocking=True,
    additional_ins={
        "wikidata_formulae": dg.AssetIn("wikidata_formulae"),
        "rejected_formulae": dg.AssetIn("rejected_formulae"),
    },
)
def opt_graphs_one_per_formula(
    opt_graphs: pa.Table, wikidata_formulae: pa.Table, rejected_formulae: pa.Table
) -> dg.AssetCheckResult:
    """Every formula is parsed into exactly one graph or quarantined, never lost or doubled."""
    return check_result(one_graph_per_formula(wikidata_formulae, opt_graphs, rejected_formulae))


@dg.asset_check(asset="opt_graphs", blocking=True)
def opt_graphs_are_trees(opt_graphs: pa.Table) -> dg.AssetCheckResult:
    """Each graph is a tree: edges = nodes − 1, a single root, no cycles."""
    return check_result(graphs_are_trees(opt_graphs))


@dg.asset_check(
    asset="opt_graphs",
    blocking=True,
    additional_ins={"rejected_formulae": dg.AssetIn("rejected_formulae")},
)
def opt_graphs_reject_rate(
    opt_graphs: pa.Table, rejected_formulae: pa.Table
) -> dg.AssetCheckResult:
    """At most 1% of formulae may be rejected; more means the parser or the source broke."""
    return check_result(reject_rate(opt_graphs, rejected_formulae))


syntax_checks = [opt_graphs_one_per_formula, opt_graphs_are_trees, opt_graphs_reject_rate]
