"""The Dagster layer: assets, checks, resources and IO managers. Thin wrappers over the domain."""

import warnings

import dagster as dg

# Content-hash data versions and observable sources are the point of this project; Dagster's
# beta notices about them are noise in every run log.
warnings.filterwarnings("ignore", category=dg.BetaWarning)
