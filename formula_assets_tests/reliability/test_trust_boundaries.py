"""Trust boundaries: nothing from the data lake is unpickled, queries are never pasted
together from untrusted text, and the UI listens on localhost unless told otherwise."""

import ast
import pickle
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from upath import UPath

from formula_assets.ingest.sparql import detail_query
from formula_assets.training.artifacts import (
    WEIGHTS,
    TrainedModel,
    current_version,
    load_model,
    save_model,
)
from formula_assets_tests.training.descriptions import described

ROOT = Path(__file__).resolve().parents[2]


class _Payload:
    """Unpickling this would create a marker file: proof that code ran."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


# flake8-bandit rules (through ruff) for what crosses a trust boundary: pickle and marshal,
# eval and exec, unsafe YAML, shell commands, SQL built from strings, URLs of any scheme.
TRUST_RULES = "S301,S302,S307,S102,S506,S602,S604,S605,S608,S310"


def ruff(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(Path(sys.executable).parent / "ruff"), "check", "--no-cache", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_package_passes_the_bandit_rules_of_ruff() -> None:
    checked = ruff("--select", TRUST_RULES, "formula_assets")
    assert checked.returncode == 0, checked.stdout


def test_the_bandit_rules_see_calls_split_over_lines(tmp_path: Path) -> None:
    (tmp_path / "sample.py").write_text(
        "import pickle\nimport yaml\n\n"
        "def f(data, text):\n"
        "    pickle.loads(\n        data\n    )\n"
        "    return yaml.load(\n        text\n    )\n"
    )
    found = ruff("--select", TRUST_RULES, "--isolated", "sample.py", cwd=tmp_path)
    assert "S301" in found.stdout and "S506" in found.stdout


def unsafe_loads(tree: ast.AST) -> list[int]:
    """Lines of calls that unpickle: `torch.load` without `weights_only=True`, `joblib.load`,
    anything with `allow_pickle=True` (no bandit rule covers these)."""
    lines = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        keywords = {k.arg: k.value for k in node.keywords}
        pickles = isinstance(keywords.get("allow_pickle"), ast.Constant) and bool(
            keywords["allow_pickle"].value
        )
        func = node.func
        name = (
            f"{func.value.id}.{func.attr}"
            if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
            else ""
        )
        weights_only = keywords.get("weights_only")
        safe_torch = isinstance(weights_only, ast.Constant) and weights_only.value is True
        if pickles or name == "joblib.load" or (name == "torch.load" and not safe_torch):
            lines.append(node.lineno)
    return lines


def test_nothing_in_the_package_unpickles() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in (ROOT / "formula_assets").rglob("*.py")
        for line in unsafe_loads(ast.parse(path.read_text()))
    ]
    assert offenders == []


def test_the_unpickling_check_sees_calls_split_over_lines() -> None:
    sample = (
        "import torch, numpy, joblib\n"
        "torch.load(\n    path\n)\n"
        "torch.load(path, weights_only=True)\n"
        "numpy.load(path,\n    allow_pickle=True)\n"
        "joblib.load(path)\n"
    )
    assert unsafe_loads(ast.parse(sample)) == [2, 6, 8]


def test_pickled_weights_are_refused_without_running_code(tmp_path: Path) -> None:
    directory = UPath(tmp_path) / "fold_models" / "1" / "sbert_dual_cl"
    save_model(TrainedModel(described(), {"w": torch.zeros(3)}), directory)
    marker = tmp_path / "code-ran"
    (current_version(directory) / WEIGHTS).write_bytes(pickle.dumps(_Payload(marker)))
    with pytest.raises(Exception) as raised:
        load_model(directory)
    assert not marker.exists()
    assert "pickle" not in type(raised.value).__module__


@pytest.mark.parametrize(
    "hostile",
    [
        "Q1 } ?s ?p ?o . {",
        "Q1\n} UNION { ?x ?y ?z",
        "wd:Q1",
        "Q1#",
        "<http://evil/>",
        "Q01",
        "",
    ],
)
def test_queries_take_only_plain_qids(hostile: str) -> None:
    with pytest.raises(ValueError, match="not a QID"):
        detail_query(["Q42", hostile])


def test_ui_listens_on_localhost_by_default() -> None:
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^HOST \?= 127\.0\.0\.1$", makefile, re.M)
    assert "-h $(HOST)" in makefile
    readme = (ROOT / "README.md").read_text()
    assert "no authentication" in readme
