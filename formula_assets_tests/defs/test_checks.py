"""The check every vector asset gets from one factory: named `<asset>_valid`, blocking, and
an error on bad vectors, each attached to the asset it judges."""

import dagster as dg
import numpy as np
import pytest

from formula_assets.core.arrow import embedding_table, with_expected_dimension
from formula_assets.definitions import defs

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
