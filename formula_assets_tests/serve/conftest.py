"""Fixtures of the service tests."""

from formula_assets_tests.support.object_store import s3

__all__ = ["s3"]
