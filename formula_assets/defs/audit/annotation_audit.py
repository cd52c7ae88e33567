"""`annotation_audit`: the formula annotations the held-out models find least plausible, and
the concepts they may lack, for Wikidata editors (docs/audit.md)."""

from collections import Counter

import dagster as dg
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from formula_assets.core.arrow import recorded_aggregation, recorded_identity, recorded_model
from formula_assets.core.hashing import table_content_hash
from formula_assets.core.settings import Settings
from formula_assets.core.threads import one_thread
from formula_assets.defs.checks import check_result, schema_contract
from formula_assets.defs.metadata import annotation_audit_top
from formula_assets.defs.publication import settle
from formula_assets.defs.resources.sentence_embedder import SentenceEmbedderResource


@dg.asset(group_name="audit", kinds={"python", "parquet"})
def annotation_audit(
    context: dg.AssetExecutionContext,
    sentence_embedder: SentenceEmbedderResource,
    wikidata_formulae: pa.Table,
    cv_folds: pa.Table,
    semantic_embeddings: pa.Table,
    search_index: pa.Table,
    structure_index: pa.Table,
    fold_models: dict,
):
    """One row per formula item: its leads for editors (an unannotated quantity with the
    concept it likely denotes, exchanged or doubted symbols, a symbol the formula does not
    write), read on the structure index with the item's own annotations hidden; and its
    scores by the fold models that never trained on it (its annotation's rank among all
    items', how well each concept fits its formula, the concepts it may lack). Strongest
    lead first."""
    from formula_assets.audit.concepts import ConceptSense, corpus_texts, vocabulary
    from formula_assets.audit.leads import LeadFinder
    from formula_assets.audit.table import build_audit, loaded_models
    from formula_assets.search.catalogue import Catalogue
    from formula_assets.search.structure import StructureIndex
    from formula_assets.semantics.cache import embed_texts
    from formula_assets.syntax.opt import parse_options
    from formula_assets.training.sentence_encoder import frozen_store

    formulae = wikidata_formulae.to_pylist()
    embedder = sentence_embedder.embedder(recorded_model(semantic_embeddings))
    recorded = recorded_identity(semantic_embeddings)
    if recorded and embedder.spec.identity != recorded:
        raise dg.Failure(
            f"the sentence model's files ({embedder.spec.identity}) are not those that built "
            f"semantic_embeddings ({recorded}): refresh semantic_embeddings first"
        )
    cache = sentence_embedder.cache(embedder, "semantic_embeddings", context.log.warning)
    concepts = vocabulary(formulae)
    texts = corpus_texts(formulae, concepts)
    # the width of the vectors this model made: with every text cached, it is never loaded
    width = semantic_embeddings.column("embedding").type.list_size
    with one_thread():  # the vectors of texts new to the cache, the same in every process
        matrix, stats = embed_texts(texts, embedder, cache, dimension=width)
    context.log.info(f"{stats.embedded:,} texts embedded, {stats.cached:,} from cache")
    vectors = dict(zip(texts, matrix, strict=True))
    aggregation = recorded_aggregation(semantic_embeddings) or "sum"
    # kept for the next audit
    with frozen_store(
        sentence_embedder.frozen_layers_store(), context.log.warning, sentence_embedder.model_dir()
    ):
        table = build_audit(
            formulae,
            search_index,
            dict(zip(cv_folds["qid"].to_pylist(), cv_folds["fold"].to_pylist(), strict=True)),
            loaded_models(list(fold_models.values())),
            vectors,
            aggregation,
            LeadFinder(
                Catalogue.from_tables(wikidata_formulae, structure_index),
                StructureIndex(structure_index),
                parse_options(Settings.from_environment().styled_letters),
                ConceptSense(formulae, concepts, vectors, aggregation),
            ),
        )
    scored = table.filter(table["scored"])
    first = scored["rank_formula_to_annotation"].to_numpy() == 1
    kinds = Counter(
        lead["kind"] for leads in table.column("leads").to_pylist() for lead in leads or ()
    )
    return dg.Output(
        table,
        data_version=dg.DataVersion(table_content_hash(table)),
        metadata={
            "items": table.num_rows,
            "scored": scored.num_rows,
            "items_with_leads": int(pc.sum(pc.greater(table["priority"], 0.0)).as_py() or 0),
            "leads_by_kind": dg.MetadataValue.json(dict(kinds.most_common())),
            "not_scored": table.num_rows - scored.num_rows,
            "own_annotation_first_for_its_formula": int(first.sum()),
            "median_rank_formula_to_annotation": float(
                np.median(scored["rank_formula_to_annotation"].to_numpy())
            )
            if scored.num_rows
            else 0.0,
            "editors_queue": annotation_audit_top(table),
        },
    )


@dg.asset_check(
    asset=annotation_audit, blocking=True, additional_ins={"wikidata_formulae": dg.AssetIn()}
)
def annotation_audit_one_row_per_item(
    annotation_audit: pa.Table, wikidata_formulae: pa.Table
) -> dg.AssetCheckResult:
    """Every formula item has exactly one row, scored or saying why not."""
    from formula_assets.audit.table import one_row_per_item

    return settle(
        check_result(one_row_per_item(annotation_audit, wikidata_formulae["qid"].to_pylist()))
    )


@dg.asset_check(asset=annotation_audit, blocking=True)
def annotation_audit_ranks_in_range(annotation_audit: pa.Table) -> dg.AssetCheckResult:
    """Each scored row's ranks lie within its candidate pool; each unscored row has a reason."""
    from formula_assets.audit.table import ranks_in_range

    return settle(check_result(ranks_in_range(annotation_audit)))


annotation_audit_schema = schema_contract([annotation_audit])
