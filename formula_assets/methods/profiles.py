"""A profile read as a map from each trained method to its settings.

The values are each method's own (`PROFILE_SETTINGS` in its module, or its `settings`
hook); this module only gathers them for readers: `formula-assets settings` prints the
profile's, docs/profiles.md tabulates every profile's (a test keeps the two equal).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, fields
from typing import Any

from formula_assets.core.profiles import PROFILES, Profile
from formula_assets.methods.base import Method, TrainedMethod
from formula_assets.training.settings import MethodSettings


def method_settings(profile: Profile, methods: Sequence[Method]) -> dict[str, MethodSettings]:
    """Each trained method's settings in `profile`, by method name, in the methods' order."""
    return {m.name: m.settings(profile) for m in methods if isinstance(m, TrainedMethod)}


def settings_rows(profile: Profile, methods: Sequence[Method]) -> list[tuple[str, Any]]:
    """(setting, value) for every shared field of the profile, then every field of every
    method's settings as `method.field`."""
    shared = [(f.name, getattr(profile, f.name)) for f in fields(profile) if f.name != "name"]
    own = [
        (f"{method}.{key}", value)
        for method, settings in method_settings(profile, methods).items()
        for key, value in asdict(settings).items()
    ]
    return shared + own


def markdown_table(methods: Sequence[Method]) -> str:
    """Every setting of every profile for these methods: the table of docs/profiles.md."""
    names = list(PROFILES)
    columns = [dict(settings_rows(PROFILES[n], methods)) for n in names]
    lines = [
        "| setting | " + " | ".join(f"`{n}`" for n in names) + " |",
        "|---|" + "---|" * len(names),
    ]
    for key in columns[0]:
        lines.append(f"| `{key}` | " + " | ".join(cell(c[key]) for c in columns) + " |")
    return "\n".join(lines)


def cell(value: Any) -> str:
    """A value as the tables show it (— for none)."""
    return "—" if value is None or value == () else f"`{value!r}`"
