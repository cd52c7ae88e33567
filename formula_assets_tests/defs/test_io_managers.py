"""The data lake IO manager: Parquet via UPath on local disk and on a non-local filesystem."""

import uuid
from pathlib import Path

import dagster as dg
import pandas as pd
import pyarrow as pa
import pytest
from upath import UPath

from formula_assets.core import lake
from formula_assets.defs.io_managers import DataLakeIOManager

TABLE = pa.table({"qid": ["Q1", "Q2", "Q3"], "values": [[1.0, 2.0], [3.0], []]})


@dg.asset
def numbers() -> pa.Table:
    return TABLE


@dg.asset
def doubled_rows(numbers: pd.DataFrame) -> pd.DataFrame:
    return pd.concat([numbers, numbers], ignore_index=True)


@dg.asset
def as_arrow(numbers: pa.Table) -> pa.Table:
    assert isinstance(numbers, pa.Table)
    return numbers.slice(0, 1)


@dg.asset(partitions_def=dg.StaticPartitionsDefinition(["1", "2"]))
def per_fold(context: dg.AssetExecutionContext) -> pa.Table:
    return pa.table({"fold": [int(context.partition_key)]})


def materialize(base: str, *assets, partition: str | None = None) -> dg.ExecuteInProcessResult:
    result = dg.materialize(
        [numbers, doubled_rows, as_arrow, per_fold] if not assets else list(assets),
        resources={"io_manager": DataLakeIOManager(base_path=base)},
        partition_key=partition,
    )
    assert result.success
    return result


def test_local_lake_is_plain_parquet(tmp_path: Path) -> None:
    result = materialize(str(tmp_path), numbers, doubled_rows, as_arrow)
    assert pd.read_parquet(tmp_path / "numbers.parquet")["qid"].tolist() == ["Q1", "Q2", "Q3"]
    assert len(pd.read_parquet(tmp_path / "doubled_rows.parquet")) == 6
    assert pd.read_parquet(tmp_path / "as_arrow.parquet")["qid"].tolist() == ["Q1"]
    metadata = result.asset_materializations_for_node("numbers")[0].metadata
    assert metadata["dagster/row_count"].value == 3
    assert [c.name for c in metadata["dagster/column_schema"].schema.columns] == ["qid", "values"]
    assert not [p for p in tmp_path.iterdir() if lake.TMP_MARKER in p.name]


def test_memory_filesystem_base_path() -> None:
    base = f"memory://lake-{uuid.uuid4().hex}"
    materialize(base, numbers, doubled_rows)
    stored = UPath(base) / "doubled_rows.parquet"
    assert stored.exists()
    assert lake.read_parquet(stored).num_rows == 6
    assert not [p for p in UPath(base).iterdir() if lake.TMP_MARKER in p.name]


def test_partitions_get_their_own_files(tmp_path: Path) -> None:
    for key in ("1", "2"):
        materialize(str(tmp_path), per_fold, partition=key)
    assert sorted(p.name for p in (tmp_path / "per_fold").iterdir()) == ["1.parquet", "2.parquet"]
    assert pd.read_parquet(tmp_path / "per_fold" / "2.parquet")["fold"].tolist() == [2]


def test_failed_write_keeps_the_previous_file(tmp_path: Path) -> None:
    target = UPath(tmp_path) / "asset.parquet"
    lake.write_parquet_atomic(TABLE, target)
    with pytest.raises((TypeError, AttributeError, pa.ArrowException)):
        lake.write_parquet_atomic("not a table", target)  # type: ignore[arg-type]
    assert lake.read_parquet(target).equals(TABLE)
    assert [p.name for p in tmp_path.iterdir()] == ["asset.parquet"]


def test_non_table_output_is_a_clear_error(tmp_path: Path) -> None:
    @dg.asset
    def not_a_table() -> dict:
        return {"a": 1}

    result = dg.materialize(
        [not_a_table],
        resources={"io_manager": DataLakeIOManager(base_path=str(tmp_path))},
        raise_on_error=False,
    )
    assert not result.success
    failure = result.get_step_failure_events()[0].step_failure_data.error
    assert "the data lake stores tables" in str(failure)
    assert list(tmp_path.iterdir()) == []
