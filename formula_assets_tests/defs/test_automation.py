"""The automation sensor never requests a step that another entry point is building; a new
code version is requested once and an identical rebuild stops there; what is missing at the
start is requested once, not retried every evaluation; how often it evaluates is a setting."""

from pathlib import Path

import dagster as dg
import pytest

from formula_assets.defs import automation
from formula_assets.defs.plan import buildable, stale_entries
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


def _parent_and_child(
    version: list[int], parent_code: str = "1"
) -> tuple[dg.Definitions, dg.AssetsDefinition]:
    """Two assets under the project's condition; the parent's data version is `version[0]`."""

    @dg.asset(automation_condition=automation.AUTOMATION, code_version=parent_code)
    def parent() -> dg.Output[int]:
        return dg.Output(version[0], data_version=dg.DataVersion(str(version[0])))

    @dg.asset(automation_condition=automation.AUTOMATION)
    def child(parent: int) -> int:
        return parent

    return dg.Definitions(assets=[parent, child]), child


def _requested(result: dg.EvaluateAutomationConditionsResult) -> set[str]:
    return {key for key in ("parent", "child") if result.get_num_requested(dg.AssetKey(key))}


def _child_run_ends_out_of_view(
    instance: dg.DagsterInstance,
) -> tuple[dg.Definitions, dg.EvaluateAutomationConditionsResult]:
    """The child's run is in flight while its parent gets new data, then ends before the
    evaluation sees a materialization of the child (Dagster reads asset records once per
    evaluation and run statuses later, so a run ending in between looks so)."""
    version = [1]
    defs, child = _parent_and_child(version)
    assert dg.materialize(defs.assets, instance=instance).success  # type: ignore[arg-type]
    result = dg.evaluate_automation_conditions(defs=defs, instance=instance)
    result = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=result.cursor)
    assert _requested(result) == set()

    run = instance.create_run_for_job(
        defs.resolve_implicit_global_asset_job_def(),
        asset_selection=frozenset({child.key}),
        status=dg.DagsterRunStatus.STARTED,
    )
    version[0] = 2
    assert dg.materialize(defs.assets, selection=["parent"], instance=instance).success  # type: ignore[arg-type]
    result = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=result.cursor)
    assert _requested(result) == set()  # the child is being built
    instance.report_run_canceled(instance.get_run_by_id(run.run_id))  # type: ignore[arg-type]
    result = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=result.cursor)
    # the run has ended, nothing of it is in view yet: wait one evaluation
    assert _requested(result) == set()
    return defs, result


def test_a_run_seen_ending_before_its_materialization_is_not_requested_again() -> None:
    with dg.instance_for_test() as instance:
        defs, result = _child_run_ends_out_of_view(instance)
        instance.report_runless_asset_event(dg.AssetMaterialization("child"))  # now in view
        result = dg.evaluate_automation_conditions(
            defs=defs, instance=instance, cursor=result.cursor
        )
        assert _requested(result) == set()


def test_a_run_that_left_its_asset_unbuilt_is_retried_one_evaluation_later() -> None:
    """The wait never stalls automation: with no materialization coming, the parent's new
    data requests the child at the next evaluation."""
    with dg.instance_for_test() as instance:
        defs, result = _child_run_ends_out_of_view(instance)
        result = dg.evaluate_automation_conditions(
            defs=defs, instance=instance, cursor=result.cursor
        )
        assert _requested(result) == {"child"}


