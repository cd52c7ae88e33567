"""`wikidata_formulae`: formula items from Wikidata (snapshot, SPARQL or dump), and their checks."""

import time
from collections import Counter

import dagster as dg
import pyarrow as pa
from pydantic import Field

from formula_assets.core.hashing import table_content_hash
from formula_assets.core.settings import Settings
from formula_assets.defs.checks import check_result, schema_contract
from formula_assets.defs.history import last_count
from formula_assets.defs.metadata import preview
from formula_assets.defs.publication import settle
from formula_assets.defs.resources.wikidata import WikidataResource
from formula_assets.ingest import sources
from formula_assets.ingest.checks import (
    has_concepts,
    mathml_present,
    row_count_floor,
    shrinkage_problem,
    unique_qids,
)
from formula_assets.ingest.records import VOLATILE_COLUMNS, records_to_table


class WikidataFormulaeConfig(dg.Config):
    source: str | None = Field(
        default=None,
        description="snapshot | sparql | dump. Default: FORMULA_ASSETS_SOURCE, else snapshot.",
    )
    sample: int | None = Field(
        default=None,
        description="Keep a stable subset of this many items (demos, fast checks). "
        "Default: FORMULA_ASSETS_SAMPLE, else all.",
    )
    force: bool = Field(
        default=False,
        description="Accept an empty or drastically smaller pull (see min_fraction).",
    )
    min_fraction: float | None = Field(
        default=None,
        description="Refuse pulls below this share of the last good row count. "
        "Default: FORMULA_ASSETS_MIN_FRACTION, else 0.5.",
    )


@dg.asset(
    group_name="ingest",
    deps=["wikidata_probe"],
    kinds={"python", "parquet"},
    tags={"source": "wikidata"},
)
def wikidata_formulae(
    context: dg.AssetExecutionContext,
    config: WikidataFormulaeConfig,
    wikidata: WikidataResource,
) -> dg.Output[pa.Table]:
    """Wikidata items with a defining formula (P2534) and the concepts their symbols stand for."""
    settings = wikidata.settings().with_config(
        source=config.source, sample=config.sample, min_fraction=config.min_fraction
    )
    source = settings.source
    context.log.info(f"reading formula items from the {source} source")
    started = time.perf_counter()
    pulled = sources.load_records(
        source,
        sparql_config=wikidata.sparql_config(settings) if source == "sparql" else None,
        dump_path=settings.dump_path,
        accept_partial_dump=settings.accept_partial_dump,
        log=context.log.info,
    )
    for note in pulled.notes:
        context.log.warning(f"{source} source: {note}")
    rows = pulled.records
    size = settings.sample
    if size is not None and size < len(rows):
        context.log.info(f"keeping a stable sample of {size:,} of {len(rows):,} items")
        rows = sources.sample_records(rows, size)
    last = last_count(context.instance, context.asset_key, "dagster/row_count")
    if last is not None and size is not None:
        last = min(last, size)
    problem = shrinkage_problem(len(rows), last, settings.min_fraction)
    if problem and not config.force:
        raise dg.Failure(
            f"refusing to replace the last good wikidata_formulae: {problem}. The stored data is "
            "unchanged; if the source really shrank, run again with config `force: true`."
        )
    if problem:
        context.log.warning(f"forced: {problem}")
    table = records_to_table(rows)
    notes = Counter(n.split(":")[0] for r in rows for n in r.notes)
    return dg.Output(
        table,
        data_version=dg.DataVersion(table_content_hash(table, VOLATILE_COLUMNS)),
        metadata={
            "source": source,
            "items": table.num_rows,
            "sample": size if size is not None else "all",
            "concept_links": sum(len(r.concepts) for r in rows),
            "repeated_concepts": sum(r.repeated_concepts for r in rows),
            "with_other_formulae": sum(bool(r.other_formulae) for r in rows),
            "with_paper_fold": sum(r.paper_fold is not None for r in rows),
            "items_with_notes": sum(bool(r.notes) for r in rows),
            "note_kinds": dg.MetadataValue.json(dict(notes.most_common(20))),
            "source_notes": dg.MetadataValue.json(pulled.notes),
            "seconds": round(time.perf_counter() - started, 2),
            "preview": preview(table, ["qid", "label", "description", "concepts", "paper_fold"]),
        },
    )


@dg.asset_check(asset=wikidata_formulae, blocking=True)
def wikidata_formulae_unique_qid(wikidata_formulae: pa.Table) -> dg.AssetCheckResult:
    """Every item appears once: downstream joins rely on it."""
    return settle(check_result(unique_qids(wikidata_formulae)))


@dg.asset_check(asset=wikidata_formulae)
def wikidata_formulae_mathml_present(wikidata_formulae: pa.Table) -> dg.AssetCheckResult:
    """Every item carries a MathML formula (those without one are rejected by the parser)."""
    return settle(check_result(mathml_present(wikidata_formulae)))


@dg.asset_check(asset=wikidata_formulae)
def wikidata_formulae_has_concepts(wikidata_formulae: pa.Table) -> dg.AssetCheckResult:
    """Items without linked concepts only have their own label and description as semantics."""
    return settle(check_result(has_concepts(wikidata_formulae), dg.AssetCheckSeverity.WARN))


@dg.asset_check(asset=wikidata_formulae, blocking=True)
def wikidata_formulae_row_count(wikidata_formulae: pa.Table) -> dg.AssetCheckResult:
    """A pull far below the expected size is broken; FORMULA_ASSETS_MIN_FORMULAE sets the floor."""
    floor = Settings.from_environment().min_formulae
    return settle(check_result(row_count_floor(wikidata_formulae, floor)))


wikidata_formulae_schema = schema_contract([wikidata_formulae])
