"""`make test`'s two workers: the modules of the materialized pipeline run as one unit
(conftest.py), so the list of them must be complete."""

import pytest

from formula_assets_tests.conftest import PIPELINE_MODULES, READING_PIPELINE
from formula_assets_tests.support.pipeline import ROOT


def test_every_module_reading_the_materialized_pipeline_is_listed(
    request: pytest.FixtureRequest,
) -> None:
    """A module left out would build the pipeline on the second worker too (of the modules
    this run collected, deselected tests included: `make test` collects them all)."""
    assert request.config.stash[READING_PIPELINE] <= PIPELINE_MODULES


def test_every_listed_module_exists() -> None:
    """A module renamed or removed leaves no name behind."""
    assert all((ROOT / name).is_file() for name in PIPELINE_MODULES)
