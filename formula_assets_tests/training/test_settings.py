"""The settings every method's own class extends."""

from dataclasses import FrozenInstanceError, replace

import pytest

from formula_assets.training.settings import MethodSettings, settings_as

SETTINGS = MethodSettings(
    epochs=3, batch_size=8, learning_rate=0.1, weight_decay=0.0, intra_weight=0.0, patience=2
)


class Wider(MethodSettings):
    pass


def test_epochs_may_be_zero_but_not_negative() -> None:
    """0 epochs: a method fitted in closed form (training.fold loads what it fitted)."""
    assert replace(SETTINGS, epochs=0).epochs == 0
    with pytest.raises(ValueError, match="epochs cannot be negative"):
        replace(SETTINGS, epochs=-1)


def test_a_model_needs_at_least_one_run() -> None:
    assert SETTINGS.runs == 1
    with pytest.raises(ValueError, match="at least one run, not 0"):
        replace(SETTINGS, runs=0)


def test_settings_are_keyword_only() -> None:
    with pytest.raises(TypeError):
        MethodSettings(3, 8, 0.1, 0.0, 0.0, 2)  # type: ignore[misc]


def test_settings_as_a_methods_class_refuses_another_class() -> None:
    assert settings_as(SETTINGS, MethodSettings, "m") is SETTINGS
    with pytest.raises(TypeError, match="m: its settings are Wider, the description holds "):
        settings_as(SETTINGS, Wider, "m")


def test_a_method_without_towers_leaves_their_sizes_at_zero_and_settings_are_frozen() -> None:
    """The lexicon and the fine-tuned encoder state only their schedule (their towers are
    not MLPs); settings are values, shared by every model of a profile."""
    assert (SETTINGS.out_dim, SETTINGS.hidden, SETTINGS.dropout) == (0, 0, 0.0)
    with pytest.raises(FrozenInstanceError):
        SETTINGS.epochs = 4  # type: ignore[misc]
