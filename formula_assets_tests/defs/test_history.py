"""`defs.history`: the report's version rows (a partitioned input's row covers every
partition, so it does not depend on which partition's run finished last), and the counts the
probe and the pull compare with their last ones."""

from collections.abc import Iterator, Sequence

import dagster as dg
import pytest

from formula_assets.defs.history import last_count, metadata_value, versions

PARTS = dg.StaticPartitionsDefinition(["a", "b", "c"])


def partitioned(contents: dict[str, str]) -> dg.AssetsDefinition:
    @dg.asset(name="parts", partitions_def=PARTS, code_version="v1")
    def parts(context: dg.AssetExecutionContext) -> dg.Output[None]:
        return dg.Output(None, data_version=dg.DataVersion(contents[context.partition_key]))

    return parts


@dg.asset(name="single", code_version="v2")
def single() -> dg.Output[None]:
    return dg.Output(None, data_version=dg.DataVersion("s1"))


def built(order: Sequence[str], contents: dict[str, str]) -> Iterator[dg.DagsterInstance]:
    with dg.instance_for_test() as instance:
        asset = partitioned(contents)
        for partition in order:
            assert dg.materialize([asset], instance=instance, partition_key=partition).success
        assert dg.materialize([single], instance=instance).success
        yield instance


@pytest.fixture
def forwards() -> Iterator[dg.DagsterInstance]:
    yield from built("abc", {"a": "1", "b": "2", "c": "3"})


def test_an_unpartitioned_input_gives_its_code_and_data_version(forwards) -> None:
    assert versions(forwards, "single") == ["single", "v2", "s1"]


def test_a_missing_input_is_a_dash(forwards) -> None:
    assert versions(forwards, "nothing") == ["nothing", "—", "—"]


def test_the_partitioned_row_does_not_depend_on_the_order_runs_finished(forwards) -> None:
    row = versions(forwards, "parts", PARTS.get_partition_keys())
    assert row[:2] == ["parts (3 partitions)", "v1"]
    for order in ("cba", "bca"):
        for other in built(order, {"a": "1", "b": "2", "c": "3"}):
            assert versions(other, "parts", PARTS.get_partition_keys()) == row
            # the last partition alone differs between these instances
            assert versions(other, "parts") != versions(forwards, "parts")


def test_every_partitions_data_version_enters_the_row(forwards) -> None:
    row = versions(forwards, "parts", PARTS.get_partition_keys())
    for changed in ("a",):  # not the last partition built
        contents = {"a": "1", "b": "2", "c": "3"} | {changed: "9"}
        for other in built("abc", contents):
            assert versions(other, "parts", PARTS.get_partition_keys())[2] != row[2]


def test_a_partition_never_built_still_counts(forwards) -> None:
    with dg.instance_for_test() as instance:
        asset = partitioned({"a": "1", "b": "2", "c": "3"})
        for partition in "ab":
            dg.materialize([asset], instance=instance, partition_key=partition)
        assert (
            versions(instance, "parts", PARTS.get_partition_keys())[2]
            != (versions(forwards, "parts", PARTS.get_partition_keys())[2])
        )


def test_a_metadata_value_or_the_default() -> None:
    counted = dg.AssetMaterialization("a", metadata={"items": 3})
    assert metadata_value(counted, "items") == 3
    assert metadata_value(counted, "other", default=-1) == -1
    assert metadata_value(None, "items", default=-1) == -1
    assert metadata_value(None, "items") is None


def test_the_last_count_is_the_latest_materializations_else_observations() -> None:
    """The probe is observed (its counts are observations); the formulae are materialized."""
    key = dg.AssetKey("counted")
    with dg.instance_for_test() as instance:
        assert last_count(instance, key, "items") is None  # nothing recorded
        instance.report_runless_asset_event(dg.AssetObservation(key, metadata={"items": 5}))
        assert last_count(instance, key, "items") == 5
        instance.report_runless_asset_event(dg.AssetObservation(key, metadata={"items": 6}))
        assert last_count(instance, key, "items") == 6  # the latest
        instance.report_runless_asset_event(
            dg.AssetMaterialization(key, metadata={"items": 7.0, "note": "seven"})
        )
        assert last_count(instance, key, "items") == 7  # a materialization first
        assert isinstance(last_count(instance, key, "items"), int)
        assert last_count(instance, key, "note") is None  # not a number
        assert last_count(instance, key, "missing") is None
