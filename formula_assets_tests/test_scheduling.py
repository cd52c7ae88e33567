"""`make test`'s two workers: the modules that read one costly session fixture run as one
unit (conftest.py), so each unit's list of them must be complete."""

import pytest

from formula_assets_tests.conftest import READERS, UNITS
from formula_assets_tests.support.pipeline import ROOT


@pytest.mark.parametrize("fixture", sorted(UNITS))
def test_every_module_reading_a_units_fixture_is_listed(
    request: pytest.FixtureRequest, fixture: str
) -> None:
    """A module left out would build the fixture on the second worker too (of the modules
    this run collected, deselected tests included: `make test` collects them all)."""
    assert request.config.stash[READERS][fixture] <= UNITS[fixture]


@pytest.mark.parametrize("fixture", sorted(UNITS))
def test_every_listed_module_exists_and_reads_the_fixture(fixture: str) -> None:
    """A module renamed or removed leaves no name behind; one listed reads the fixture."""
    assert all((ROOT / name).is_file() for name in UNITS[fixture])
    assert all(fixture in (ROOT / name).read_text() for name in UNITS[fixture])


def test_no_module_is_in_two_units() -> None:
    modules = [m for unit in UNITS.values() for m in unit]
    assert len(modules) == len(set(modules))
