"""The Dagster layer: assets, checks, resources and IO managers. Thin wrappers over the domain."""
