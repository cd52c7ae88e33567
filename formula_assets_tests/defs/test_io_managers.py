"""The data lake IO manager: Parquet via UPath on local disk and on a non-local filesystem."""

import uuid
from pathlib import Path

import dagster as dg
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch
from upath import UPath

from formula_assets.core import lake
from formula_assets.defs.io_managers import DataLakeIOManager, ModelIOManager, ModelUPathIOManager
from formula_assets.defs.metadata import code_covers, recorded_covers
from formula_assets.defs.publication import PUBLISHED_RUN_TAG, settle
from formula_assets.training.artifacts import POINTER, TrainedModel, load_model, save_model
from formula_assets_tests.training.descriptions import described

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


def test_each_materialization_records_what_its_code_version_covered(tmp_path: Path) -> None:
    covered = {"module pkg.a": "1a2b", "setting profile": "3c4d"}

    @dg.asset(name="covered", metadata=code_covers(covered))
    def covered_table() -> pa.Table:
        return TABLE

    metadata = (
        materialize(str(tmp_path), covered_table)
        .asset_materializations_for_node("covered")[0]
        .metadata
    )
    assert recorded_covers(metadata) == covered
    plain = materialize(str(tmp_path), numbers).asset_materializations_for_node("numbers")
    assert recorded_covers(plain[0].metadata) is None  # nothing declared, nothing recorded


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


# --- the model store ------------------------------------------------------------------------------

FOLDS = dg.StaticPartitionsDefinition(["1"])


@dg.asset(io_manager_key="models", partitions_def=FOLDS)
def fold_model() -> TrainedModel:
    return TrainedModel(described(), {"w": torch.arange(3, dtype=torch.float32)})


@dg.asset(partitions_def=FOLDS)
def fold_weights(fold_model: TrainedModel) -> pa.Table:
    return pa.table({"w": fold_model.state["w"].tolist(), "method": [fold_model.method] * 3})


def test_the_model_store_names_a_partitions_folder_under_its_own_root(tmp_path: Path) -> None:
    """Where `fold_models` looks for a model its recipe may reuse: the folder it saves to."""
    store = ModelUPathIOManager(base_path=UPath(tmp_path / "models"))
    directory = store.model_directory(2, "sbert_dual_cl")
    assert directory == UPath(tmp_path / "models") / "fold_models" / "2" / "sbert_dual_cl"
    save_model(TrainedModel(described(), {"w": torch.zeros(2)}), directory)
    assert load_model(store.model_directory(2, "sbert_dual_cl")).state["w"].tolist() == [0.0, 0.0]


def test_models_are_versioned_folders_read_back_by_their_children(tmp_path: Path) -> None:
    result = dg.materialize(
        [fold_model, fold_weights],
        resources={
            "io_manager": DataLakeIOManager(base_path=str(tmp_path)),
            "models": ModelIOManager(base_path=str(tmp_path)),
        },
        partition_key="1",
    )

    assert result.success
    folder = UPath(tmp_path) / "fold_model" / "1"
    assert load_model(folder).state["w"].tolist() == [0.0, 1.0, 2.0]
    assert (folder / POINTER).exists()
    assert pd.read_parquet(tmp_path / "fold_weights" / "1.parquet").to_dict("list") == {
        "w": [0.0, 1.0, 2.0],
        "method": ["sbert_dual_cl"] * 3,
    }


def test_the_model_store_refuses_anything_but_a_trained_model(tmp_path: Path) -> None:
    @dg.asset(io_manager_key="models")
    def not_a_model() -> pa.Table:
        return TABLE

    result = dg.materialize(
        [not_a_model],
        resources={"models": ModelIOManager(base_path=str(tmp_path))},
        raise_on_error=False,
    )

    assert not result.success
    failure = result.get_step_failure_events()[0].step_failure_data.error
    assert "the model store keeps TrainedModel objects, got Table" in str(failure)
    assert list(tmp_path.iterdir()) == []


def test_a_model_folder_counts_as_stored_only_once_it_names_a_current_version(
    tmp_path: Path,
) -> None:
    """A folder whose save never got as far as its pointer holds no model yet."""
    store = ModelUPathIOManager(base_path=UPath(tmp_path))
    folder = UPath(tmp_path) / "fold_model" / "1"
    folder.mkdir(parents=True)
    assert store.path_exists(folder) is False

    save_model(TrainedModel(described(), {"w": torch.zeros(1)}), folder)

    assert store.path_exists(folder) is True


# --- publication: what readers see while a blocking check judges a new version -----------------


class Rows(dg.Config):
    n: int = 3


@dg.asset
def gated(config: Rows) -> pa.Table:
    return pa.table({"i": list(range(config.n))})


@dg.asset_check(asset=gated, blocking=True)
def gated_not_empty(gated: pa.Table) -> dg.AssetCheckResult:
    return settle(dg.AssetCheckResult(passed=gated.num_rows > 0))


def test_a_rejected_version_is_never_read_and_the_next_good_one_clears_it(
    tmp_path: Path,
) -> None:
    """Three rows pass, then an empty table fails its blocking check: readers keep the three
    rows, the asset's latest materialization says it is run 1's table, and the rejected
    version waits under `_staged/`. Two rows then pass: published, and nothing is left staged."""
    instance = dg.DagsterInstance.ephemeral()

    def build(n: int) -> dg.ExecuteInProcessResult:
        return dg.materialize(
            [gated, gated_not_empty],
            resources={"io_manager": DataLakeIOManager(base_path=str(tmp_path))},
            instance=instance,
            run_config=dg.RunConfig({"gated": Rows(n=n)}),
            raise_on_error=False,
        )

    def published() -> list[int]:
        return pd.read_parquet(tmp_path / "gated.parquet")["i"].tolist()

    def staged() -> list[str]:
        return sorted(p.name for p in (tmp_path / "_staged").rglob("*.parquet"))

    first = build(3)
    assert first.success and published() == [0, 1, 2] and staged() == []

    rejected = build(0)
    assert not rejected.success
    assert published() == [0, 1, 2]
    assert staged() == [f"{rejected.run_id}.parquet"]
    latest = instance.fetch_materializations(gated.key, limit=1).records[0]
    assert (latest.asset_materialization.tags or {})[PUBLISHED_RUN_TAG] == first.run_id

    assert build(2).success
    assert published() == [0, 1]
    assert staged() == []


def test_a_frame_is_stored_without_its_index(tmp_path: Path) -> None:
    """A filtered DataFrame keeps its row labels (0, 2); the table readers get has only the
    frame's columns."""

    @dg.asset
    def filtered() -> pd.DataFrame:
        frame = pd.DataFrame({"qid": ["Q1", "Q2", "Q3"]})
        return frame[frame["qid"] != "Q2"]

    materialize(str(tmp_path), filtered)

    stored = pq.read_table(tmp_path / "filtered.parquet")
    assert stored.column_names == ["qid"]
    assert stored.column("qid").to_pylist() == ["Q1", "Q3"]
