"""formula_assets: the Syntax Meets Semantics method as Dagster software-defined assets."""

__version__ = "0.1.0"
