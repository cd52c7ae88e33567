"""`make mutation` measures every domain module (or says why not), each by tests that exist,
and its table is written from the recorded scores."""

import ast
from pathlib import Path

import pytest

from mutation.__main__ import GOAL, table
from mutation.operators import mutants, mutate
from mutation.targets import ROOT, Target, load_excluded, load_targets, mirror, scope


def test_every_module_in_scope_is_measured_or_left_out_with_a_reason() -> None:
    targets = [t.module for t in load_targets()]
    excluded = [e.module for e in load_excluded()]
    assert len(targets) == len(set(targets)) and not set(targets) & set(excluded)
    in_scope = scope()
    assert "formula_assets.core.staging" in in_scope and "formula_assets.cli.refresh" in in_scope
    assert sorted(set(in_scope) - set(targets) - set(excluded)) == []
    assert sorted(set(targets) | set(excluded)) == sorted(in_scope)
    assert all(e.reason.strip() for e in load_excluded())


def test_every_target_is_judged_by_test_files_that_exist() -> None:
    for target in load_targets():
        assert (ROOT / target.path).is_file(), target.module
        assert target.tests, target.module
        for test in target.tests:
            assert (ROOT / test).is_file(), f"{target.module}: {test}"


def test_a_module_without_listed_tests_is_judged_by_its_mirror() -> None:
    assert mirror("formula_assets.core.staging") == "formula_assets_tests/core/test_staging.py"
    [staging] = [t for t in load_targets() if t.module == "formula_assets.core.staging"]
    assert staging.tests == ("formula_assets_tests/core/test_staging.py",)


def test_the_table_shows_scores_marks_weak_modules_and_names_the_unmeasured() -> None:
    targets = [Target("formula_assets.a.b", ("t",)), Target("formula_assets.a.c", ("t",)),
               Target("formula_assets.a.d", ("t",))]  # fmt: skip
    entry = {"equivalent": 1, "date": "2026-12-01", "commit": "abc", "seconds": 5}
    scores = {
        "formula_assets.a.b": {**entry, "killed": 9, "counted": 10},
        "formula_assets.a.c": {**entry, "killed": 8, "counted": 10},
    }
    lines = table(scores, targets, []).splitlines()
    assert "| `a/b.py` | 9 / 10 | 90% | 1 | 2026-12-01 | abc | 5 |" in lines
    assert "| `a/c.py` | 8 / 10 | 80% ⚠ |" in "\n".join(lines)
    assert "| `a/d.py` | not measured yet |" in "\n".join(lines)
    assert "**17 / 20**" in "\n".join(lines)
    assert f"2 of 3 modules measured; 1 below {GOAL:.0%}" in "\n".join(lines)


def test_the_docs_page_holds_the_generated_table() -> None:
    text = (Path(ROOT) / "docs" / "mutation.md").read_text(encoding="utf-8")
    begin, end = "<!-- mutation table: begin -->", "<!-- mutation table: end -->"
    assert text.index(begin) < text.index(end)


def test_composed_conditions_are_mutated_only_where_the_entry_asks() -> None:
    source = "rule = a & ~b | c\n"
    assert mutants(source, "m", "m.py") == []  # `&`, `|`, `~` alone: no default operator
    found = mutants(source, "m", "m.py", conditions=True)
    assert sorted(m.operator for m in found) == ["BitAnd→BitOr", "BitOr→BitAnd", "Invert→drop"]
    mutated = {m.operator: ast.unparse(mutate(source, m)) for m in found}
    assert mutated == {
        "BitOr→BitAnd": "rule = a & ~b & c",
        "BitAnd→BitOr": "rule = a | ~b | c",
        "Invert→drop": "rule = a & b | c",
    }
    asking = [t.module for t in load_targets() if t.conditions]
    assert asking == ["formula_assets.defs.automation"]


def test_an_unknown_operator_set_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "targets.toml"
    path.write_text('[[module]]\nmodule = "formula_assets.a.b"\noperators = ["bitwise"]\n')
    with pytest.raises(ValueError, match=r"a\.b: unknown operator sets \[.bitwise.\]"):
        load_targets(path)
