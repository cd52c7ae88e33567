"""What every asset of the project shares, set once, when the definitions load
(`definitions.py`), instead of on each asset:

- its owners (`OWNERS`);
- its code version: the hash of the import closure of the module that defines it
  (`core.versioning`), so an edit changes exactly the assets that run the edited code;
- its automation condition (`defs.automation.AUTOMATION`: new data flows down on its own).

An asset module declares only what is its own (group, kinds, partitions, pool, …); an asset
that declares owners, a code version or an automation condition keeps its own. Observable
sources (`sentence_model`, `wikidata_probe`) are observed, not materialized: they keep what
they declare, as do assets defined outside the package (test fixtures). Definitions built by
hand from the asset modules (tests) get the same settings through `with_conventions`.
"""

from __future__ import annotations

import dagster as dg

from formula_assets.core.versioning import PACKAGE, code_version
from formula_assets.defs import dagster_internals as internals
from formula_assets.defs.automation import AUTOMATION

OWNERS = ("team:formula-assets",)


def with_conventions(defs: dg.Definitions) -> dg.Definitions:
    """`defs` with every materializable asset of the package given its owners, code version
    and automation condition, unless it declares its own."""
    modules = {
        key: module
        for assets_def in defs.assets or ()
        if isinstance(assets_def, dg.AssetsDefinition) and assets_def.is_materializable
        if (module := internals.defining_module(assets_def)).split(".")[0] == PACKAGE
        for key in assets_def.keys
    }

    def apply(spec: dg.AssetSpec) -> dg.AssetSpec:
        module = modules.get(spec.key)
        if module is None:
            return spec
        return spec.replace_attributes(
            owners=spec.owners or list(OWNERS),
            code_version=spec.code_version or code_version(module),
            automation_condition=spec.automation_condition or AUTOMATION,
        )

    return internals.map_asset_specs(defs, apply)
