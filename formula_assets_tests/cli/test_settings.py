"""`formula-assets settings`: one aligned line per setting, its variable, its value (or why
that value is refused) and where it came from; exit 1 when any is refused."""

from __future__ import annotations

import pytest

from formula_assets.cli.settings import HEADER, rows, run_settings, table
from formula_assets.core.settings import SETTINGS, Settings


def test_every_column_but_the_last_is_padded_to_its_widest_cell() -> None:
    lines = table([("a", "bb", "c"), ("ddd", "e", "ffff")])
    assert lines == ["a    bb  c", "ddd  e   ffff"]
    assert table([("only", "one")]) == ["only  one"]


def test_one_row_per_setting_in_order_with_its_origin() -> None:
    found = rows(Settings.from_environment({"FORMULA_ASSETS_PROFILE": "large"}))
    assert [r[0] for r in found] == [s.name for s in SETTINGS]
    assert ("profile", "FORMULA_ASSETS_PROFILE", "large", "environment") in [
        (n, v, value, origin.split()[0]) for n, v, value, origin in found
    ]


def test_a_refused_value_is_shown_with_the_reason_and_fails(
    capsys: pytest.CaptureFixture[str],
) -> None:
    bad = Settings.from_environment({"FORMULA_ASSETS_SAMPLE": "many"})
    assert run_settings(bad) == 1
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert lines[0].split() == list(HEADER)
    assert len(lines) == 1 + len(SETTINGS)
    assert captured.err == "invalid setting(s): sample\n"
    [sample] = [line for line in lines if line.startswith("sample ")]
    assert "invalid: FORMULA_ASSETS_SAMPLE must be an integer, got 'many'" in sample
    assert run_settings(Settings.from_environment({})) == 0
    assert capsys.readouterr().err == ""