def _mirror_of_the_project(
    identical: frozenset[str] = frozenset(),
) -> tuple[list[dg.AssetsDefinition], dict[str, set[str]]]:
    """Every asset of the project as a cheap stand-in with the same key, parents and
    condition, each build new data but those named `identical`, which always rebuild the
    same; and each asset's descendants."""
    from formula_assets.definitions import defs

    graph = defs.resolve_asset_graph()
    keys = graph.materializable_asset_keys
    built = [0]

    def stand_in(key: dg.AssetKey) -> dg.AssetsDefinition:
        parents = [k for k in graph.get(key).parent_keys if k in keys]
        same = key.to_user_string() in identical

        @dg.asset(key=key, deps=parents, automation_condition=automation.AUTOMATION)
        def _build() -> dg.MaterializeResult:
            built[0] += 1
            version = "the same" if same else str(built[0])
            return dg.MaterializeResult(data_version=dg.DataVersion(version))

        return _build

    below = {
        k.to_user_string(): {
            d.to_user_string()
            for d in dg.AssetSelection.assets(k).downstream().resolve(graph) - {k}
        }
        for k in keys
    }
    return [stand_in(k) for k in keys], below


def _follow(
    assets: list[dg.AssetsDefinition], changed: str
) -> tuple[dict[str, int], list[list[str]]]:
    """A new version of `changed`, followed evaluation by evaluation, each evaluation's
    requests built as one run, until nothing is requested: how often each asset was built,
    and each evaluation's requests."""
    names = [a.key.to_user_string() for a in assets]
    with dg.instance_for_test() as instance:
        assert dg.materialize(assets, instance=instance).success
        result = dg.evaluate_automation_conditions(defs=assets, instance=instance)
        result = dg.evaluate_automation_conditions(
            defs=assets, instance=instance, cursor=result.cursor
        )
        assert result.total_requested == 0

        assert dg.materialize(assets, selection=[changed], instance=instance).success
        builds: dict[str, int] = {}
        rounds: list[list[str]] = []
        for _ in range(len(names) + 2):
            result = dg.evaluate_automation_conditions(
                defs=assets, instance=instance, cursor=result.cursor
            )
            requested = [n for n in names if result.get_num_requested(dg.AssetKey(n))]
            if not requested:
                break
            rounds.append(requested)
            for name in requested:
                builds[name] = builds.get(name, 0) + 1
            assert dg.materialize(assets, selection=requested, instance=instance).success
    return builds, rounds


@pytest.mark.parametrize(
    "changed",
    [
        "wikidata_formulae",  # Wikidata changed
        "opt_graphs",  # a parser changed
        "concept_annotations",  # only concept texts changed
    ],
)
def test_a_change_reaches_each_asset_below_it_once(changed: str) -> None:
    """The project's graph, where a change reaches the audit and the report by many paths of
    different lengths."""
    assets, below = _mirror_of_the_project()
    builds, rounds = _follow(assets, changed)
    assert builds == dict.fromkeys(below[changed], 1), rounds
    # the audit only after the search index and the models it reads
    first = {name: i for i, batch in enumerate(rounds) for name in batch}
    assert first["annotation_audit"] > first["search_index"] > first["fold_models"]


def test_an_edit_of_labels_only_rebuilds_the_semantic_side_once_and_not_the_parsers() -> None:
    """New Wikidata data whose formulae, folds and symbols are as they were: those assets
    rebuild to the same data and stop there, while the new labels reach the audit and the
    report by paths of different lengths, some through the unchanged assets' children. The
    audit waits for the models it reads even where a parent of its own is unchanged."""
    unchanged = {"cv_folds", "opt_graphs", "rejected_formulae", "concept_symbols"}
    assets, below = _mirror_of_the_project(frozenset(unchanged))
    builds, rounds = _follow(assets, "wikidata_formulae")
    parsers_side = {"structural_embeddings", "opt_text_embeddings", "opt_token_embeddings"}
    assert builds == dict.fromkeys(below["wikidata_formulae"] - parsers_side, 1), rounds
    first = {name: i for i, batch in enumerate(rounds) for name in batch}
    assert first["annotation_audit"] > first["search_index"] > first["fold_models"]
    assert first["fold_models"] > first["semantic_embeddings"] > first["concept_annotations"]


