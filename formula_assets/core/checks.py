"""What a data check concludes, and the rule shared by every embedding table: finite vectors
of the declared width."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from formula_assets.core.arrow import expected_dimension

SAMPLE = 10  # offending qids listed in a check's metadata


@dataclass
class Outcome:
    """A check rule's verdict, its one-line description and details for the UI."""

    passed: bool
    description: str
    metadata: dict[str, Any] = field(default_factory=dict)


def vectors_valid(table: pa.Table, column: str = "embedding") -> Outcome:
    """Fixed-width float32 vectors of the declared width, all finite, none all-zero."""
    field_type = table.schema.field(column).type
    declared = expected_dimension(table)
    problems: list[str] = []
    if not (pa.types.is_fixed_size_list(field_type) and field_type.value_type == pa.float32()):
        problems.append(f"{column} is {field_type}, not a fixed-size float32 list")
        return Outcome(False, "; ".join(problems), {"problems": problems})
    width = field_type.list_size
    if declared is None:
        problems.append("no expected dimension recorded")
    elif declared != width:
        problems.append(f"vectors have {width} dimensions, expected {declared}")
    flat = table.column(column).combine_chunks()
    if flat.null_count:
        problems.append(f"{flat.null_count} null vectors")
    values = flat.flatten().to_numpy(zero_copy_only=False).reshape(-1, width)
    non_finite = int((~np.isfinite(values)).any(axis=1).sum())
    zero = int((np.abs(values).sum(axis=1) == 0).sum())
    if non_finite:
        problems.append(f"{non_finite} vectors with NaN or inf")
    if zero:
        problems.append(f"{zero} all-zero vectors")
    return Outcome(
        not problems,
        "; ".join(problems) or f"{table.num_rows:,} finite vectors of {width} dimensions",
        {"dimension": width, "non_finite": non_finite, "all_zero": zero, "rows": table.num_rows},
    )
