"""Observing the sources before asking what is stale: `formula-assets stale` and `refresh`
both call `observe`, so what `stale` lists is what a `refresh` with the same options builds.

An observation records a source's version; it materializes nothing. `sentence_model` (a hash
of the sentence models' files, a fraction of a second) is observed every time, so a model
changed in place makes the embedding assets stale; `wikidata_probe` (a request to the
source) only when asked, as the weekly schedule does.
"""

from __future__ import annotations

import dagster as dg

from formula_assets.cli.runs import REFRESH_TAG, Print, RefreshError
from formula_assets.defs.plan import Entry, stale_entries

OBSERVE_JOB = "observe_wikidata"
MODEL_JOB = "observe_sentence_model"
MODEL_KEY = dg.AssetKey("sentence_model")


def observe(
    defs: dg.Definitions, instance: dg.DagsterInstance, echo: Print, probe: bool = False
) -> None:
    """The sentence model always; the change probe when `probe`."""
    observe_sentence_model(defs, instance, echo)
    if probe:
        observe_sources(defs, instance, echo)


def observed_stale_entries(
    defs: dg.Definitions, instance: dg.DagsterInstance, echo: Print, probe: bool = False
) -> list[Entry]:
    """`formula-assets stale`: what a refresh with the same `probe` would build, and why."""
    observe(defs, instance, echo, probe)
    return stale_entries(defs, instance)


def observe_sources(defs: dg.Definitions, instance: dg.DagsterInstance, echo: Print) -> None:
    """Observe the change probe now, as the weekly schedule would."""
    echo("observing wikidata_probe")
    result = defs.resolve_job_def(OBSERVE_JOB).execute_in_process(
        instance=instance, tags={REFRESH_TAG: "true"}, raise_on_error=False
    )
    if not result.success:
        raise RefreshError("observing wikidata_probe failed; the last good data is kept")


def _observed_version(instance: dg.DagsterInstance, key: dg.AssetKey) -> str | None:
    records = instance.fetch_observations(key, limit=1).records
    return records[0].asset_observation.data_version if records else None


def _failure(result: dg.ExecuteInProcessResult) -> str:
    for event in result.get_step_failure_events():
        error = event.step_failure_data.error
        while error is not None and error.cause is not None:  # the user code's own error
            error = error.cause
        if error is not None:
            return error.message.strip()
    return "see the run log in the UI"


def observe_sentence_model(defs: dg.Definitions, instance: dg.DagsterInstance, echo: Print) -> None:
    """Hash the sentence models' files; a new hash makes the assets that read them stale.

    The hash is compared first: an observation run costs more than a second of event writes,
    so one is recorded only when the files changed (or were never observed)."""
    from formula_assets.defs.semantics.sentence_model import current_version
    from formula_assets.semantics.models import EmbeddingModelError

    if not defs.resolve_asset_graph().has(MODEL_KEY):
        return
    before = _observed_version(instance, MODEL_KEY)
    try:
        if current_version() == before:
            return
    except (EmbeddingModelError, OSError) as exc:  # not there, or a file it cannot read
        raise RefreshError(f"the sentence model cannot be identified: {exc}") from None
    result = defs.resolve_job_def(MODEL_JOB).execute_in_process(
        instance=instance, tags={REFRESH_TAG: "true"}, raise_on_error=False
    )
    if not result.success:
        raise RefreshError(
            f"observing sentence_model failed: {_failure(result)}; the last good data is kept"
        )
    after = _observed_version(instance, MODEL_KEY)
    if before is not None and after != before:
        echo(f"sentence_model changed ({before} → {after}): its files are not the same")
