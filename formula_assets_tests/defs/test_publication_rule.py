"""Every check that may gate a table settles it (`defs.publication.settle`): a blocking check
that forgot would leave its table staged for good, which only a full build would show."""

import ast
from pathlib import Path

from formula_assets.defs import publication

DEFS_FOLDER = Path(publication.__file__).parent


def _name(node: ast.expr) -> str:
    target = node.func if isinstance(node, ast.Call) else node
    return target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")


def _keyword(node: ast.expr, name: str) -> ast.expr | None:
    if not isinstance(node, ast.Call):
        return None
    return next((k.value for k in node.keywords if k.arg == name), None)


def gating_functions(tree: ast.Module) -> list[ast.FunctionDef]:
    """Functions decorated as blocking checks, or as assets that evaluate checks in-step."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef):
            continue
        for decorator in node.decorator_list:
            blocking = _keyword(decorator, "blocking")
            if (
                _name(decorator) == "asset_check"
                and isinstance(blocking, ast.Constant)
                and blocking.value is True
            ) or (_name(decorator) == "multi_asset" and _keyword(decorator, "check_specs")):
                found.append(node)
    return found


def settles(function: ast.FunctionDef) -> bool:
    return any(
        isinstance(node, ast.Call) and _name(node) == "settle" for node in ast.walk(function)
    )


def test_every_gating_check_settles() -> None:
    checked, missing = [], []
    for path in sorted(DEFS_FOLDER.rglob("*.py")):
        for function in gating_functions(ast.parse(path.read_text())):
            name = f"{path.relative_to(DEFS_FOLDER)}:{function.name}"
            (checked if settles(function) else missing).append(name)
    assert missing == []
    # the rule sees the project's blocking checks (the four vector checks are one factory)
    assert len(checked) >= 9
    assert "checks.py:valid" in checked


def test_the_rule_sees_a_check_that_does_not_settle() -> None:
    source = (
        "@dg.asset_check(asset=a, blocking=True)\n"
        "def forgot(a):\n"
        "    return check_result(outcome(a))\n"
    )
    [function] = gating_functions(ast.parse(source))
    assert not settles(function)
