"""Deployment examples: the same assets on a distributed engine (see docs/deployment.md)."""
