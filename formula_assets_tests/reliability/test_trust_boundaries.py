"""Trust boundaries: nothing from the data lake is unpickled, queries are never pasted
together from untrusted text, and the UI listens on localhost unless told otherwise."""

import pickle
import re
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

ROOT = Path(__file__).resolve().parents[2]


class _Payload:
    """Unpickling this would create a marker file: proof that code ran."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


def test_no_unsafe_deserialisation_in_the_package() -> None:
    unsafe = re.compile(
        r"\bpickle\.loads?\(|\bjoblib\.load\(|\bdill\.|allow_pickle\s*=\s*True|"
        r"torch\.load\((?![^)]*weights_only\s*=\s*True)"
    )
    offenders = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in (ROOT / "formula_assets").rglob("*.py")
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if unsafe.search(line)
    ]
    assert offenders == []


def test_pickled_weights_are_refused_without_running_code(tmp_path: Path) -> None:
    directory = UPath(tmp_path) / "fold_models" / "1" / "sbert_dual_cl"
    save_model(TrainedModel("sbert_dual_cl", 1, {}, {"w": torch.zeros(3)}), directory)
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
