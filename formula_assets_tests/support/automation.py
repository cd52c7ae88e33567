"""A small real code location: the probe, the pull, the parse and the annotations of the
project, with its automation sensor and weekly schedule, against a SPARQL endpoint; and how a
test observes the probe and reads what the sensor requests."""

from pathlib import Path

import dagster as dg

from formula_assets.defs.automation import automation_sensor, weekly_probe_schedule
from formula_assets.defs.conventions import with_conventions
from formula_assets.defs.ingest.wikidata_formulae import wikidata_formulae
from formula_assets.defs.ingest.wikidata_probe import wikidata_probe
from formula_assets.defs.io_managers import DataLakeIOManager
from formula_assets.defs.resources.wikidata import WikidataResource
from formula_assets.defs.semantics.concept_annotations import concept_annotations
from formula_assets.defs.syntax.opt_graphs import parse_formulae


def definitions(lake: Path, endpoint: str, source: str = "sparql") -> dg.Definitions:
    defs = dg.Definitions(
        assets=[wikidata_probe, wikidata_formulae, parse_formulae, concept_annotations],
        schedules=[weekly_probe_schedule(wikidata_probe)],
        sensors=[automation_sensor()],
        resources={
            "io_manager": DataLakeIOManager(base_path=str(lake)),
            "wikidata": WikidataResource(source=source, sparql_endpoint=endpoint, max_retries=0),
        },
    )
    return with_conventions(defs)


def observe(defs: dg.Definitions, instance: dg.DagsterInstance) -> str:
    result = defs.resolve_job_def("observe_wikidata").execute_in_process(instance=instance)
    assert result.success
    record = instance.fetch_observations(dg.AssetKey("wikidata_probe"), limit=1).records[0]
    return record.asset_observation.data_version


KEYS = ("wikidata_formulae", "opt_graphs", "rejected_formulae", "concept_annotations")


def requested(result: dg.EvaluateAutomationConditionsResult) -> set[str]:
    return {key for key in KEYS if result.get_num_requested(dg.AssetKey(key))}


def materialize(defs: dg.Definitions, instance: dg.DagsterInstance, keys: set[str]) -> None:
    assets = [a for a in defs.assets or [] if isinstance(a, dg.AssetsDefinition)]
    result = dg.materialize(
        assets,
        selection=sorted(keys),
        instance=instance,
        resources=defs.resources,
    )
    assert result.success
