"""Fixtures of the command-line tests."""

from formula_assets_tests.support.recorded_runs import small

__all__ = ["small"]
