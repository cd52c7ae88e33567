"""`formula-assets stale` and the refresh's looks: every missing or stale asset partition, in
the graph's order, with Dagster's own causes naming the parent (and its partition) they come
from; fresh ones and source assets left out. Real materializations on an ephemeral instance."""

from __future__ import annotations

from collections.abc import Iterator

import dagster as dg
import pytest

from formula_assets.defs.plan import Entry, Target, stale_entries

LETTERS = dg.StaticPartitionsDefinition(["x", "y"])
observed = dg.SourceAsset("observed")


def graph(top_version: str = "1", bottom_version: str = "1") -> list[dg.AssetsDefinition]:
    """top → middle[x, y] → bottom, and `observed` (a source) → top."""

    @dg.asset(code_version=top_version, deps=[observed])
    def top() -> None:
        return None

    @dg.asset(code_version="1", partitions_def=LETTERS, deps=[top])
    def middle() -> None:
        return None

    @dg.asset(
        code_version=bottom_version,
        deps=[dg.AssetDep("middle", partition_mapping=dg.AllPartitionMapping())],
    )
    def bottom() -> None:
        return None

    return [top, middle, bottom]


def definitions(assets: list[dg.AssetsDefinition]) -> dg.Definitions:
    return dg.Definitions(assets=[observed, *assets])


def build_all(assets: list[dg.AssetsDefinition], instance: dg.DagsterInstance) -> None:
    top, middle, bottom = assets
    assert dg.materialize([top], instance=instance).success
    for letter in ("x", "y"):
        assert dg.materialize([middle], instance=instance, partition_key=letter).success
    assert dg.materialize([bottom], instance=instance).success


def lines(entries: list[Entry]) -> list[str]:
    return [entry.line() for entry in entries]


@pytest.fixture
def instance() -> Iterator[dg.DagsterInstance]:
    with dg.DagsterInstance.ephemeral() as instance:
        yield instance


def test_everything_never_built_is_missing_per_partition_in_the_graphs_order(
    instance: dg.DagsterInstance,
) -> None:
    entries = stale_entries(definitions(graph()), instance)
    assert lines(entries) == [
        "top\tMISSING\tnever materialized",
        "middle[x]\tMISSING\tnever materialized",
        "middle[y]\tMISSING\tnever materialized",
        "bottom\tMISSING\tnever materialized",
    ]
    assert entries[1].target == Target(dg.AssetKey("middle"), "x")
    assert entries[0].target == Target(dg.AssetKey("top"))  # no partition: None, not ""


def test_nothing_is_listed_once_everything_is_built(instance: dg.DagsterInstance) -> None:
    assets = graph()
    build_all(assets, instance)
    assert stale_entries(definitions(assets), instance) == []


def test_one_missing_partition_is_listed_alone(instance: dg.DagsterInstance) -> None:
    top, middle, bottom = graph()
    assert dg.materialize([top], instance=instance).success
    assert dg.materialize([middle], instance=instance, partition_key="y").success
    assert lines(stale_entries(definitions([top, middle, bottom]), instance)) == [
        "middle[x]\tMISSING\tnever materialized",
        "bottom\tMISSING\tnever materialized",
    ]


def test_a_change_is_stale_where_it_is_and_then_one_level_below_each_rebuild(
    instance: dg.DagsterInstance,
) -> None:
    """Dagster marks a new code version stale on its own asset; its children turn stale when
    the rebuilt parent's data version is new, with a cause naming that parent (and the
    partition of a partitioned one)."""
    build_all(graph(), instance)
    top, middle, bottom = graph(top_version="2")
    defs = definitions([top, middle, bottom])
    entries = stale_entries(defs, instance)
    assert lines(entries) == ["top\tSTALE\thas a new code version"]
    assert entries[0].target == Target(dg.AssetKey("top"))

    assert dg.materialize([top], instance=instance).success
    assert lines(stale_entries(defs, instance)) == [
        "middle[x]\tSTALE\thas a new dependency data version (top)",
        "middle[y]\tSTALE\thas a new dependency data version (top)",
    ]
    assert dg.materialize([middle], instance=instance, partition_key="x").success
    entries = stale_entries(defs, instance)
    assert lines(entries) == [
        "middle[y]\tSTALE\thas a new dependency data version (top)",
        "bottom\tSTALE\thas a new dependency data version (middle[x])",
    ]
    assert entries[1].causes == ("has a new dependency data version (middle[x])",)
    assert dg.materialize([middle], instance=instance, partition_key="y").success
    assert [e.causes for e in stale_entries(defs, instance)] == [
        (
            "has a new dependency data version (middle[x])",
            "has a new dependency data version (middle[y])",
        )
    ]


def test_only_what_changed_is_stale(instance: dg.DagsterInstance) -> None:
    build_all(graph(), instance)
    entries = stale_entries(definitions(graph(bottom_version="2")), instance)
    assert lines(entries) == ["bottom\tSTALE\thas a new code version"]


def test_an_entry_without_causes_ends_after_its_status() -> None:
    entry = Entry(Target(dg.AssetKey(["a", "b"]), None), "MISSING", ())
    assert entry.line() == "a/b\tMISSING"
    assert str(Target(dg.AssetKey("m"), "")) == "m[]"  # an empty key is still a partition


def test_a_target_is_a_key_equal_by_value() -> None:
    """The refresh counts its builds per target (`attempted[target]`), across looks that
    make new `Target` objects."""
    attempted = {Target(dg.AssetKey("middle"), "x"): 2}
    assert attempted[Target(dg.AssetKey("middle"), "x")] == 2
    assert Target(dg.AssetKey("middle"), "y") not in attempted
