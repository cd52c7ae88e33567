"""Training profiles: how much compute the alignment models get, with fixed, recorded seeds.

* `smoke`: seconds; for tests and demos. Proves the wiring, not the science.
* `default`: the symbol lexicon beside the trained members over frozen vectors, no fine-tuned
  encoder: half `medium`'s time on the slowest 2-core CPU measured (docs/performance.md).
* `medium`: the default and the fine-tuned encoder (one epoch); beside the symbol lexicon,
  every trained member is trained for less than `large` trains it.
* `large`: the strongest this CPU trains within 45 minutes cold: both packaged sentence
  models side by side, a wider graph encoder, both fine-tuned and averaged.
* `paper`: the paper's settings — 200 epochs, hidden 768, all-mpnet-base-v2 — for a GPU.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any

DEFAULT_EMBEDDING_MODEL = "all-MiniLM-L6-v2"
MODEL_SEPARATOR = "+"  # models joined by it embed as one: their vectors side by side
DEFAULT_PROFILE = "default"


def joined_models(name: str) -> list[str]:
    """The model names a setting joins with `+` (one name: itself)."""
    return [part.strip() for part in name.split(MODEL_SEPARATOR)]


@dataclass(frozen=True, kw_only=True)
class MethodSettings:
    hidden: int
    out_dim: int
    dropout: float
    epochs: int  # 0: a method fitted in closed form, not trained by gradient
    batch_size: int
    learning_rate: float
    weight_decay: float
    intra_weight: float  # λ of the intra-modal InfoNCE terms
    patience: int  # epochs without validation gain before stopping
    # graph_text_cl only:
    layers: int = 2  # GINE layers
    token_text: bool = False  # node features include the sentence vector of the token's text
    token_dropout: float = 0.0  # share of training tokens replaced by UNK
    readout: str = "mean"  # "mean" or "mean+formula"
    # the MLP head of the `mean+formula` readout (as wide, and as dropped, as sbert_dual_cl's)
    head_hidden: int = 1024
    head_dropout: float = 0.3
    # the semantic projection head's width and dropout (None: `hidden`, `dropout`)
    semantic_hidden: int | None = None
    semantic_dropout: float | None = None
    # every node also gets the sentence vector of the whole linearised OPT (formula context)
    formula_text: bool = False
    # independently seeded trainings, each early-stopped on its own, whose cosines are
    # averaged (a seed ensemble: training time × runs)
    runs: int = 1
    # sbert_finetuned_cl only: the sentence-transformers model fine-tuned (None: the packaged
    # all-MiniLM-L6-v2; a packaged model's name or a local folder otherwise, never a
    # download), and the tokens each text is truncated to; the embeddings and the lowest
    # `frozen_layers` transformer layers keep the base model's weights (run once, their output
    # cached: training costs less). Several base models joined by `+` are one model whose
    # runs are one fine-tuning of each, their cosines averaged; `frozen_layers` then names
    # each one's, in order (one number: the same for all)
    base_model: str | None = None
    max_seq_len: int = 128
    frozen_layers: int | tuple[int, ...] = 0

    def __post_init__(self) -> None:
        if self.epochs < 0:
            raise ValueError(f"epochs cannot be negative ({self.epochs})")
        if self.runs < 1:
            raise ValueError(f"a model needs at least one run, not {self.runs}")
        self.base_models()  # the base models and their frozen layers agree

    def base_models(self) -> list[tuple[str | None, int]]:
        """Each base model of a fine-tuned encoder (None: the packaged default) with its
        frozen layers, in order: one per run when there are several."""
        names = joined_models(self.base_model) if self.base_model else [None]
        frozen = self.frozen_layers
        layers = tuple(frozen) if isinstance(frozen, tuple | list) else (frozen,) * len(names)
        if len(layers) != len(names):
            raise ValueError(
                f"frozen_layers names {len(layers)} base models' layers, base_model "
                f"{self.base_model!r} has {len(names)}"
            )
        if len(names) > 1 and (self.runs != 1 or not all(names)):
            raise ValueError(
                f"base_model {self.base_model!r}: several base models train one run each "
                f"(runs: 1, not {self.runs}), each named"
            )
        return list(zip(names, layers, strict=True))


@dataclass(frozen=True)
class Profile:
    name: str
    graph_text_cl: MethodSettings
    sbert_dual_cl: MethodSettings
    sbert_finetuned_cl: MethodSettings
    bag_dual_cl: MethodSettings
    embedding_model: str | None = None  # None: the packaged all-MiniLM-L6-v2
    seed: int = 0
    validation_fraction: float = 0.1
    # a third share of the training folds, never trained or early-stopped on: it chooses the
    # ensemble's weights (0: none; the ensemble then cannot be built)
    selection_fraction: float = 0.1
    torch_threads: int = 1  # per process; fold partitions run as parallel processes
    # methods (registry names) this profile does not train or score: they have no fold
    # partitions, no row of Table 2 and no place in the ensemble, the search or the audit
    leaves_out: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)

    def settings(self, method: str) -> MethodSettings:
        try:
            return getattr(self, method)
        except AttributeError:
            raise ValueError(f"no training settings for method {method!r}") from None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


# Why each value is what it is, with the measurements: docs/research-record.md and
# docs/training.md. Sizes first (hidden, out_dim, dropout), then the schedule.

_DEFAULT_DUAL = MethodSettings(
    hidden=1024, out_dim=512, dropout=0.3, epochs=60, batch_size=256, learning_rate=1e-3,
    weight_decay=1e-4, intra_weight=0.1, patience=20, runs=1,
)  # fmt: skip
# the graph encoder's options the ablation kept within the default's time budget: token
# texts, the formula context and its head, and sbert_dual_cl's semantic head
_DEFAULT_GRAPH = MethodSettings(
    hidden=256, out_dim=256, dropout=0.1, epochs=60, batch_size=256, learning_rate=1e-3,
    weight_decay=1e-4, intra_weight=0.1, patience=8,
    token_text=True, token_dropout=0.1, formula_text=True, readout="mean+formula",
    semantic_hidden=_DEFAULT_DUAL.hidden, semantic_dropout=_DEFAULT_DUAL.dropout, runs=1,
)  # fmt: skip
# the sentence encoder itself fine-tuned: `hidden` and `dropout` are unused (the tower is the
# model's own), `out_dim` is its width; most layers frozen and short texts keep it affordable
_DEFAULT_FINETUNED = MethodSettings(
    hidden=0, out_dim=384, dropout=0.0, epochs=1, batch_size=32, learning_rate=2e-4,
    weight_decay=0.01, intra_weight=0.0, patience=3, max_seq_len=64, frozen_layers=4,
)  # fmt: skip
# a feature vector per symbol, text and word: `hidden` and `dropout` are unused, `out_dim`
# their width
_DEFAULT_BAG = MethodSettings(
    hidden=0, out_dim=512, dropout=0.0, epochs=60, batch_size=128, learning_rate=1e-2,
    weight_decay=0.01, intra_weight=0.0, patience=10, runs=2,
)  # fmt: skip

# the paper's aligners: hidden 768, 200 epochs, and early stopping that never stops them
_PAPER_ALIGNER = MethodSettings(
    hidden=768, out_dim=768, dropout=0.1, epochs=200, batch_size=256, learning_rate=5e-4,
    weight_decay=1e-4, intra_weight=0.1, patience=200,
)  # fmt: skip

PROFILES: dict[str, Profile] = {
    "smoke": Profile(
        name="smoke",
        # the default's node inputs and heads, so that tests exercise every path it takes
        graph_text_cl=replace(
            _DEFAULT_GRAPH,
            hidden=64,
            out_dim=64,
            epochs=10,
            batch_size=64,
            learning_rate=3e-3,
            patience=10,
            head_hidden=128,
            semantic_hidden=128,
            semantic_dropout=0.1,
            runs=1,
        ),
        # two runs, so that tests exercise the averaging of runs
        sbert_dual_cl=replace(
            _DEFAULT_DUAL,
            hidden=256,
            out_dim=128,
            dropout=0.1,
            epochs=20,
            batch_size=64,
            learning_rate=3e-3,
            runs=2,
        ),
        # the wiring in seconds: two epochs over 16-token texts, only the top layer trained
        sbert_finetuned_cl=replace(
            _DEFAULT_FINETUNED,
            epochs=2,
            batch_size=64,
            learning_rate=5e-4,
            patience=2,
            max_seq_len=16,
            frozen_layers=5,
        ),
        bag_dual_cl=replace(_DEFAULT_BAG, out_dim=64, epochs=30, batch_size=32),
    ),
    # for the slowest 2-core CPU measured: `medium` without the fine-tuned encoder, a
    # narrower graph encoder and fewer dual epochs, which cost little validation MRR
    "default": Profile(
        name="default",
        graph_text_cl=replace(_DEFAULT_GRAPH, epochs=15, hidden=192),
        sbert_dual_cl=replace(_DEFAULT_DUAL, epochs=20),
        sbert_finetuned_cl=_DEFAULT_FINETUNED,
        bag_dual_cl=replace(_DEFAULT_BAG, runs=1),
        leaves_out=("sbert_finetuned_cl",),
    ),
    # the default and the fine-tuned encoder: beside the symbol lexicon, every trained member
    # is trained for less than `large` trains it
    "medium": Profile(
        name="medium",
        graph_text_cl=replace(_DEFAULT_GRAPH, epochs=15),
        sbert_dual_cl=replace(_DEFAULT_DUAL, epochs=30),
        sbert_finetuned_cl=_DEFAULT_FINETUNED,
        bag_dual_cl=replace(_DEFAULT_BAG, runs=1),
    ),
    # the strongest this CPU trains within 45 minutes cold: both packaged sentence models side
    # by side (`pip install 'formula_assets[mpnet]'`), a wider graph encoder with more
    # patience, two runs of sbert_dual_cl, both sentence models fine-tuned and averaged
    "large": Profile(
        name="large",
        graph_text_cl=replace(_DEFAULT_GRAPH, hidden=512, runs=1, patience=15),
        sbert_dual_cl=replace(_DEFAULT_DUAL, runs=2),
        sbert_finetuned_cl=replace(
            _DEFAULT_FINETUNED,
            epochs=5,
            learning_rate=1e-4,
            base_model=f"{DEFAULT_EMBEDDING_MODEL}{MODEL_SEPARATOR}all-mpnet-base-v2",
            frozen_layers=(4, 11),
        ),
        bag_dual_cl=_DEFAULT_BAG,
        embedding_model=f"{DEFAULT_EMBEDDING_MODEL}{MODEL_SEPARATOR}all-mpnet-base-v2",
    ),
    # the paper's settings, for a GPU
    "paper": Profile(
        name="paper",
        graph_text_cl=_PAPER_ALIGNER,
        sbert_dual_cl=_PAPER_ALIGNER,
        sbert_finetuned_cl=replace(
            _DEFAULT_FINETUNED, epochs=10, learning_rate=1e-4, patience=3, max_seq_len=128
        ),
        bag_dual_cl=_DEFAULT_BAG,
        embedding_model="sentence-transformers/all-mpnet-base-v2",
        torch_threads=0,  # 0: leave torch's default (all cores / the GPU)
    ),
}


def get_profile(name: str = DEFAULT_PROFILE) -> Profile:
    """A profile by name (the `profile` setting chooses the pipeline's: core.settings)."""
    try:
        return PROFILES[name.strip().lower()]
    except KeyError:
        raise ValueError(f"unknown profile {name!r}; choose one of {', '.join(PROFILES)}") from None


def markdown_table() -> str:
    """Every setting of every profile, as the table of docs/profiles.md (a test keeps the two
    equal): the values a reader is told are the values that train."""
    names = list(PROFILES)
    lines = [
        "| setting | " + " | ".join(f"`{n}`" for n in names) + " |",
        "|---|" + "---|" * len(names),
    ]
    flat = {n: _flatten(PROFILES[n].as_dict()) for n in names}
    for key in flat[names[0]]:
        if key == "name":
            continue
        cells = [_cell(flat[n][key]) for n in names]
        lines.append(f"| `{key}` | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _flatten(values: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in values.items():
        if isinstance(value, dict) and value and key != "extra":
            out.update(_flatten(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def _cell(value: Any) -> str:
    return "—" if value is None or value == {} or value == () else f"`{value!r}`"
