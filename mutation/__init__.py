"""Mutation testing of the core domain modules: `make mutation` (see the README's Tests)."""
