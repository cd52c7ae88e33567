"""`name_index`: every item's label, aliases, description and formulae read aloud, and their
sentence vector: the names channel of search (`search.names`)."""

import dagster as dg
import pyarrow as pa

from formula_assets.core.arrow import with_expected_dimension, with_model
from formula_assets.core.hashing import table_content_hash
from formula_assets.core.settings import Settings
from formula_assets.defs.checks import vectors_valid_check
from formula_assets.defs.metadata import preview, step_cost
from formula_assets.defs.resources.sentence_embedder import SentenceEmbedderResource
from formula_assets.search.names import NameIndex, name_quality, name_table, spoken_forms
from formula_assets.syntax.opt import parse_options

SENTENCE_MODEL = "sentence_model"  # the observable source of the model's identity


@dg.asset(
    group_name="search",
    deps=[SENTENCE_MODEL],
    kinds={"pytorch", "parquet"},
    metadata=step_cost(1.0),
)
def name_index(
    context: dg.AssetExecutionContext,
    sentence_embedder: SentenceEmbedderResource,
    wikidata_formulae: pa.Table,
    opt_graphs: pa.Table,
):
    """Each item's names as search matches them, its formulae read aloud, and the sentence
    vector of its label, aliases and description (embedded by the model of the other
    embeddings, cached)."""
    from formula_assets.semantics.cache import embed_texts
    from formula_assets.semantics.models import ProgressLog

    embedder = sentence_embedder.embedder(None)
    cache = sentence_embedder.cache(embedder, "name_index", context.log.warning)
    stats = []

    def embed(texts: list[str]):
        matrix, counted = embed_texts(
            texts, embedder, cache, ProgressLog(context.log.info, "embedding item names")
        )
        stats.append(counted)
        return matrix

    options = parse_options(Settings.from_environment().styled_letters)
    table = name_table(
        wikidata_formulae, embed, spoken_forms(opt_graphs, wikidata_formulae, options)
    )
    table = with_model(
        with_expected_dimension(table, embedder.dimension),
        embedder.spec.name,
        embedder.spec.identity,
    )
    quality = name_quality(NameIndex(table), table.column("label").to_pylist())["label"]
    aliases = (
        wikidata_formulae.column("aliases").to_pylist()
        if "aliases" in wikidata_formulae.column_names
        else []
    )
    return dg.Output(
        table,
        data_version=dg.DataVersion(table_content_hash(table)),
        metadata={
            "items": table.num_rows,
            "with_aliases": sum(1 for a in aliases if a),
            "with_other_names": sum(1 for n in table.column("names").to_pylist() if len(n) > 1),
            "with_spoken_formula": sum(1 for s in table.column("spoken").to_pylist() if s),
            "model": embedder.spec.name,
            "model_identity": embedder.spec.identity,
            "newly_embedded": stats[0].embedded if stats else 0,
            "label_as_typed_success_at_1": quality["same_formula_success_at_1"],
            "label_as_typed": dg.MetadataValue.json(quality),
            "preview": preview(table, ["qid", "names", "description"]),
        },
    )


name_index_valid = vectors_valid_check(name_index, "model's")
