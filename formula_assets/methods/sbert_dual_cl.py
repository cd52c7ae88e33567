"""`sbert_dual_cl`: projection heads over the frozen sentence vectors of both sides (the
linearised OPT, the annotation texts), trained contrastively (`training.models.DualEncoder`)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from formula_assets.methods.base import FormulaQuery, TrainedMethod
from formula_assets.training.settings import MethodSettings

if TYPE_CHECKING:
    import torch

    from formula_assets.training.artifacts import ModelDescription
    from formula_assets.training.data import AlignmentData
    from formula_assets.training.inputs import MatrixInputs

_DEFAULT = MethodSettings(
    hidden=1024, out_dim=512, dropout=0.3, epochs=60, batch_size=256, learning_rate=1e-3,
    weight_decay=1e-4, intra_weight=0.1, patience=20,
)  # fmt: skip
# the paper's aligners: hidden 768, 200 epochs, and early stopping that never stops them
PAPER_ALIGNER = MethodSettings(
    hidden=768, out_dim=768, dropout=0.1, epochs=200, batch_size=256, learning_rate=5e-4,
    weight_decay=1e-4, intra_weight=0.1, patience=200,
)  # fmt: skip
PROFILE_SETTINGS: dict[str, MethodSettings] = {
    # two runs, so that tests exercise the averaging of runs
    "smoke": replace(
        _DEFAULT,
        hidden=256,
        out_dim=128,
        dropout=0.1,
        epochs=20,
        batch_size=64,
        learning_rate=3e-3,
        runs=2,
    ),
    # fewer epochs than `medium` cost little validation MRR on the slowest CPU measured
    "default": replace(_DEFAULT, epochs=20),
    "medium": replace(_DEFAULT, epochs=30),
    "large": replace(_DEFAULT, runs=2),
    "paper": PAPER_ALIGNER,
}


class SentenceDualEncoder(TrainedMethod):
    name = "sbert_dual_cl"
    ensemble_member = True
    profile_settings = PROFILE_SETTINGS

    def inputs(
        self, description: ModelDescription, data: AlignmentData, device: str
    ) -> MatrixInputs:
        import torch

        from formula_assets.training.inputs import MatrixInputs

        return MatrixInputs(torch.from_numpy(data.opt_text.copy()).to(device))

    def network(self, description: ModelDescription) -> torch.nn.Module:
        from formula_assets.training.models import DualEncoder

        settings = description.settings
        return DualEncoder(
            description.structural_dim,
            description.semantic_dim,
            settings.hidden,
            settings.out_dim,
            settings.dropout,
        )

    def query_input(self, description: ModelDescription, query: FormulaQuery) -> torch.Tensor:
        import torch

        return torch.from_numpy(query.linearised_vector()[None, :])


METHOD = SentenceDualEncoder()
