"""Deployment examples: the same assets on a distributed engine (see README, "Scale-out")."""
