"""`wikidata_probe`: a cheap fingerprint of the formula source; a new value means new data."""

import dagster as dg

from formula_assets.defs.history import last_count
from formula_assets.defs.resources.wikidata import WikidataResource
from formula_assets.ingest import probe
from formula_assets.ingest.checks import shrinkage_problem


@dg.observable_source_asset(
    group_name="ingest",
    required_resource_keys={"wikidata"},
    description="A cheap fingerprint of the formula source (for SPARQL: one query listing "
    "the formula items and the concepts they link with their modification times, hashed); "
    "a new value means the data may have changed.",
    tags={"source": "wikidata"},
)
def wikidata_probe(context) -> dg.ObserveResult:
    wikidata: WikidataResource = context.resources.wikidata
    settings = wikidata.settings()
    source = settings.source
    found = probe.fingerprint(
        source,
        sparql_config=wikidata.sparql_config(settings) if source == "sparql" else None,
        dump_path=settings.dump_path,
    )
    items = found.metadata.get("items")
    if isinstance(items, int):
        last = last_count(context.instance, context.asset_key, "items")
        problem = shrinkage_problem(items, last, settings.min_fraction)
        if problem:
            raise dg.Failure(
                f"the change probe looks wrong, keeping the last fingerprint: {problem}"
            )
    context.log.info(f"wikidata_probe: {found.version}")
    return dg.ObserveResult(data_version=dg.DataVersion(found.version), metadata=found.metadata)
