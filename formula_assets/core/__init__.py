"""Shared foundations of every stage: settings and profiles, content hashes, atomic data-lake
writes, Arrow helpers, code versions, figure encoding and the outcome of a data check."""
