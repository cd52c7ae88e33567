"""Domain check outcomes → Dagster check results, and the checks every table contract gets.

Outside every code version (see `core.versioning`): a check judges data, it never makes it.
"""

from __future__ import annotations

from collections.abc import Sequence

import dagster as dg
import pyarrow as pa

from formula_assets.core.checks import Outcome, vectors_valid
from formula_assets.defs.publication import settle


def check_result(
    outcome: Outcome,
    severity: dg.AssetCheckSeverity = dg.AssetCheckSeverity.ERROR,
    **keys: object,
) -> dg.AssetCheckResult:
    """The Dagster result of a domain outcome. A check returns it through
    `defs.publication.settle`, which lets a table it gates be published."""
    metadata = {"summary": outcome.description}
    for key, value in outcome.metadata.items():
        metadata[key] = ", ".join(map(str, value)) if isinstance(value, list) else value
    return dg.AssetCheckResult(
        passed=outcome.passed,
        severity=severity,
        description=outcome.description,
        metadata=metadata,
        **keys,  # type: ignore[arg-type]
    )


def schema_contract(
    assets: Sequence[dg.AssetsDefinition | dg.AssetKey | str],
) -> Sequence[dg.AssetChecksDefinition]:
    """A warning when a table's columns or types differ from its previous materialization:
    the Parquet columns are what users and downstream code depend on."""
    return dg.build_column_schema_change_checks(
        assets=list(assets), severity=dg.AssetCheckSeverity.WARN
    )


def vectors_valid_check(asset: dg.AssetsDefinition, width: str) -> dg.AssetChecksDefinition:
    """The blocking `<asset>_valid` check of an embedding table (`core.checks.vectors_valid`):
    one definition for every vector asset, declared beside the asset it judges; `width` says
    where the expected width comes from (the model, the config)."""
    name = asset.key.to_python_identifier()

    @dg.asset_check(
        asset=asset,
        name=f"{name}_valid",
        blocking=True,
        description=f"Finite vectors of the {width} width, none all-zero.",
    )
    def valid(vectors: pa.Table) -> dg.AssetCheckResult:
        return settle(check_result(vectors_valid(vectors)))

    return valid
