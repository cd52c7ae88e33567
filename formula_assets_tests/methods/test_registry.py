"""The registry: which names a method may take, what it must be, and how Table 2, the
ensemble, training and search read the one list (checked on a registry of toy methods)."""

import importlib
import os
import subprocess
import sys

import pytest

from formula_assets.core.profiles import PROFILES
from formula_assets.core.protocol import ENSEMBLE
from formula_assets.core.settings import EXTRA_METHODS_ENV, PROFILE_ENV, Settings
from formula_assets.evaluation.lineup import Lineup
from formula_assets.methods import registry
from formula_assets.methods.base import Method, TrainedMethod
from formula_assets.training.settings import MethodSettings

SETTINGS = MethodSettings(
    epochs=1, batch_size=1, learning_rate=0.1, weight_decay=0.0, intra_weight=0.0, patience=1
)


def toy(name: object, base: type = Method, **attributes) -> Method:
    if base is TrainedMethod:  # a trained method has settings in every profile
        attributes = {"profile_settings": dict.fromkeys(PROFILES, SETTINGS), **attributes}
    return type("Toy", (base,), {"name": name, **attributes})()


# registry order: untrained A (a member), trained B (a member), untrained C (no vectors),
# trained D (not a member)
A = toy("a_frozen", ensemble_member=True)
B = toy("b_trained", TrainedMethod, ensemble_member=True)
C = toy("c_lexical", indexed=False)
D = toy("d_trained", TrainedMethod)
EXTRA = toy("extra_method")
NOT_A_METHOD = object()


@pytest.fixture
def toys(monkeypatch: pytest.MonkeyPatch) -> None:
    """A registry holding the four toy methods only (the real one is restored after)."""
    monkeypatch.setattr(registry, "_REGISTERED", {})
    for method in (A, B, C, D):
        assert registry.register(method) is method


def test_the_lists_follow_registry_order_and_each_methods_attributes(toys) -> None:
    assert registry.methods() == (A, B, C, D)
    assert registry.trained() == ("b_trained", "d_trained")
    assert registry.table_2() == (A, C, B, D)  # untrained first, then trained
    assert registry.ensemble_members() == (A, B)
    assert registry.indexed() == ("a_frozen", "b_trained", "d_trained")
    assert registry.search_methods() == (ENSEMBLE, "a_frozen", "b_trained", "d_trained")
    assert registry.lineup() == Lineup(
        methods=(A, C, B, D), trained=("b_trained", "d_trained"), members=(A, B)
    )


def test_get_and_trained_method(toys) -> None:
    assert registry.get("c_lexical") is C
    assert registry.trained_method("d_trained") is D
    with pytest.raises(ValueError, match="unknown method 'zzz'; choose one of a_frozen, b_trained"):
        registry.get("zzz")
    with pytest.raises(ValueError, match="a_frozen is not trained; the trained methods are b_t"):
        registry.trained_method("a_frozen")


@pytest.mark.parametrize("name", ["Upper", "with-dash", "9starts_with_digit", "", 3, None])
def test_a_name_is_lower_case_letters_digits_and_underscores(toys, name) -> None:
    with pytest.raises(ValueError, match="a method name is lower-case"):
        registry.register(toy(name))


@pytest.mark.parametrize("name", [ENSEMBLE, "a_frozen", "d_trained"])
def test_a_name_is_not_taken_twice(toys, name: str) -> None:
    with pytest.raises(ValueError, match=f"the method name '{name}' is taken"):
        registry.register(toy(name))


def test_what_a_method_must_be(toys) -> None:
    with pytest.raises(TypeError, match="make it a TrainedMethod"):
        registry.register(toy("trained_plain", trained=True))
    with pytest.raises(ValueError, match="an ensemble member has vectors"):
        registry.register(toy("member_unindexed", ensemble_member=True, indexed=False))
    # what may be registered: untrained, trained, members with vectors, methods without
    for method in (
        toy("plain"),
        toy("trained_ok", TrainedMethod),
        toy("member_ok", ensemble_member=True),
        toy("lexical_ok", indexed=False),
        toy("trained_member", TrainedMethod, ensemble_member=True),
    ):
        assert registry.register(method) is method
    assert registry.methods()[4:] == tuple(
        registry.get(n)
        for n in ("plain", "trained_ok", "member_ok", "lexical_ok", "trained_member")
    )


