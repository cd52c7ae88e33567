"""Shared fixtures."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from formula_assets_tests.sparql_server import FakeWdqs


@pytest.fixture
def sparql_server() -> Iterator[FakeWdqs]:
    """A fake Wikidata Query Service on a free local port, stopped after the test."""
    with FakeWdqs() as server:
        yield server
