"""The data lake IO manager: Parquet through UPath, so any fsspec URL can hold the lake.

A table that blocking checks of the same run gate is staged, not published: readers of the
documented path (search, the report, notebooks, later runs) keep the last good version until
those checks pass (`defs.publication`, `core.staging`). Steps of the run that made a staged
version (its checks) read that version. Each table names the run that wrote it, and after a
step the asset's latest materialization is made the published table's (`defs.publication`).
"""

from __future__ import annotations

from typing import Any

import dagster as dg
import pandas as pd
import pyarrow as pa
from pydantic import Field
from upath import UPath

from formula_assets.core import lake, settings, staging
from formula_assets.defs import publication
from formula_assets.defs.dagster_internals import escape_partition
from formula_assets.defs.metadata import table_schema


class ParquetUPathIOManager(dg.UPathIOManager):
    """Tables in, Parquet out: `<base>/<asset>.parquet`, partitions as `<asset>/<key>.parquet`;
    versions awaiting their blocking checks under `<base>/_staged/`."""

    extension = ".parquet"

    def make_safe_partition_path(self, base_path: UPath, partition: str) -> UPath:
        return super().make_safe_partition_path(base_path, escape_partition(partition))

    def dump_to_path(self, context: dg.OutputContext, obj: Any, path: UPath) -> None:
        table = publication.stamp(context, as_arrow(obj))
        checks = publication.gating_checks(context)
        publication.sweep(context, self._base_path, path)
        if not checks:
            lake.write_parquet_atomic(table, path)
            return
        version = staging.staged_version(self._base_path, path, context.run_id)
        staging.stage(version, table, checks)
        publication.hold(context, version)
        context.log.info(
            f"staged at {version.table}; published at {path} once {', '.join(checks)} pass"
        )

    def load_from_path(self, context: dg.InputContext, path: UPath) -> pa.Table | pd.DataFrame:
        table = self._staged_input(context, path)
        if table is None:
            try:
                table = lake.read_parquet(path)
            except FileNotFoundError:
                raise publication.unpublished(context, self._base_path, path) from None
        wanted = context.dagster_type.typing_type if context.dagster_type else None
        return table if wanted is pa.Table else table.to_pandas()

    def _staged_input(self, context: dg.InputContext, path: UPath) -> pa.Table | None:
        """The version of the run that made this input while it awaits its checks."""
        run_id = publication.source_run(context)
        if run_id is None:
            return None
        version = staging.staged_version(self._base_path, path, run_id)
        table = staging.read_staged(version)
        if table is None:
            publication.release(context, version)
        else:
            publication.hold(context, version)
            context.log.info(f"reading the staged version {version.table}")
        return table

    def get_metadata(self, context: dg.OutputContext, obj: Any) -> dict[str, Any]:
        table = as_arrow(obj)
        return {
            "dagster/row_count": dg.MetadataValue.int(table.num_rows),
            "dagster/column_schema": table_schema(table.schema),
        }


def as_arrow(obj: Any) -> pa.Table:
    if isinstance(obj, pa.Table):
        return obj
    if isinstance(obj, pd.DataFrame):
        return pa.Table.from_pandas(obj, preserve_index=False)
    raise TypeError(
        f"the data lake stores tables (pyarrow.Table or pandas.DataFrame), got {type(obj).__name__}"
    )


class DataLakeIOManager(dg.ConfigurableIOManagerFactory):
    """Root of the data lake; defaults to FORMULA_ASSETS_DATA_LAKE or the project's data_lake/."""

    base_path: str | None = Field(
        default=None,
        description="Any fsspec URL or local path (e.g. s3://bucket/lake, memory://lake).",
    )

    def create_io_manager(self, context: dg.InitResourceContext) -> ParquetUPathIOManager:
        return ParquetUPathIOManager(base_path=UPath(self.base_path or settings.data_lake_url()))

    def teardown_after_execution(self, context: dg.InitResourceContext) -> None:
        publication.record_published(context)


class ModelUPathIOManager(dg.UPathIOManager):
    """Trained models as versioned folders: `<base>/fold_models/<fold>/<method>/`."""

    extension = ""

    def make_safe_partition_path(self, base_path: UPath, partition: str) -> UPath:
        return super().make_safe_partition_path(base_path, escape_partition(partition))

    def dump_to_path(self, context: dg.OutputContext, obj: Any, path: UPath) -> None:
        from formula_assets.training.artifacts import TrainedModel, save_model

        if not isinstance(obj, TrainedModel):
            raise TypeError(f"the model store keeps TrainedModel objects, got {type(obj).__name__}")
        save_model(obj, path)

    def load_from_path(self, context: dg.InputContext, path: UPath) -> Any:
        from formula_assets.training.artifacts import load_model

        return load_model(path)

    def path_exists(self, path: UPath) -> bool:
        from formula_assets.training.artifacts import POINTER

        return (path / POINTER).exists()


class ModelIOManager(dg.ConfigurableIOManagerFactory):
    """Where trained models live; the same root as the data lake unless set."""

    base_path: str | None = Field(default=None, description="Any fsspec URL or local path.")

    def create_io_manager(self, context: dg.InitResourceContext) -> ModelUPathIOManager:
        return ModelUPathIOManager(base_path=UPath(self.base_path or settings.data_lake_url()))
