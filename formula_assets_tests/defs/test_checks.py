"""The check every vector asset gets from one factory: named `<asset>_valid`, blocking, and
an error on bad vectors, each attached to the asset it judges; a domain outcome as a Dagster
result; the schema contract's warning."""

import dagster as dg
import numpy as np
import pytest

from formula_assets.core.arrow import embedding_table, with_expected_dimension
from formula_assets.core.checks import Outcome
from formula_assets.definitions import defs
from formula_assets.defs.checks import check_result, schema_contract

VECTOR_ASSETS = [
    "structural_embeddings",
    "semantic_embeddings",
    "opt_text_embeddings",
    "opt_token_embeddings",
]


def check_definition(key: dg.AssetCheckKey) -> dg.AssetChecksDefinition:
    (found,) = [c for c in defs.asset_checks or [] if key in c.check_keys]
    return found


@pytest.mark.parametrize("asset", VECTOR_ASSETS)
def test_each_vector_asset_has_a_blocking_validity_check(asset: str) -> None:
    key = dg.AssetCheckKey(dg.AssetKey(asset), f"{asset}_valid")
    spec = defs.resolve_asset_graph().get_check_spec(key)
    assert spec.blocking
    assert spec.description.startswith("Finite vectors of the ")
    assert spec.description.endswith(" width, none all-zero.")


@pytest.mark.parametrize("asset", VECTOR_ASSETS)
def test_each_vector_check_fails_with_an_error_on_non_finite_vectors(asset: str) -> None:
    check = check_definition(dg.AssetCheckKey(dg.AssetKey(asset), f"{asset}_valid"))
    matrix = np.ones((3, 4), dtype=np.float32)
    matrix[1, 2] = np.nan
    result = check(with_expected_dimension(embedding_table(["Q1", "Q2", "Q3"], matrix), 4))
    assert not result.passed
    assert result.severity == dg.AssetCheckSeverity.ERROR
    assert "1 vectors with NaN or inf" in result.description


def test_a_domain_outcome_becomes_a_check_result_with_readable_metadata() -> None:
    outcome = Outcome(False, "2 rows out of range", {"rows": ["Q1", "Q2"], "worst": 3.5})
    result = check_result(
        outcome, dg.AssetCheckSeverity.WARN, asset_key=dg.AssetKey("a"), check_name="in_range"
    )
    assert (result.passed, result.severity) == (False, dg.AssetCheckSeverity.WARN)
    assert (result.asset_key, result.check_name) == (dg.AssetKey("a"), "in_range")
    assert result.description == "2 rows out of range"
    values = {k: v.value for k, v in result.metadata.items()}
    assert values == {"summary": "2 rows out of range", "rows": "Q1, Q2", "worst": 3.5}
    passed = check_result(Outcome(True, "all in range"))
    assert passed.passed and passed.severity == dg.AssetCheckSeverity.ERROR


def test_a_changed_column_schema_warns_and_does_not_block() -> None:
    """The schema contract compares a table's columns with its previous materialization."""
    columns = {"value": "int64"}

    @dg.asset
    def table() -> dg.MaterializeResult:
        schema = dg.TableSchema([dg.TableColumn(n, t) for n, t in columns.items()])
        return dg.MaterializeResult(metadata={"dagster/column_schema": schema})

    checks = schema_contract([table])
    with dg.DagsterInstance.ephemeral() as instance:
        outcomes = []
        for change in ({}, {}, {"value": "string"}):
            columns.update(change)
            result = dg.materialize([table, *checks], instance=instance)
            assert result.success  # a warning never fails the run
            [evaluation] = result.get_asset_check_evaluations()
            outcomes.append((evaluation.passed, evaluation.severity))
    warn = dg.AssetCheckSeverity.WARN
    assert outcomes == [(True, warn), (True, warn), (False, warn)]
