"""Group `ingest`: formula items from Wikidata (snapshot, SPARQL or dump)."""

import time
from collections import Counter

import dagster as dg
import pyarrow as pa
from pydantic import Field

from formula_assets import settings
from formula_assets.defs.automation import AUTOMATION
from formula_assets.defs.metadata import preview
from formula_assets.defs.outcomes import check_result
from formula_assets.defs.resources import WikidataResource
from formula_assets.hashing import table_content_hash
from formula_assets.quality import (
    has_concepts,
    mathml_present,
    row_count_floor,
    shrinkage_problem,
    unique_qids,
)
from formula_assets.versioning import code_version
from formula_assets.wikidata import dump, probe, records, snapshot, sources, sparql
from formula_assets.wikidata.records import VOLATILE_COLUMNS, records_to_table

INGEST_VERSION = code_version(records, snapshot, sparql, dump, sources, snapshot.snapshot_path())


@dg.observable_source_asset(
    group_name="ingest",
    required_resource_keys={"wikidata"},
    description="A cheap fingerprint of the formula source (for SPARQL: the number of items "
    "with a defining formula and their latest modification); a new value means new data.",
    tags={"source": "wikidata"},
)
def wikidata_probe(context) -> dg.ObserveResult:
    wikidata: WikidataResource = context.resources.wikidata
    source = settings.source(wikidata.source)
    found = probe.fingerprint(
        source,
        sparql_config=wikidata.sparql_config() if source == "sparql" else None,
        dump_path=wikidata.dump_path,
    )
    items = found.metadata.get("items")
    if isinstance(items, int):
        last = _last_count(context, context.asset_key, "items")
        problem = shrinkage_problem(items, last, settings.min_fraction())
        if problem:
            raise dg.Failure(
                f"the change probe looks wrong, keeping the last fingerprint: {problem}"
            )
    context.log.info(f"wikidata_probe: {found.version}")
    return dg.ObserveResult(data_version=dg.DataVersion(found.version), metadata=found.metadata)


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


def _last_count(context, key: dg.AssetKey, name: str) -> int | None:
    """A count recorded by the last successful materialization or observation of `key`."""
    event = context.instance.get_latest_materialization_event(key)
    record = event.asset_materialization if event else None
    if record is None:
        observations = context.instance.fetch_observations(key, limit=1).records
        record = observations[0].asset_observation if observations else None
    if record is None or name not in record.metadata:
        return None
    value = record.metadata[name].value
    return int(value) if isinstance(value, int | float) else None


@dg.asset(
    group_name="ingest",
    deps=[wikidata_probe],
    automation_condition=AUTOMATION,
    code_version=INGEST_VERSION,
    kinds={"python", "parquet"},
    owners=["team:formula-assets"],
    tags={"source": "wikidata"},
)
def wikidata_formulae(
    context: dg.AssetExecutionContext,
    config: WikidataFormulaeConfig,
    wikidata: WikidataResource,
) -> dg.Output[pa.Table]:
    """Wikidata items with a defining formula (P2534) and the concepts their symbols stand for."""
    source = settings.source(config.source or wikidata.source)
    context.log.info(f"reading formula items from the {source} source")
    started = time.perf_counter()
    rows = sources.load_records(
        source,
        sparql_config=wikidata.sparql_config() if source == "sparql" else None,
        dump_path=wikidata.dump_path,
        log=context.log.info,
    )
    size = settings.sample(config.sample)
    if size is not None and size < len(rows):
        context.log.info(f"keeping a stable sample of {size:,} of {len(rows):,} items")
        rows = sources.sample_records(rows, size)
    last = _last_count(context, context.asset_key, "dagster/row_count")
    if last is not None and size is not None:
        last = min(last, size)
    problem = shrinkage_problem(len(rows), last, settings.min_fraction(config.min_fraction))
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
            "with_paper_fold": sum(r.paper_fold is not None for r in rows),
            "items_with_notes": sum(bool(r.notes) for r in rows),
            "note_kinds": dg.MetadataValue.json(dict(notes.most_common(20))),
            "seconds": round(time.perf_counter() - started, 2),
            "preview": preview(table, ["qid", "label", "description", "concepts", "paper_fold"]),
        },
    )


@dg.asset_check(asset=wikidata_formulae, blocking=True)
def wikidata_formulae_unique_qid(wikidata_formulae: pa.Table) -> dg.AssetCheckResult:
    """Every item appears once: downstream joins rely on it."""
    return check_result(unique_qids(wikidata_formulae))


@dg.asset_check(asset=wikidata_formulae)
def wikidata_formulae_mathml_present(wikidata_formulae: pa.Table) -> dg.AssetCheckResult:
    """Every item carries a MathML formula (those without one are rejected by the parser)."""
    return check_result(mathml_present(wikidata_formulae))


@dg.asset_check(asset=wikidata_formulae)
def wikidata_formulae_has_concepts(wikidata_formulae: pa.Table) -> dg.AssetCheckResult:
    """Items without linked concepts only have their own label and description as semantics."""
    return check_result(has_concepts(wikidata_formulae), dg.AssetCheckSeverity.WARN)


@dg.asset_check(asset=wikidata_formulae, blocking=True)
def wikidata_formulae_row_count(wikidata_formulae: pa.Table) -> dg.AssetCheckResult:
    """A pull far below the expected size is broken; FORMULA_ASSETS_MIN_FORMULAE sets the floor."""
    return check_result(row_count_floor(wikidata_formulae, settings.min_formulae()))


ingest_checks = [
    wikidata_formulae_unique_qid,
    wikidata_formulae_mathml_present,
    wikidata_formulae_has_concepts,
    wikidata_formulae_row_count,
]
