"""Is the formula data as new as the weekly probe says Wikidata is?

* `wikidata_probe` must have been observed within 8 days (the weekly schedule plus a day of
  grace); a sensor evaluates this freshness check, so a stopped schedule is noticed.
* `wikidata_formulae_current`: the latest `wikidata_formulae` was built on the fingerprint
  the probe reports now. It runs with every build and with every weekly observation; right
  after a new fingerprint is observed it warns until automation has rebuilt the data.
"""

import warnings
from datetime import timedelta

import dagster as dg

from formula_assets.defs.automation import default_status

PROBE_MAX_AGE = timedelta(days=8)
PROBE_KEY = dg.AssetKey("wikidata_probe")
FORMULAE_KEY = dg.AssetKey("wikidata_formulae")
INPUT_VERSION_TAG = f"dagster/input_data_version/{PROBE_KEY.to_user_string()}"
CURRENT_CHECK = dg.AssetCheckKey(FORMULAE_KEY, "wikidata_formulae_current")

# Dagster 1.13 prefers `FreshnessPolicy`, but a policy is judged on materializations only and
# the probe is observed, never materialized: the freshness check reads observations too.
with warnings.catch_warnings():
    warnings.simplefilter("ignore", dg.SupersessionWarning)
    wikidata_probe_freshness = dg.build_last_update_freshness_checks(
        assets=[PROBE_KEY], lower_bound_delta=PROBE_MAX_AGE
    )
    freshness_sensor = dg.build_sensor_for_freshness_checks(
        freshness_checks=wikidata_probe_freshness,
        name="wikidata_probe_freshness",
        default_status=default_status(),
    )


# The probe as a dependency orders the check after the observation when both run in one job
# (the weekly `observe_wikidata`): otherwise the check could read the previous fingerprint.
@dg.asset_check(
    asset=FORMULAE_KEY,
    additional_deps=[PROBE_KEY],
    description="Built on the probe's latest fingerprint.",
)
def wikidata_formulae_current(context: dg.AssetCheckExecutionContext) -> dg.AssetCheckResult:
    instance = context.instance
    observations = instance.fetch_observations(PROBE_KEY, limit=1).records
    observed = observations[0].asset_observation.data_version if observations else None
    event = instance.get_latest_materialization_event(FORMULAE_KEY)
    built = event.asset_materialization if event else None
    used = (built.tags or {}).get(INPUT_VERSION_TAG) if built else None
    if observed is None:
        passed, text = True, "the probe has not been observed yet: nothing to compare with"
    elif built is None:
        passed, text = False, f"the probe reports {observed}, wikidata_formulae is not built"
    elif used == observed:
        passed, text = True, f"built on the probe's latest fingerprint {observed}"
    else:
        passed, text = False, f"built on {used}, but the probe now reports {observed}"
    return dg.AssetCheckResult(
        passed=passed,
        severity=dg.AssetCheckSeverity.WARN,
        description=text,
        metadata={"probe_fingerprint": observed or "—", "built_on": used or "—"},
    )
