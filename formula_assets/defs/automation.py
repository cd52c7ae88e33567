"""Declarative automation: new upstream data flows down on its own, and only new data.

Dagster's `eager` requests a whole chain in one tick — children are requested because their
parent *will be* rebuilt — even when the rebuilt parent turns out identical. Here a child is
requested only when a parent's data version actually changed (or its own code version did),
so the content-hash data versions stop a cascade under automation as they do under
`formula-assets refresh`. Like `eager`, nothing is requested while a parent is missing or in
progress. Unlike it, nothing is requested while a parent will still change either (it waits on
its own parents), so a change that reaches an asset by several paths builds it once — where
each parent it waits for has a reason of its own to change; a parent that has none yet, because
the change is two levels up, is not waited for (a parser change whose models rebuild
identical builds the report before the audit and again after it); and
assets already missing at the sensor's first evaluation are requested too (with their missing
parents: the sensor emits a backfill, which runs parents first) — except one that a run is
building right then (a `formula-assets refresh` started before the UI), and so nothing below
it either, since those would read its old output. An asset whose run has just ended waits one
evaluation, until that run's materialization is in view: an evaluation can see the run end
before it sees what the run built, and would otherwise request the asset again for parent
data that run had already read.

The `sentence_model` source is observed by the sensor itself: at its first evaluation if it was
never observed, then hourly (`MODEL_OBSERVATION`); a model whose files changed requests the
embedding assets and `fold_models` (which reads a fine-tuned encoder's base models), and the
change flows down like any other.

A weekly schedule observes the Wikidata probe; a changed fingerprint updates
`wikidata_formulae` and the change flows down level by level. With the snapshot source the
fingerprint never changes.

FORMULA_ASSETS_AUTOMATION=off starts the sensor and schedule stopped (e.g. for a UI session
where runs should start only by hand). FORMULA_ASSETS_AUTOMATION_INTERVAL sets how often the
sensor evaluates (60 s; each level of a change waits for one evaluation).
"""

from collections.abc import Sequence

import dagster as dg

from formula_assets.core.settings import Settings

_AC = dg.AutomationCondition
_TRIGGER = (
    _AC.newly_missing()
    | _AC.code_version_changed()
    | _AC.any_deps_match(_AC.data_version_changed()).with_label("any_dep_data_changed")
)
# An evaluation reads the assets' records once, at its start, and a run's status when it asks
# whether the asset is in progress: a run that ends in between looks finished with nothing
# materialized, while the parents' new data it read (built earlier in the same run) is in
# view — the asset would be requested again. One evaluation later its materialization is in
# view and resets the trigger; a run that really left it unbuilt is retried then.
_RUN_JUST_ENDED = (~_AC.in_progress()).newly_true().with_label("its_run_just_ended")
# A parent that will still change: being built, just built (not yet in view), or with a reason
# of its own to rebuild that waits on its own parents. A child waits for all of them, so that a
# change reaching it by several paths (the audit reads wikidata_formulae, cv_folds and, many
# levels below them, fold_models and search_index) builds it once, from the new data of every
# parent, not once per path and in between from new formulae with old models. (A missing
# parent is `any_deps_missing`'s: requested in the same evaluation, it is built first in the
# same run.) Ancestors above the parents are not looked at: conditions cannot recurse, and
# `any_deps_match` unrolled to the graph's depth made an evaluation of the project 3-10 times
# slower (0.6-0.9 s → 2.5 s at three levels, 7 s at eight).
_WILL_CHANGE = (
    (_TRIGGER.since_last_handled() & ~_AC.missing()) | _AC.in_progress() | _RUN_JUST_ENDED
).with_label("will_change")
AUTOMATION = (
    _AC.in_latest_time_window()
    & _TRIGGER.since_last_handled()
    & ~_AC.any_deps_missing()
    & ~_AC.any_deps_match(_WILL_CHANGE).with_label("any_dep_will_change")
    & ~_AC.in_progress()
    & ~_RUN_JUST_ENDED
).with_label("on_new_data") | (
    _AC.initial_evaluation() & _AC.missing() & ~_AC.in_progress() & ~_AC.any_deps_missing()
).with_label("missing_at_start")

MODEL_OBSERVATION_CRON = "0 * * * *"
MODEL_OBSERVATION = (
    ((_AC.initial_evaluation() & _AC.missing()) | _AC.cron_tick_passed(MODEL_OBSERVATION_CRON))
    & ~_AC.in_progress()
).with_label("observe_at_start_then_hourly")


def default_status(settings: Settings | None = None) -> dg.DefaultSensorStatus:
    """Running, unless the `automation` setting is off (FORMULA_ASSETS_AUTOMATION=off)."""
    on = (settings or Settings.from_environment()).automation
    return dg.DefaultSensorStatus.RUNNING if on else dg.DefaultSensorStatus.STOPPED


def automation_sensor(settings: Settings | None = None) -> dg.AutomationConditionSensorDefinition:
    """The sensor, evaluating every `automation_interval` seconds (Dagster's daemon evaluates
    at most every 5 s)."""
    settings = settings or Settings.from_environment()
    return dg.AutomationConditionSensorDefinition(
        "formula_assets_automation",
        target=dg.AssetSelection.all(include_sources=True),  # sentence_model observes itself
        default_status=default_status(settings),
        minimum_interval_seconds=settings.automation_interval,
        description="Evaluates every asset's automation condition (eager, plus missing assets "
        "on the first evaluation).",
    )


def weekly_probe_schedule(
    probe: dg.SourceAsset | str = "wikidata_probe",
    checks: Sequence[dg.AssetCheckKey] = (),
    settings: Settings | None = None,
) -> dg.ScheduleDefinition:
    """Observe the probe weekly, then run `checks` (those comparing the data with it)."""
    running = default_status(settings) == dg.DefaultSensorStatus.RUNNING
    key = dg.AssetKey.from_coercible(probe) if isinstance(probe, str) else probe.key
    job = dg.define_asset_job(
        "observe_wikidata",
        selection=dg.AssetSelection.assets(key) | dg.AssetSelection.checks(*checks),
        description="Observe the Wikidata change probe, then check that the formula data is "
        "built on its fingerprint.",
    )
    return dg.ScheduleDefinition(
        name="weekly_wikidata_probe",
        job=job,
        cron_schedule="0 4 * * 1",
        execution_timezone="UTC",
        default_status=dg.DefaultScheduleStatus.RUNNING
        if running
        else dg.DefaultScheduleStatus.STOPPED,
        description="Mondays 04:00 UTC: observe Wikidata; a new fingerprint triggers a rebuild.",
    )
