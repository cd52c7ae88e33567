"""The data lake IO manager: Parquet through UPath, so any fsspec URL can hold the lake.

A table that blocking checks of the same run gate is staged, not published: readers of the
documented path (search, the report, notebooks, later runs) keep the last good version until
those checks pass (`defs.publication`, `core.staging`, docs/publication.md). Steps of the run
that made a staged version (its checks) read that version. Each table names the run that
wrote it, and after the steps the asset's latest materialization is made the published
table's.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import dagster as dg
import pandas as pd
import pyarrow as pa
from pydantic import Field
from upath import UPath

from formula_assets.core import lake
from formula_assets.core.settings import Settings
from formula_assets.defs.dagster_internals import escape_partition
from formula_assets.defs.metadata import covers_of_definition, table_schema
from formula_assets.defs.publication import Publication, stamp, sweep, unpublished


class LakeUPathIOManager(dg.UPathIOManager):
    """Partitions as paths below the asset's folder, never above it."""

    def make_safe_partition_path(self, base_path: UPath, partition: str) -> UPath:
        return super().make_safe_partition_path(base_path, escape_partition(partition))

    def get_metadata(self, context: dg.OutputContext, obj: Any) -> dict[str, Any]:
        """Each materialization records what its code version covered."""
        return covers_of_definition(context.definition_metadata or {})


class ParquetUPathIOManager(LakeUPathIOManager):
    """Tables in, Parquet out: `<base>/<asset>.parquet`, partitions as `<asset>/<key>.parquet`;
    versions awaiting their blocking checks under `<base>/_staged/`, held by `publication`."""

    extension = ".parquet"

    def __init__(self, base_path: UPath, publication: Publication | None = None) -> None:
        super().__init__(base_path=base_path)
        self.publication = publication or Publication()

    def dump_to_path(self, context: dg.OutputContext, obj: Any, path: UPath) -> None:
        table = stamp(context, as_arrow(obj))
        sweep(context, self._base_path, path)
        if self.publication.stage(context, self._base_path, path, table) is None:
            lake.write_parquet_atomic(table, path)

    def load_from_path(self, context: dg.InputContext, path: UPath) -> pa.Table | pd.DataFrame:
        table = self.publication.read_staged(context, self._base_path, path)
        if table is None:
            try:
                table = lake.read_parquet(path)
            except FileNotFoundError:
                raise unpublished(context, self._base_path, path) from None
        wanted = context.dagster_type.typing_type if context.dagster_type else None
        return table if wanted is pa.Table else table.to_pandas()

    def get_metadata(self, context: dg.OutputContext, obj: Any) -> dict[str, Any]:
        table = as_arrow(obj)
        return {
            **super().get_metadata(context, obj),
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
        root = self.base_path or Settings.from_environment().data_lake
        return ParquetUPathIOManager(base_path=UPath(root))

    @contextlib.contextmanager
    def yield_for_execution(
        self, context: dg.InitResourceContext
    ) -> Iterator[ParquetUPathIOManager]:
        """The IO manager for a run (or a step process); once its steps are done, the
        materializations its checks settled are recorded again where the published table
        came from another run (`Publication.record_published`)."""
        manager = self.create_io_manager(context)
        try:
            yield manager
        finally:
            manager.publication.record_published(context)


class ModelUPathIOManager(LakeUPathIOManager):
    """Trained models as versioned folders: `<base>/fold_models/<fold>/<method>/`."""

    extension = ""

    def __init__(self, base_path: UPath) -> None:
        super().__init__(base_path=base_path)
        self.root = base_path

    def model_directory(self, fold: int, method: str) -> UPath:
        """Where one partition's models are stored: what `fold_models` may reuse."""
        from formula_assets.training.artifacts import model_directory

        return model_directory(self.root, fold, method)

    def dump_to_path(self, context: dg.OutputContext, obj: Any, path: UPath) -> None:
        from formula_assets.training.artifacts import TrainedModel, save_model

        if not isinstance(obj, TrainedModel):
            raise TypeError(f"the model store keeps TrainedModel objects, got {type(obj).__name__}")
        save_model(obj, path)

    def load_from_path(self, context: dg.InputContext, path: UPath) -> Any:
        """The stored model, its settings as the class of the method it names."""
        from formula_assets.methods import registry
        from formula_assets.training.artifacts import stored_method

        return registry.trained_method(stored_method(path)).read_model(path)

    def path_exists(self, path: UPath) -> bool:
        from formula_assets.training.artifacts import POINTER

        return (path / POINTER).exists()


class ModelIOManager(dg.ConfigurableIOManagerFactory):
    """Where trained models live; the same root as the data lake unless set."""

    base_path: str | None = Field(default=None, description="Any fsspec URL or local path.")

    def create_io_manager(self, context: dg.InitResourceContext) -> ModelUPathIOManager:
        root = self.base_path or Settings.from_environment().data_lake
        return ModelUPathIOManager(base_path=UPath(root))
