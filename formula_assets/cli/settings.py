"""`formula-assets settings`: every setting's effective value and where it came from, then
what the chosen profile sets, method by method."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from formula_assets.core.settings import Explained, Settings

HEADER = ("setting", "variable", "value", "from")


def rows(settings: Settings) -> list[tuple[str, str, str, str]]:
    """One row per setting: name, variable, value (or why it is invalid), origin."""

    def value(e: Explained) -> str:
        return e.value if e.problem is None else f"invalid: {e.problem}"

    return [(e.setting.name, e.setting.env, value(e), e.source) for e in settings.explained()]


def table(lines: Sequence[tuple[str, ...]]) -> list[str]:
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]) - 1)]
    return [
        "  ".join([*(cell.ljust(w) for cell, w in zip(line, widths, strict=False)), line[-1]])
        for line in lines
    ]


def profile_rows(settings: Settings) -> list[tuple[str, str]]:
    """(setting, value) of the profile `settings` choose: its shared settings, then each
    method's it trains (as `method.setting`)."""
    from formula_assets.core.profiles import get_profile
    from formula_assets.methods import registry
    from formula_assets.methods.profiles import settings_rows

    profile = get_profile(settings.profile)
    methods = [m for m in registry.methods() if m.name not in profile.leaves_out]
    return [
        (key, "—" if value is None or value == () else str(value))
        for key, value in settings_rows(profile, methods)
    ]


def run_settings(settings: Settings | None = None) -> int:
    """Print the tables; 1 when a variable holds a value its setting refuses (the profile's
    table is then left out: which profile is meant is unknown)."""
    settings = settings or Settings.from_environment()
    found = rows(settings)
    for line in table([HEADER, *found]):
        print(line)
    bad = [name for name, _, value, _ in found if value.startswith("invalid: ")]
    if bad:
        print(f"invalid setting(s): {', '.join(bad)}", file=sys.stderr)
        return 1
    print(f"\nthe {settings.profile!r} profile (every profile: docs/profiles.md)")
    for line in table([("setting", "value"), *profile_rows(settings)]):
        print(line)
    return 0