def test_extra_methods_are_modules_attributes_that_are_methods(toys) -> None:
    registry._load_extra((f"{__name__}:EXTRA",))
    assert registry.methods()[-1] is EXTRA
    for entry in (f"{__name__}:NOT_A_METHOD", f"{__name__}:missing", "json:dumps"):
        with pytest.raises(TypeError, match=f"{EXTRA_METHODS_ENV}: {entry} is not a method"):
            registry._load_extra((entry,))


def test_the_built_in_methods_come_first() -> None:
    assert registry.methods()[: len(registry.BUILT_IN)] == registry.BUILT_IN


def test_the_environment_names_extra_methods_when_the_registry_is_imported(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(EXTRA_METHODS_ENV, f"{__name__}:EXTRA")
    try:
        importlib.reload(registry)
        assert registry.methods() == (*registry.BUILT_IN, EXTRA)
    finally:
        monkeypatch.delenv(EXTRA_METHODS_ENV)
        importlib.reload(registry)
    assert registry.methods() == registry.BUILT_IN


def test_a_profile_leaves_built_in_methods_out_by_name() -> None:
    kept = registry.built_in(("sbert_finetuned_cl", "bm25"))
    assert [m.name for m in kept] == [
        m.name for m in registry.BUILT_IN if m.name not in {"sbert_finetuned_cl", "bm25"}
    ]
    assert registry.built_in(()) == registry.BUILT_IN
    with pytest.raises(ValueError, match="leaves out no_such: not a built-in method"):
        registry.built_in(("bm25", "no_such"))


def test_the_profile_of_the_environment_decides_the_methods_when_imported(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    leaving_out = next(p for p in PROFILES.values() if p.leaves_out)
    monkeypatch.setenv(PROFILE_ENV, leaving_out.name)
    try:
        importlib.reload(registry)
        names = [m.name for m in registry.methods()]
        assert names == [m.name for m in registry.BUILT_IN if m.name not in leaving_out.leaves_out]
        assert not set(leaving_out.leaves_out) & set(registry.trained())
    finally:
        monkeypatch.undo()  # the session's profile again
        importlib.reload(registry)
    assert registry.methods() == registry.BUILT_IN


def test_settings_other_than_the_registrys_are_refused() -> None:
    profile, _ = registry.loaded_under()
    registry.check_loaded_under(Settings.from_environment())  # the session's own: accepted
    other = next(name for name in PROFILES if name != profile)
    with pytest.raises(registry.RegistryMismatch, match=f"under profile {profile!r}.*{other!r}"):
        registry.check_loaded_under(Settings.from_environment({PROFILE_ENV: other}))
    named = {PROFILE_ENV: profile, EXTRA_METHODS_ENV: f"{__name__}:EXTRA"}
    with pytest.raises(registry.RegistryMismatch, match="extra methods"):
        registry.check_loaded_under(Settings.from_environment(named))


def test_definitions_loaded_after_the_profile_changed_are_refused() -> None:
    """The distributed command's old fault: the method list was fixed under one profile, the
    definitions were loaded under another, and a step read a partition nobody built."""
    script = (
        "import os; import formula_assets.methods.registry;"
        f"os.environ[{PROFILE_ENV!r}] = 'default';"
        "import formula_assets.definitions"
    )
    env = {**os.environ, PROFILE_ENV: "smoke"}
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode != 0
    assert "RegistryMismatch: the methods were registered under profile 'smoke'" in done.stderr


@pytest.mark.parametrize(
    ("entry", "says"),
    [
        ("lacking:METHOD", "lacking_cl has no settings for the profile 'smoke'"),
        ("no_such_module:METHOD", "No module named 'no_such_module'"),
        ("json:dumps", "json:dumps is not a method"),
    ],
)
def test_the_command_names_a_method_it_cannot_register_without_a_traceback(
    tmp_path, entry: str, says: str
) -> None:
    from formula_assets_tests.support.pipeline import CLI

    (tmp_path / "lacking.py").write_text(
        "from formula_assets.methods.base import TrainedMethod\n"
        "class Lacking(TrainedMethod):\n    name = 'lacking_cl'\n"
        "METHOD = Lacking()\n"
    )
    env = {
        **os.environ,
        "PYTHONPATH": str(tmp_path),
        PROFILE_ENV: "smoke",
        EXTRA_METHODS_ENV: entry,
    }
    done = subprocess.run([str(CLI), "settings"], env=env, capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stderr.startswith("formula-assets: the methods cannot be registered: ")
    assert says in done.stderr and "Traceback" not in done.stderr