def test_a_new_code_version_requests_its_asset_and_an_identical_rebuild_stops_there() -> None:
    """Code changes flow under automation as under `refresh`: the asset whose code changed
    is requested once; rebuilt to the same data version, nothing below it is."""
    with dg.instance_for_test() as instance:
        defs, _ = _parent_and_child([1])
        assert dg.materialize(defs.assets, instance=instance).success  # type: ignore[arg-type]
        result = dg.evaluate_automation_conditions(defs=defs, instance=instance)
        result = dg.evaluate_automation_conditions(
            defs=defs, instance=instance, cursor=result.cursor
        )
        assert _requested(result) == set()

        defs, _ = _parent_and_child([1], parent_code="2")
        result = dg.evaluate_automation_conditions(
            defs=defs, instance=instance, cursor=result.cursor
        )
        assert _requested(result) == {"parent"}
        result = dg.evaluate_automation_conditions(
            defs=defs, instance=instance, cursor=result.cursor
        )
        assert _requested(result) == set()  # handled: requested once
        assert dg.materialize(defs.assets, selection=["parent"], instance=instance).success  # type: ignore[arg-type]
        for _ in range(2):
            result = dg.evaluate_automation_conditions(
                defs=defs, instance=instance, cursor=result.cursor
            )
            assert _requested(result) == set()


def test_an_asset_missing_at_the_start_is_requested_once_not_at_every_evaluation() -> None:
    """A run that leaves it missing (it failed) is not retried every minute. Its missing child
    waits for it, as under `refresh`: a child is built once its parent is there."""
    with dg.instance_for_test() as instance:
        defs, _ = _parent_and_child([1])
        result = dg.evaluate_automation_conditions(defs=defs, instance=instance)
        assert _requested(result) == {"parent"}
        for _ in range(2):
            result = dg.evaluate_automation_conditions(
                defs=defs, instance=instance, cursor=result.cursor
            )
            assert _requested(result) == set()


def test_a_change_two_levels_above_builds_the_report_once_after_the_audit() -> None:
    """A parser change that only the token vectors see: the OPT texts' and the structural
    vectors, and so the models, rebuild identical. The audit and the report read the parser's
    output by paths of different lengths; each waits for every ancestor that will still
    change, as `refresh` does (`defs.plan.buildable`), so each is built once, the report
    last, not once per path (waiting on parents only built both twice)."""
    identical = {"fold_models", "structural_embeddings", "opt_text_embeddings"}
    assets, below = _mirror_of_the_project(frozenset(identical))
    builds, rounds = _follow(assets, "opt_graphs")
    assert builds and set(builds.values()) == {1}, rounds
    assert set(builds) <= below["opt_graphs"]
    first = {name: i for i, batch in enumerate(rounds) for name in batch}
    assert first["report"] > max(i for name, i in first.items() if name != "report"), rounds


def _refresh_rounds(assets: list[dg.AssetsDefinition], changed: str) -> list[list[str]]:
    """The rounds `formula-assets refresh` builds after a new version of `changed`: the
    buildable stale entries, built as one run, until nothing is stale."""
    defs = dg.Definitions(assets=assets)
    graph = defs.resolve_asset_graph()
    names = [a.key.to_user_string() for a in assets]
    rounds: list[list[str]] = []
    with dg.instance_for_test() as instance:
        assert dg.materialize(assets, instance=instance).success
        assert dg.materialize(assets, selection=[changed], instance=instance).success
        while entries := stale_entries(defs, instance):
            now = {e.target.key.to_user_string() for e in buildable(graph, entries)}
            rounds.append([n for n in names if n in now])
            assert dg.materialize(assets, selection=rounds[-1], instance=instance).success
    return rounds


@pytest.mark.parametrize("changed", ["wikidata_formulae", "opt_graphs", "concept_annotations"])
def test_refresh_and_the_sensor_build_the_same_steps_in_the_same_order(changed: str) -> None:
    """One rule: the sensor's evaluations request, round by round, what `refresh` builds."""
    identical = frozenset({"fold_models", "structural_embeddings", "opt_text_embeddings"})
    for same in (frozenset(), identical):
        assets, _ = _mirror_of_the_project(same)
        _, sensor_rounds = _follow(assets, changed)
        assert sensor_rounds == _refresh_rounds(assets, changed), (changed, same)
