"""The model description: a typed, frozen `config.json` that files of every earlier version
of the project still load into, and that the current code writes back unchanged."""

import dataclasses
import json

import pytest

from formula_assets.methods import registry
from formula_assets.methods.graph_text_cl import GraphTextSettings
from formula_assets.training.artifacts import ModelDescription, RunSummary, SplitSizes

# A graph_text_cl config.json as the code before the typed description wrote it (smoke
# profile; the vocabulary cut to six tokens).
WRITTEN_BEFORE = json.loads(
    """
{
    "best_epoch": 7,
    "best_validation_mrr": 0.49289673117846483,
    "deterministic": true,
    "device": "cpu",
    "epochs_run": 10,
    "fold": 1,
    "formula_text_dim": 384,
    "method": "graph_text_cl",
    "profile": "smoke",
    "python": "3.11.7",
    "runs": [
        {
            "best_epoch": 7,
            "best_validation_mrr": 0.49289673117846483,
            "epochs_run": 10,
            "seed": 1,
            "stopped_early": false,
            "train_seconds": 8.35
        }
    ],
    "seed": 1,
    "selection_fraction": 0.1,
    "semantic_dim": 384,
    "settings": {
        "batch_size": 64,
        "dropout": 0.1,
        "epochs": 10,
        "formula_text": true,
        "head_dropout": 0.3,
        "head_hidden": 128,
        "hidden": 64,
        "intra_weight": 0.1,
        "layers": 2,
        "learning_rate": 0.003,
        "out_dim": 64,
        "patience": 10,
        "readout": "mean+formula",
        "runs": 1,
        "semantic_dropout": 0.1,
        "semantic_hidden": 128,
        "token_dropout": 0.1,
        "token_text": true,
        "weight_decay": 0.0001
    },
    "split_sizes": {
        "selection": 20,
        "test": 78,
        "train": 272,
        "validation": 30
    },
    "stopped_early": false,
    "structural_dim": 384,
    "token_text_dim": 384,
    "torch": "2.13.0+cpu",
    "torch_threads": 1,
    "train_seconds": 8.67,
    "unseen_test_tokens": {
        "distinct": 26,
        "formulae_with_any": 22,
        "occurrences": 36,
        "share_of_occurrences": 0.01861427094105481
    },
    "validation": {
        "mrr": 0.49289673117846483,
        "mrr_semantic_to_syntactic": 0.5011218703323965,
        "mrr_syntactic_to_semantic": 0.48467159202453314,
        "recall_at_10_semantic_to_syntactic": 0.8666666666666667,
        "recall_at_10_syntactic_to_semantic": 0.9
    },
    "validation_fraction": 0.1,
    "vocabulary": [
        "[PAD]",
        "[UNK]",
        "group",
        "subscript",
        "(",
        ")"
    ]
}
"""
)
# The first version's config: no selection split, no runs, no token texts or formula
# context, no determinism record, the settings of then (nine entries).
FIRST_VERSION = {
    "method": "graph_text_cl",
    "fold": 3,
    "profile": "smoke",
    "settings": {
        "hidden": 64,
        "out_dim": 64,
        "dropout": 0.1,
        "epochs": 10,
        "batch_size": 64,
        "learning_rate": 0.003,
        "weight_decay": 0.0001,
        "intra_weight": 0.1,
        "patience": 10,
    },
    "seed": 3,
    "semantic_dim": 384,
    "structural_dim": 384,
    "split_sizes": {"train": 300, "validation": 30, "test": 70},
    "validation_fraction": 0.1,
    "vocabulary": ["[PAD]", "[UNK]", "group", "x"],
    "best_epoch": 8,
    "best_validation_mrr": 0.41,
    "epochs_run": 10,
    "stopped_early": False,
    "train_seconds": 9.5,
    "device": "cpu",
    "torch_threads": 1,
    "torch": "2.5.0",
    "python": "3.11.7",
}


def test_a_file_written_before_loads_typed_and_is_written_back_unchanged() -> None:
    described = ModelDescription.from_json(WRITTEN_BEFORE, GraphTextSettings)
    assert described.settings.readout == "mean+formula" and described.settings.runs == 1
    assert described.split_sizes == SplitSizes(train=272, validation=30, selection=20, test=78)
    assert described.runs == (
        RunSummary(1, 7, WRITTEN_BEFORE["best_validation_mrr"], 10, False, 8.35),
    )
    assert (described.token_text_dim, described.formula_text_dim) == (384, 384)
    assert described.vocabulary == tuple(WRITTEN_BEFORE["vocabulary"])
    assert described.deterministic is True and described.torch_version == "2.13.0+cpu"
    assert described.extra == {}
    assert described.to_json() == WRITTEN_BEFORE
    assert (
        ModelDescription.from_json(json.loads(json.dumps(described.to_json())), GraphTextSettings)
        == described
    )


def test_the_first_versions_file_loads_with_the_defaults_of_what_came_later() -> None:
    described = ModelDescription.from_json(FIRST_VERSION, GraphTextSettings)
    assert described.split_sizes.selection == 0 and described.selection_fraction == 0.0
    assert described.runs == () and described.deterministic is None
    settings = described.settings
    assert (settings.layers, settings.readout, settings.token_text, settings.runs) == (
        2,
        "mean",
        False,
        1,
    )
    network = registry.trained_method("graph_text_cl").build(described)
    assert network.graph.token.num_embeddings == 4  # the recorded vocabulary's size
    again = ModelDescription.from_json(described.to_json(), GraphTextSettings)
    assert again == described
    assert "deterministic" not in described.to_json()  # not recorded then, not invented now


def test_a_dual_encoder_description_names_no_graph_inputs() -> None:
    described = dataclasses.replace(
        ModelDescription.from_json(FIRST_VERSION, GraphTextSettings),
        method="sbert_dual_cl",
        vocabulary=(),
    )
    written = described.to_json()
    assert not {"vocabulary", "token_text_dim", "formula_text_dim", "unseen_test_tokens"} & set(
        written
    )


def test_a_config_that_cannot_be_rebuilt_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match=r"GraphTextSettings does not have: \['width'\]"):
        ModelDescription.from_json(
            {**FIRST_VERSION, "settings": {**FIRST_VERSION["settings"], "width": 3}},
            GraphTextSettings,
        )
    # a graph model's description read without its method's class: its own fields are refused
    with pytest.raises(ValueError, match=r"MethodSettings does not have: \['formula_text'"):
        ModelDescription.from_json(WRITTEN_BEFORE)
    incomplete = {k: v for k, v in FIRST_VERSION.items() if k not in ("seed", "settings")}
    with pytest.raises(ValueError, match="lacks seed, settings"):
        ModelDescription.from_json(incomplete)


def test_entries_it_does_not_name_are_kept() -> None:
    described = ModelDescription.from_json({**FIRST_VERSION, "note": {"by": "another tool"}})
    assert described.extra == {"note": {"by": "another tool"}}
    assert described.to_json()["note"] == {"by": "another tool"}
    with pytest.raises(dataclasses.FrozenInstanceError):
        described.seed = 4  # type: ignore[misc]
