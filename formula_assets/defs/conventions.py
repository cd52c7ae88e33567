"""What every asset of the project shares, set once, when the definitions load
(`definitions.py`), instead of on each asset:

- its owners (`OWNERS`);
- its code version: the hash of the import closure of the module that defines it
  (`core.versioning`), so an edit changes exactly the assets that run the edited code; and
  in its metadata what that version covers, part by part (`formula-assets stale --explain`);
- its automation condition (`defs.automation.AUTOMATION`: new data flows down on its own).

An asset module declares only what is its own (group, kinds, partitions, pool, …); an asset
that declares owners, a code version or an automation condition keeps its own. Observable
sources (`sentence_model`, `wikidata_probe`) are observed, not materialized: they keep what
they declare, as do assets defined outside the package (test fixtures). Definitions built by
hand from the asset modules (tests) get the same settings through `with_conventions`.
"""

from __future__ import annotations

import dagster as dg

from formula_assets.core import versioning
from formula_assets.defs import dagster_internals as internals
from formula_assets.defs import metadata
from formula_assets.defs.automation import AUTOMATION

OWNERS = ("team:formula-assets",)


def with_conventions(defs: dg.Definitions) -> dg.Definitions:
    """`defs` with every materializable asset of the package given its owners, code version
    and automation condition, unless it declares its own."""
    modules = {
        key: module
        for assets_def in defs.assets or ()
        if isinstance(assets_def, dg.AssetsDefinition) and assets_def.is_materializable
        if (module := internals.defining_module(assets_def)).split(".")[0] == versioning.PACKAGE
        for key in assets_def.keys
    }
    parts = {module: versioning.parts(module) for module in set(modules.values())}

    def apply(spec: dg.AssetSpec) -> dg.AssetSpec:
        module = modules.get(spec.key)
        if module is None:
            return spec
        if spec.code_version:
            return spec.replace_attributes(
                owners=spec.owners or list(OWNERS),
                automation_condition=spec.automation_condition or AUTOMATION,
            )
        return spec.replace_attributes(
            owners=spec.owners or list(OWNERS),
            code_version=versioning.version_of(parts[module]),
            automation_condition=spec.automation_condition or AUTOMATION,
            metadata={**spec.metadata, **metadata.code_covers(versioning.covers(parts[module]))},
        )

    return internals.map_asset_specs(defs, apply)
