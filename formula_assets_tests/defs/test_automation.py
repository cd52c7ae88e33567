"""The automation sensor never requests a step that another entry point is building; how
often it evaluates is a setting."""

from pathlib import Path

import dagster as dg
import pytest

from formula_assets.defs import automation
from formula_assets_tests.support.automation import definitions, observe, requested
from formula_assets_tests.support.sparql_server import FakeWdqs


def test_the_first_evaluation_skips_what_a_refresh_is_building(
    tmp_path: Path, sparql_server: FakeWdqs
) -> None:
    """`make ui` started beside a running `make run`: the sensor's first evaluation would
    request every missing asset, including the one the refresh is building right now."""
    defs = definitions(tmp_path / "lake", sparql_server.endpoint)
    with dg.instance_for_test() as instance:
        observe(defs, instance)
        job = defs.resolve_implicit_global_asset_job_def()
        instance.create_run_for_job(
            job,
            asset_selection=frozenset({dg.AssetKey("wikidata_formulae")}),
            status=dg.DagsterRunStatus.STARTED,
            tags={"formula_assets/refresh": "true"},
        )
        result = dg.evaluate_automation_conditions(defs=defs, instance=instance)
        # Neither the step in flight nor anything below it, which would read its old output.
        assert requested(result) == set()


def test_the_evaluation_interval_is_a_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    def interval() -> int | None:
        return automation.automation_sensor().minimum_interval_seconds

    monkeypatch.delenv("FORMULA_ASSETS_AUTOMATION_INTERVAL", raising=False)
    assert interval() == 60
    monkeypatch.setenv("FORMULA_ASSETS_AUTOMATION_INTERVAL", "5")
    assert interval() == 5
    monkeypatch.setenv("FORMULA_ASSETS_AUTOMATION_INTERVAL", "soon")
    with pytest.raises(ValueError, match="FORMULA_ASSETS_AUTOMATION_INTERVAL"):
        interval()
