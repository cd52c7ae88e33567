"""Environment settings shared by every entry point.

Settings are read when they are used, not at import, so a run picks up the environment it was
launched with and tests can set variables per case.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from formula_assets import __version__

SOURCE_ENV = "FORMULA_ASSETS_SOURCE"
EMBEDDING_MODEL_ENV = "FORMULA_ASSETS_EMBEDDING_MODEL"
SPARQL_ENDPOINT_ENV = "FORMULA_ASSETS_SPARQL_ENDPOINT"
DUMP_PATH_ENV = "FORMULA_ASSETS_DUMP_PATH"
ACCEPT_PARTIAL_DUMP_ENV = "FORMULA_ASSETS_ACCEPT_PARTIAL_DUMP"
USER_AGENT_ENV = "FORMULA_ASSETS_USER_AGENT"
DATA_LAKE_ENV = "FORMULA_ASSETS_DATA_LAKE"
MIN_FORMULAE_ENV = "FORMULA_ASSETS_MIN_FORMULAE"
SAMPLE_ENV = "FORMULA_ASSETS_SAMPLE"
MIN_FRACTION_ENV = "FORMULA_ASSETS_MIN_FRACTION"
DEFAULT_MIN_FRACTION = 0.5
EMBEDDING_CACHE_ENV = "FORMULA_ASSETS_EMBEDDING_CACHE"
MODEL_DIR_ENV = "FORMULA_ASSETS_MODEL_DIR"
STYLED_LETTERS_ENV = "FORMULA_ASSETS_STYLED_LETTERS"
EXTRA_METHODS_ENV = "FORMULA_ASSETS_EXTRA_METHODS"
DEFAULT_STYLED_LETTERS = "distinct"  # the parser's default (syntax.mathml.ParseOptions)

SOURCES = ("snapshot", "sparql", "dump")
DEFAULT_SOURCE = "snapshot"
DEFAULT_SPARQL_ENDPOINT = "https://query.wikidata.org/sparql"
DEFAULT_USER_AGENT = (
    f"formula_assets/{__version__} (formula-concept research pipeline; "
    f"set {USER_AGENT_ENV} to add your contact address)"
)
# The snapshot holds 1,758 items; live Wikidata holds more. A pull far below this is broken.
DEFAULT_MIN_FORMULAE = 1000


def _env(name: str) -> str | None:
    value = os.environ.get(name, "").strip()
    return value or None


def source(override: str | None = None) -> str:
    value = (override or _env(SOURCE_ENV) or DEFAULT_SOURCE).strip().lower()
    if value not in SOURCES:
        raise ValueError(
            f"unknown formula source {value!r} (from config or {SOURCE_ENV}); "
            f"choose one of {', '.join(SOURCES)}"
        )
    return value


def sparql_endpoint(override: str | None = None) -> str:
    return override or _env(SPARQL_ENDPOINT_ENV) or DEFAULT_SPARQL_ENDPOINT


def user_agent(override: str | None = None) -> str:
    return override or _env(USER_AGENT_ENV) or DEFAULT_USER_AGENT


def dump_path(override: str | None = None) -> str:
    value = override or _env(DUMP_PATH_ENV)
    if not value:
        raise ValueError(
            f"the dump source needs a Wikidata JSON dump: set {DUMP_PATH_ENV} "
            "or the dump_path config to a .json, .json.gz or .json.bz2 file"
        )
    return value


def accept_partial_dump(override: bool | None = None) -> bool:
    """Read a dump cut off before its end (with a note) instead of refusing it."""
    if override is not None:
        return override
    raw = (_env(ACCEPT_PARTIAL_DUMP_ENV) or "false").lower()
    if raw not in ("1", "true", "yes", "on", "0", "false", "no", "off"):
        raise ValueError(f"{ACCEPT_PARTIAL_DUMP_ENV} must be true or false, got {raw!r}")
    return raw in ("1", "true", "yes", "on")


def min_formulae(override: int | None = None) -> int:
    if override is not None:
        return override
    raw = _env(MIN_FORMULAE_ENV)
    if raw is None:
        return DEFAULT_MIN_FORMULAE
    try:
        return int(raw)
    except ValueError as exc:
        raise ValueError(f"{MIN_FORMULAE_ENV} must be an integer, got {raw!r}") from exc


_N = TypeVar("_N", int, float)


def _env_number(name: str, convert: Callable[[str], _N], kind: str) -> _N | None:
    """The variable converted, None when unset; a clear error when it does not convert."""
    raw = _env(name)
    try:
        return convert(raw) if raw is not None else None
    except ValueError as exc:
        raise ValueError(f"{name} must be {kind}, got {raw!r}") from exc


def sample(override: int | None = None) -> int | None:
    """Keep only this many formula items (a stable subset), for demos and fast tests."""
    value = override if override is not None else _env_number(SAMPLE_ENV, int, "an integer")
    if value is not None and value < 1:
        raise ValueError(f"the sample size must be at least 1, got {value}")
    return value


def min_fraction(override: float | None = None) -> float:
    """A pull below this share of the last good row count is refused unless forced."""
    value = override
    if value is None:
        value = _env_number(MIN_FRACTION_ENV, float, "a number")
        value = DEFAULT_MIN_FRACTION if value is None else value
    if not 0 <= value <= 1:
        raise ValueError(f"the minimum fraction must be between 0 and 1, got {value}")
    return value


def styled_letters() -> str:
    """How the MathML parser spells styled letters (`distinct`, `fold`; see syntax.mathml)."""
    return (_env(STYLED_LETTERS_ENV) or DEFAULT_STYLED_LETTERS).lower()


def extra_methods() -> tuple[str, ...]:
    """Methods defined outside the package, `module:attribute` each (comma-separated), that
    the method registry adds after its own."""
    raw = _env(EXTRA_METHODS_ENV) or ""
    entries = tuple(e.strip() for e in raw.split(",") if e.strip())
    bad = [e for e in entries if not all(e.partition(":")[::2]) or e.count(":") != 1]
    if bad:
        raise ValueError(f"{EXTRA_METHODS_ENV} takes module:attribute entries, got {bad}")
    return entries


def project_root() -> Path | None:
    """The source checkout this package runs from, if any (editable installs, `make`)."""
    candidate = Path(__file__).resolve().parents[2]
    return candidate if (candidate / "pyproject.toml").is_file() else None


def data_lake_url() -> str:
    """Base URL of the data lake: the env var (any fsspec URL), else the checkout's data_lake/."""
    value = _env(DATA_LAKE_ENV)
    if value:
        return value
    root = project_root()
    return str((root or Path.cwd()) / "data_lake")


DAGSTER_HOME_ENV = "DAGSTER_HOME"


def dagster_home() -> Path:
    """The project's one Dagster instance: $DAGSTER_HOME, else .dagster_home/ in the checkout."""
    value = _env(DAGSTER_HOME_ENV)
    if value:
        return Path(value).expanduser().resolve()
    root = project_root()
    return (root / ".dagster_home") if root else Path.home() / ".formula_assets" / "dagster_home"


def embedding_cache_url() -> str:
    """Where text embeddings are cached: inside the data lake, so the cache travels with it."""
    return _env(EMBEDDING_CACHE_ENV) or data_lake_url().rstrip("/") + "/_cache/embeddings"


def model_dir() -> Path:
    """Where models shipped in part packages are unpacked: a user cache, shared by projects."""
    value = _env(MODEL_DIR_ENV)
    return Path(value).expanduser() if value else Path.home() / ".cache/formula_assets/models"
