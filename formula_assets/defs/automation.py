"""Declarative automation: what changed flows down on its own, built by refresh's rule.

What may be built now is decided by one rule, `defs.plan.buildable`, which `formula-assets
refresh` follows too: an asset (or partition) that Dagster's stale status calls stale or
missing, none of whose ancestors is. The sensor's condition asks that rule (the `buildable`
condition, Python evaluated on the code server) and adds when to look: only for a new reason
of its own since the asset was last requested or built (new upstream data, a new code
version, newly missing; so a failed build is not retried every evaluation), never while it or
a parent is being built, and not before the sources above it were first observed. So a change
that reaches an asset by several paths builds it once, after every ancestor it waits for,
whatever the length of the paths — the order `refresh` builds in. An identical rebuild
(content-hash data versions) leaves the assets below it fresh, and nothing more is built. On
the sensor's first evaluation every asset already missing whose ancestors are present is
requested; the levels below follow as their parents are built. An asset whose run has just
ended waits one evaluation, until that run's materialization is in view: an evaluation can
see the run end before it sees what the run built, and would otherwise request the asset
again.

The `sentence_model` source is observed by the sensor itself: at its first evaluation if it was
never observed, then hourly (`MODEL_OBSERVATION`); a model whose files changed makes the
embedding assets and `fold_models` (which reads a fine-tuned encoder's base models) stale, and
the change flows down like any other.

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
from formula_assets.defs.dagster_internals import evaluation_instance
from formula_assets.defs.plan import buildable, stale_in

_AC = dg.AutomationCondition


class Buildable(dg.AutomationCondition):
    """True for the targets `defs.plan.buildable` builds now (stale or missing, no ancestor
    that is), computed once per evaluation from Dagster's stale status."""

    @property
    def name(self) -> str:
        return "buildable"

    def evaluate(self, context: dg.AutomationContext) -> dg.AutomationResult:
        partitions = _buildable_now(context).get(context.key, set())
        if not partitions:
            true = context.get_empty_subset()
        elif context.partitions_def is None:
            true = context.candidate_subset
        else:
            keys = {p for p in partitions if p is not None}
            true = context.candidate_subset.compute_intersection_with_partition_keys(keys)
        return dg.AutomationResult(context=context, true_subset=true)


# The rule's answer for the evaluation under way (one asset graph view per evaluation).
_LAST: list[tuple[object, dict[dg.AssetKey, set[str | None]]]] = []


def _buildable_now(context: dg.AutomationContext) -> dict[dg.AssetKey, set[str | None]]:
    view = context.asset_graph_view
    last = _LAST[0] if _LAST else None
    if last is not None and last[0] is view:
        return last[1]
    graph = context.asset_graph
    targets: dict[dg.AssetKey, set[str | None]] = {}
    for entry in buildable(graph, stale_in(graph, evaluation_instance(context))):
        targets.setdefault(entry.target.key, set()).add(entry.target.partition)
    _LAST[:] = [(view, targets)]
    return targets


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
_WAITING = _AC.in_progress() | _AC.any_deps_in_progress() | _RUN_JUST_ENDED
AUTOMATION = (
    _AC.in_latest_time_window()
    & _TRIGGER.since_last_handled()
    & ~_AC.any_deps_missing()
    & ~_WAITING
    & Buildable()
).with_label("on_new_data") | (
    _AC.initial_evaluation()
    & _AC.missing()
    & ~_AC.any_deps_missing()
    & ~(_AC.in_progress() | _AC.any_deps_in_progress())
    & Buildable()
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
        description="Builds what refresh would build: each asset stale or missing with no "
        "ancestor that is, once it has a new reason (defs/plan.py, defs/automation.py).",
        use_user_code_server=True,  # the `buildable` condition is Python
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
