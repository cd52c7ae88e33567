"""The code location: every asset, check and resource of the project."""

import warnings

import dagster as dg

from formula_assets.defs.ingest import ingest_checks, wikidata_formulae
from formula_assets.defs.io_managers import DataLakeIOManager
from formula_assets.defs.resources import WikidataResource
from formula_assets.defs.syntax import parse_formulae, syntax_checks

# Content-hash data versions are the point of this project; the beta notice is noise in run logs.
warnings.filterwarnings("ignore", category=dg.BetaWarning)

defs = dg.Definitions(
    assets=[wikidata_formulae, parse_formulae],
    asset_checks=[*ingest_checks, *syntax_checks],
    resources={
        "io_manager": DataLakeIOManager(),
        "wikidata": WikidataResource(),
    },
)
