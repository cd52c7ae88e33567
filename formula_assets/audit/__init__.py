"""The annotation audit: each formula item scored against every item's annotation by the fold
models that never trained on it, so Wikidata editors can look first at the annotations the
models find least plausible and at the concepts an annotation may lack (docs/audit.md).

Dagster-free; `defs/audit/annotation_audit.py` runs it as the `annotation_audit` asset.
"""
