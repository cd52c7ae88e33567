"""`make test`'s two workers: the modules that read one costly session fixture run as one
unit (conftest.py), so each unit's list of them must be complete."""

import pytest

from formula_assets_tests.conftest import FIRST, READERS, UNITS
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


def test_the_units_started_first_are_units_or_modules_that_exist() -> None:
    """A renamed module in `FIRST` would silently start last again."""
    assert all(scope in UNITS or (ROOT / scope).is_file() for scope in FIRST)


def test_the_first_units_are_handed_out_first() -> None:
    """The scheduler moves `FIRST` to the front of xdist's queue, in its order."""
    from collections import OrderedDict

    from formula_assets_tests.conftest import pytest_xdist_make_scheduler

    class Config:
        def getvalue(self, name: str) -> str:
            return "loadfile"

    class Node:
        def __init__(self) -> None:
            self.sent: list[list[int]] = []

        def send_runtest_some(self, indexes: list[int]) -> None:
            self.sent.append(indexes)

    scheduler = pytest_xdist_make_scheduler(Config(), None)
    scopes = ["formula_assets_tests/a_test.py", FIRST[1], FIRST[0]]  # queued last to first
    node = Node()
    scheduler.registered_collections = {node: [f"{scope}::t" for scope in scopes]}
    scheduler.workqueue = OrderedDict((scope, {f"{scope}::t": False}) for scope in scopes)
    for _ in scopes:
        scheduler._assign_work_unit(node)
    assert node.sent == [[2], [1], [0]]
