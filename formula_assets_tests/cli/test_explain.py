"""`formula-assets stale --explain ASSET`: the parts of the asset's code version now, each
compared with what its last materialization recorded (through the project's IO manager)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pyarrow as pa
import pytest
from upath import UPath

from formula_assets.cli.explain import ExplainError, Part, compare, explain
from formula_assets.defs.io_managers import ParquetUPathIOManager
from formula_assets.defs.metadata import code_covers


def definitions(lake: Path, version: str, covered: dict[str, str]) -> dg.Definitions:
    @dg.asset(code_version=version, metadata=code_covers(covered))
    def table() -> pa.Table:
        return pa.table({"x": [1, 2]})

    @dg.asset(code_version="1", deps=[table])
    def declared() -> None:  # no covers: an asset that declares its own version
        return None

    io = ParquetUPathIOManager(UPath(lake))
    return dg.Definitions(assets=[table, declared], resources={"io_manager": io})


@pytest.fixture
def instance() -> Iterator[dg.DagsterInstance]:
    with dg.DagsterInstance.ephemeral() as instance:
        yield instance


THEN = {"module pkg.a": "aaaa", "module pkg.b": "bbbb", "setting profile": "p1"}


def test_the_parts_are_compared_with_the_last_materializations(
    instance: dg.DagsterInstance, tmp_path: Path
) -> None:
    defs = definitions(tmp_path, "v1", THEN)
    never = explain(defs, instance, "table")
    assert never.then_version is None and "never materialized" in never.lines()[0]
    assert [p.status for p in never.parts] == ["?", "?", "?"]

    assert dg.materialize(
        [defs.resolve_assets_def("table")], instance=instance, resources=defs.resources
    ).success
    same = explain(defs, instance, "table")
    assert same.recorded and same.then_version == "v1"
    assert same.lines() == [
        "table: code version v1, as at its last materialization",
        "same\tmodule\tpkg.a",
        "same\tmodule\tpkg.b",
        "same\tsetting\tprofile",
    ]

    now = {"module pkg.a": "aaaa", "module pkg.b": "b2b2", "module pkg.c": "cccc"}
    later = explain(definitions(tmp_path, "v2", now), instance, "table")
    assert later.lines() == [
        "table: code version v2; last materialized with v1: 3 part(s) differ",
        "changed\tmodule\tpkg.b",
        "added\tmodule\tpkg.c",
        "removed\tsetting\tprofile",
        "same\tmodule\tpkg.a",
    ]


def test_a_materialization_that_recorded_no_parts_says_so(
    instance: dg.DagsterInstance, tmp_path: Path
) -> None:
    plain = dg.Definitions(assets=[definitions(tmp_path, "v0", {}).resolve_assets_def("declared")])
    assert dg.materialize(list(plain.assets or []), instance=instance).success
    with pytest.raises(ExplainError, match="declares its own code version"):
        explain(definitions(tmp_path, "v1", THEN), instance, "declared")

    # `table` materialized by a definition without covers, then asked about with them
    @dg.asset(name="table", code_version="v0")
    def old() -> pa.Table:
        return pa.table({"x": [1]})

    assert dg.materialize(
        [old], instance=instance, resources={"io_manager": ParquetUPathIOManager(UPath(tmp_path))}
    ).success
    explained = explain(definitions(tmp_path, "v1", THEN), instance, "table")
    assert not explained.recorded and explained.then_version == "v0"
    assert "recorded no parts" in explained.lines()[0]
    assert {p.status for p in explained.parts} == {"?"}


def test_an_unknown_asset_is_a_clear_error(instance: dg.DagsterInstance, tmp_path: Path) -> None:
    with pytest.raises(ExplainError, match="no materializable asset 'tabel'; choose one of"):
        explain(definitions(tmp_path, "v1", THEN), instance, "tabel")


def test_parts_that_differ_come_first_in_the_versions_order() -> None:
    then = {"module a": "1", "module b": "1", "module c": "1"}
    now = {"module a": "1", "module b": "2", "module d": "1", "module c": "1"}
    assert compare(now, then) == [
        Part("changed", "module b"),
        Part("added", "module d"),
        Part("same", "module a"),
        Part("same", "module c"),
    ]
    assert compare(now, None) == [Part("?", label) for label in now]
