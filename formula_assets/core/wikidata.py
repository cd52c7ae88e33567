"""What a Wikidata item identifier is: every part that reads or writes one (the sources, the
QuickStatements lines of the audit) checks it here, without importing a source's code or its
shipped data."""

from __future__ import annotations

import re

QID = re.compile(r"^Q[1-9][0-9]{0,11}$")


def is_qid(value: str) -> bool:
    return bool(QID.match(value))
