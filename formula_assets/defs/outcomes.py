"""Domain check outcomes → Dagster check results."""

from __future__ import annotations

import dagster as dg

from formula_assets.quality import Outcome


def check_result(
    outcome: Outcome, severity: dg.AssetCheckSeverity = dg.AssetCheckSeverity.ERROR
) -> dg.AssetCheckResult:
    metadata = {"summary": outcome.description}
    for key, value in outcome.metadata.items():
        metadata[key] = ", ".join(map(str, value)) if isinstance(value, list) else value
    return dg.AssetCheckResult(
        passed=outcome.passed,
        severity=severity,
        description=outcome.description,
        metadata=metadata,
    )
