"""The code location for a Celery deployment: every step of a run becomes a Celery task.

Workers on other machines (`dagster-celery worker start -A dagster_celery.app`) pick up the
steps; the fold × method partitions of `fold_models` spread over them. `fold_models` is in
the concurrency pool `training`: limit it to the number of GPUs (one model per GPU at a
time) with `dagster instance concurrency set training 1`, or with the `concurrency.pools`
section of `formula_assets/deploy/dagster.yaml`. The data lake must be shared storage
(FORMULA_ASSETS_DATA_LAKE=s3://… or another fsspec URL), as must the Dagster instance.

Validate: dagster definitions validate -m formula_assets.deploy.celery
"""

import dagster as dg
from dagster_celery import celery_executor

from formula_assets import definitions

BROKER_ENV = "FORMULA_ASSETS_CELERY_BROKER"

executor = celery_executor.configured({"broker": {"env": BROKER_ENV}, "backend": "rpc://"})

defs = dg.Definitions.merge(definitions.defs, dg.Definitions(executor=executor))
