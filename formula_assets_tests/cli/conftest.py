"""Fixtures of the command-line tests."""

from formula_assets_tests.cli.recorded_runs import small

__all__ = ["small"]
