"""Side files of the data lake (figures, reports), written atomically."""

from __future__ import annotations

import dagster as dg
from pydantic import Field
from upath import UPath

from formula_assets.core import lake
from formula_assets.core.settings import Settings


class DataLakeResource(dg.ConfigurableResource):
    """Side files of the data lake (figures, caches, models); tables go through the IO manager."""

    base_path: str | None = Field(
        default=None, description="Data lake root; default FORMULA_ASSETS_DATA_LAKE or data_lake/."
    )

    def root(self) -> UPath:
        return UPath(self.base_path or Settings.from_environment().data_lake)

    def path(self, *parts: str) -> UPath:
        return self.root().joinpath(*parts)

    def write_bytes(self, data: bytes, *parts: str) -> UPath:
        target = self.path(*parts)
        lake.write_bytes_atomic(data, target)
        return target
