"""Mutation testing of the core domain modules: `make mutation` (see docs/tests.md)."""
