"""Each method's settings in each profile, read as one profile's map and as docs' table."""

from dataclasses import fields, replace
from pathlib import Path

import pytest

from formula_assets.core.profiles import PROFILES, Profile
from formula_assets.methods import (
    bag_dual_cl,
    graph_text_cl,
    registry,
    sbert_dual_cl,
    sbert_finetuned_cl,
    symbol_lexicon,
)
from formula_assets.methods.base import TrainedMethod
from formula_assets.methods.profiles import markdown_table, method_settings, settings_rows
from formula_assets.training.settings import MethodSettings

ROOT = Path(__file__).resolve().parents[2]
TRAINED = [m for m in registry.BUILT_IN if isinstance(m, TrainedMethod)]


def test_every_trained_method_has_settings_of_its_class_in_every_profile() -> None:
    for method in TRAINED:
        for profile in PROFILES.values():
            assert isinstance(method.settings(profile), method.settings_type), method.name
    assert graph_text_cl.METHOD.settings_type is graph_text_cl.GraphTextSettings
    assert sbert_finetuned_cl.METHOD.settings_type is sbert_finetuned_cl.FineTunedSettings
    assert sbert_dual_cl.METHOD.settings_type is MethodSettings


def test_the_methods_settings_are_what_docs_training_md_says() -> None:
    """The profile table of docs/training.md, field by field."""
    graph, dual = graph_text_cl.PROFILE_SETTINGS, sbert_dual_cl.PROFILE_SETTINGS
    bag, finetuned = bag_dual_cl.PROFILE_SETTINGS, sbert_finetuned_cl.PROFILE_SETTINGS
    # the default is `medium` without the fine-tuned encoder, the graph encoder 192 wide,
    # sbert_dual_cl 20 epochs
    assert graph["default"] == replace(graph["medium"], hidden=192)
    assert dual["default"] == replace(dual["medium"], epochs=20)
    assert bag["default"] == bag["medium"] and finetuned["default"] == finetuned["medium"]
    medium = graph["medium"]
    assert (medium.hidden, medium.epochs, medium.patience, medium.runs) == (256, 15, 8, 1)
    assert medium.token_text and medium.formula_text and medium.token_dropout == 0.1
    assert (medium.readout, medium.head_hidden, medium.head_dropout) == ("mean+formula", 1024, 0.3)
    assert (medium.semantic_hidden, medium.semantic_dropout) == (1024, 0.3)
    d = dual["medium"]
    assert (d.hidden, d.out_dim, d.epochs, d.patience, d.runs) == (1024, 512, 30, 20, 1)
    smoke = graph["smoke"]
    assert (smoke.hidden, smoke.epochs, smoke.readout) == (64, 10, "mean+formula")
    assert smoke.token_text and smoke.formula_text
    assert (dual["smoke"].hidden, dual["smoke"].epochs, dual["smoke"].runs) == (256, 20, 2)
    assert graph["large"] == replace(medium, hidden=512, patience=15, epochs=60)
    assert dual["large"] == replace(d, runs=2, epochs=60)
    assert bag["medium"].runs == 1 and bag["large"] == replace(bag["medium"], runs=2)
    f = finetuned["medium"]
    assert (f.epochs, f.frozen_layers, f.max_seq_len, f.learning_rate) == (1, 4, 64, 2e-4)
    assert finetuned["large"] == replace(
        f,
        epochs=5,
        learning_rate=1e-4,
        base_model="all-MiniLM-L6-v2+all-mpnet-base-v2",
        frozen_layers=(4, 11),
    )
    for settings in (graph["paper"], dual["paper"]):
        assert (settings.hidden, settings.out_dim, settings.epochs) == (768, 768, 200)
    # the paper's node inputs only: no token text, no formula context, one run
    paper = graph["paper"]
    assert not paper.token_text and not paper.formula_text
    assert paper.readout == "mean" and paper.runs == 1
    assert symbol_lexicon.SETTINGS.epochs == 0


def test_a_profile_reads_as_a_map_from_method_to_settings() -> None:
    smoke = PROFILES["smoke"]
    found = method_settings(smoke, registry.BUILT_IN)
    assert list(found) == [m.name for m in TRAINED]  # bm25 and sbert_no_cl are not trained
    assert found["graph_text_cl"] is graph_text_cl.PROFILE_SETTINGS["smoke"]
    assert found["symbol_lexicon"] is symbol_lexicon.SETTINGS
    rows = dict(settings_rows(smoke, registry.BUILT_IN))
    assert rows["sbert_dual_cl.runs"] == 2 and rows["torch_threads"] == 1
    assert "name" not in rows and "graph_text_cl.semantic_hidden" in rows
    assert "sbert_dual_cl.semantic_hidden" not in rows  # graph_text_cl's own field


def test_a_method_without_settings_for_a_profile_says_so() -> None:
    with pytest.raises(ValueError, match="sbert_dual_cl has no settings for the profile 'mine'"):
        sbert_dual_cl.METHOD.settings(Profile(name="mine"))


class _Partial(TrainedMethod):
    name = "partial_cl"
    profile_settings = {"smoke": sbert_dual_cl.PROFILE_SETTINGS["smoke"]}  # noqa: RUF012


class _Mistyped(TrainedMethod):
    name = "mistyped_cl"
    settings_type = graph_text_cl.GraphTextSettings
    profile_settings = dict(sbert_dual_cl.PROFILE_SETTINGS)  # noqa: RUF012


def test_registering_refuses_a_method_lacking_a_profile_or_of_another_class() -> None:
    with pytest.raises(ValueError, match="partial_cl has no settings for the profile 'default'"):
        registry.register(_Partial())
    with pytest.raises(TypeError, match="mistyped_cl: its settings in 'smoke' are MethodSettings"):
        registry.register(_Mistyped())
    assert "partial_cl" not in [m.name for m in registry.methods()]


def test_docs_profiles_md_lists_every_value_of_every_profile() -> None:
    """The reader's table is the methods' own values, every field of every class."""
    table = markdown_table(registry.BUILT_IN)
    assert table in (ROOT / "docs" / "profiles.md").read_text()
    rows = table.splitlines()[2:]
    shared = len(fields(Profile)) - 1  # less the name
    own = sum(len(fields(m.settings_type)) for m in TRAINED)
    assert len(rows) == shared + own
    assert (
        "| `sbert_dual_cl.learning_rate` | `0.003` | `0.001` | `0.001` | `0.001` | `0.0005` |"
        in rows
    )
    assert "| `leaves_out` | — | `('sbert_finetuned_cl',)` | — | — | — |" in rows


def test_a_profile_leaves_out_only_built_in_methods() -> None:
    with pytest.raises(ValueError, match="leaves out no_such: not a built-in method"):
        registry.built_in(("bm25", "no_such"))
