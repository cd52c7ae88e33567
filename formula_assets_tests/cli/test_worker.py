"""What a refresh job costs comes from its assets' definitions (`defs.metadata.step_cost`):
no table of asset names in the runner."""

import dagster as dg

from formula_assets.cli.runs import Job
from formula_assets.cli.stale import Entry, Target
from formula_assets.cli.worker import LocalRunner, cost
from formula_assets.defs.metadata import step_cost

PARTS = dg.MultiPartitionsDefinition(
    {
        "fold": dg.StaticPartitionsDefinition(["1", "2"]),
        "method": dg.StaticPartitionsDefinition(["fast", "slow"]),
    }
)


@dg.asset
def cheap() -> None: ...


@dg.asset(metadata=step_cost(2.0))
def embedded() -> None: ...


@dg.asset(partitions_def=PARTS, metadata=step_cost(1.0, partitions={"slow": 3.0}))
def trained() -> None: ...


DEFS = dg.Definitions(assets=[cheap, embedded, trained])


def test_costs_are_read_from_the_assets() -> None:
    assert cost(DEFS, Job(("cheap",))) == 0.0  # declares none: runs in the refresh's process
    assert cost(DEFS, Job(("embedded",))) == 2.0
    assert cost(DEFS, Job(("cheap", "embedded"))) == 2.0
    assert cost(DEFS, Job(("trained",), "1|fast")) == 1.0
    assert cost(DEFS, Job(("trained",), "2|slow")) == 3.0  # the method's factor


def test_the_longest_jobs_start_first() -> None:
    frontier = [
        Entry(Target(dg.AssetKey("cheap")), "MISSING", ()),
        Entry(Target(dg.AssetKey("embedded")), "MISSING", ()),
        Entry(Target(dg.AssetKey("trained"), "1|fast"), "MISSING", ()),
        Entry(Target(dg.AssetKey("trained"), "1|slow"), "MISSING", ()),
    ]
    planned = [str(job) for job in LocalRunner(workers=2).plan(DEFS, frontier)]
    assert planned == ["trained[1|slow]", "embedded", "trained[1|fast]", "cheap"]


def test_the_project_declares_its_heavy_steps() -> None:
    from formula_assets.definitions import defs

    graph = defs.resolve_asset_graph()
    heavy = {
        key.to_user_string(): cost(defs, Job((key.to_user_string(),)))
        for key in graph.materializable_asset_keys
        if cost(defs, Job((key.to_user_string(),)))
    }
    assert heavy == {
        "semantic_embeddings": 2.0,
        "opt_text_embeddings": 2.0,
        "opt_token_embeddings": 1.0,
        "fold_models": 1.0,
    }
    assert cost(defs, Job(("fold_models",), "3|graph_text_cl")) == 3.0
    assert cost(defs, Job(("fold_models",), "3|sbert_dual_cl")) == 1.0
