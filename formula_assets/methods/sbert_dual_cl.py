"""`sbert_dual_cl`: projection heads over the frozen sentence vectors of both sides (the
linearised OPT, the annotation texts), trained contrastively (`training.models.DualEncoder`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from formula_assets.methods.base import FormulaQuery, TrainedMethod

if TYPE_CHECKING:
    import torch

    from formula_assets.training.artifacts import ModelDescription
    from formula_assets.training.data import AlignmentData
    from formula_assets.training.inputs import MatrixInputs


class SentenceDualEncoder(TrainedMethod):
    name = "sbert_dual_cl"
    ensemble_member = True

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
