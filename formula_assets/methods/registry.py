"""Every method of the comparison, in one place: `fold_models`' method partitions, Table 2's
rows, the score ensemble's members, the search index and `formula-assets search --method`
all read this list.

Adding a method is a module in this package plus its line in `BUILT_IN` (see
docs/adding-a-method.md). Methods defined outside the package are added after the built-in
ones by naming them in FORMULA_ASSETS_EXTRA_METHODS (`module:attribute`, comma-separated);
each is added with `register`, and its module's source enters every code version that
depends on the registry, so lineage sees it as it sees the built-in ones. A profile may leave
built-in methods out (`Profile.leaves_out`: not trained, not scored). Both settings are read
once, when this module is first imported: the definitions' partitions are fixed then, and
`check_loaded_under` refuses definitions loaded later under other values (a process whose
environment changed in between would plan other partitions than its workers build).
"""

from __future__ import annotations

import importlib
import re
from typing import TYPE_CHECKING

from formula_assets.core.profiles import PROFILES, get_profile
from formula_assets.core.protocol import ENSEMBLE
from formula_assets.core.settings import EXTRA_METHODS_ENV, PROFILE_ENV, Settings
from formula_assets.methods import (
    bag_dual_cl,
    bm25,
    graph_text_cl,
    sbert_dual_cl,
    sbert_finetuned_cl,
    sbert_no_cl,
    symbol_lexicon,
)
from formula_assets.methods.base import Method, RegistrationError, TrainedMethod

if TYPE_CHECKING:
    from formula_assets.evaluation.lineup import Lineup

# The methods named outside the package (and their source) and those the profile leaves out
# change what is trained and scored.
RESULT_SETTINGS = ("extra_methods", "profile")

# Their order is Table 2's within its groups (the untrained methods, then the trained ones;
# the ensemble last), the order of the method partitions, of the ensemble's members (whose
# weights are chosen in this order) and of the search index's rows.
BUILT_IN: tuple[Method, ...] = (
    bm25.METHOD,
    graph_text_cl.METHOD,
    sbert_dual_cl.METHOD,
    sbert_no_cl.METHOD,
    sbert_finetuned_cl.METHOD,
    bag_dual_cl.METHOD,
    symbol_lexicon.METHOD,
)
_NAME = re.compile(r"[a-z][a-z0-9_]*")
_REGISTERED: dict[str, Method] = {}


def register(method: Method) -> Method:
    """Add a method after those registered so far. Its name becomes a partition key, a
    folder of the model store and a command-line choice: lower-case letters, digits and
    underscores, unique, and not the ensemble's."""
    name = method.name
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ValueError(f"a method name is lower-case letters, digits and _, not {name!r}")
    if name == ENSEMBLE or name in _REGISTERED:
        raise ValueError(f"the method name {name!r} is taken")
    if method.trained and not isinstance(method, TrainedMethod):
        raise TypeError(f"{name} is trained: make it a TrainedMethod")
    if method.ensemble_member and not method.indexed:
        raise ValueError(f"{name}: an ensemble member has vectors, and so is in the index")
    if isinstance(method, TrainedMethod):
        for profile in PROFILES.values():  # raises naming a profile it has no settings for
            settings = method.settings(profile)
            if not isinstance(settings, method.settings_type):
                raise TypeError(
                    f"{name}: its settings in {profile.name!r} are {type(settings).__name__}, "
                    f"not its settings_type {method.settings_type.__name__}"
                )
    _REGISTERED[name] = method
    return method


def _load_extra(entries: tuple[str, ...]) -> None:
    """The methods of FORMULA_ASSETS_EXTRA_METHODS: each `module:attribute` a Method."""
    for entry in entries:
        module_name, _, attribute = entry.partition(":")
        method = getattr(importlib.import_module(module_name), attribute, None)
        if not isinstance(method, Method):
            raise TypeError(f"{EXTRA_METHODS_ENV}: {entry} is not a method (a Method instance)")
        register(method)


def methods() -> tuple[Method, ...]:
    """Every registered method, in registry order."""
    return tuple(_REGISTERED.values())


def get(name: str) -> Method:
    try:
        return _REGISTERED[name]
    except KeyError:
        raise ValueError(
            f"unknown method {name!r}; choose one of {', '.join(_REGISTERED)}"
        ) from None


def trained() -> tuple[str, ...]:
    """The methods trained per fold: the `method` dimension of `fold_models`."""
    return tuple(m.name for m in methods() if m.trained)


def trained_method(name: str) -> TrainedMethod:
    method = get(name)
    if not isinstance(method, TrainedMethod):
        raise ValueError(f"{name} is not trained; the trained methods are {', '.join(trained())}")
    return method


def table_2() -> tuple[Method, ...]:
    """Table 2's methods in row order (before the ensemble's row): untrained, then trained."""
    return (*(m for m in methods() if not m.trained), *(m for m in methods() if m.trained))


def ensemble_members() -> tuple[Method, ...]:
    return tuple(m for m in methods() if m.ensemble_member)


def indexed() -> tuple[str, ...]:
    """The methods whose vectors the search index holds, in its row order."""
    return tuple(m.name for m in methods() if m.indexed)


def search_methods() -> tuple[str, ...]:
    """What `formula-assets search --method` offers: the ensemble and every indexed method."""
    return (ENSEMBLE, *indexed())


def lineup() -> Lineup:
    """The registry as Table 2 (in `evaluation`, which does not know it) needs it."""
    from formula_assets.evaluation.lineup import Lineup

    return Lineup(methods=table_2(), trained=trained(), members=ensemble_members())


def built_in(left_out: tuple[str, ...]) -> tuple[Method, ...]:
    """The built-in methods a profile keeps: BUILT_IN less those it leaves out (by name)."""
    names = [m.name for m in BUILT_IN]
    unknown = [n for n in left_out if n not in names]
    if unknown:
        raise ValueError(
            f"a profile leaves out {', '.join(unknown)}: not a built-in method ({', '.join(names)})"
        )
    return tuple(m for m in BUILT_IN if m.name not in left_out)


class RegistryMismatch(RuntimeError):
    """The methods were registered under other settings than the definitions now load with."""


def loaded_under() -> tuple[str, tuple[str, ...]]:
    """The profile and extra methods the registry was filled under."""
    return _SETTINGS.profile, _SETTINGS.extra_methods


def check_loaded_under(settings: Settings) -> None:
    """Raise unless `settings` name the profile and extra methods the registry was filled
    under: the partitions, Table 2's rows and every reader of the method list come from
    this registry, in every process that loads the definitions."""
    now = (settings.profile, settings.extra_methods)
    if now != loaded_under():
        raise RegistryMismatch(
            f"the methods were registered under profile {_SETTINGS.profile!r} and extra "
            f"methods {list(_SETTINGS.extra_methods)}, but the definitions load under profile "
            f"{settings.profile!r} and {list(settings.extra_methods)}: set "
            f"{PROFILE_ENV} and {EXTRA_METHODS_ENV} before the first import of "
            "formula_assets (a process that changes them must start a new process)"
        )


_SETTINGS = Settings.from_environment()
try:
    for _method in built_in(get_profile(_SETTINGS.profile).leaves_out):
        register(_method)
    _load_extra(_SETTINGS.extra_methods)
except (ValueError, TypeError, ImportError) as exc:  # what registering refuses, named
    raise RegistrationError(f"the methods cannot be registered: {exc}") from exc
