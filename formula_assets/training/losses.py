"""Symmetric InfoNCE across modalities, plus intra-modal InfoNCE between two dropout views.

L_cross = ½ [CE(z_s z_mᵀ / τ) + CE(z_m z_sᵀ / τ)] with matched pairs on the diagonal (CLIP).

The paper adds L_struct = InfoNCE(z_s, z_s) and L_sem = InfoNCE(z_m, z_m) without saying what
the positive pairs are; with one view, every vector trivially matches itself. Here each
modality is projected twice with independent dropout masks (as SimCSE does) and InfoNCE pulls
the two views of one formula together against the other formulae of the batch:
L_intra(z, z') = ½ [CE(z z'ᵀ / τ) + CE(z' zᵀ / τ)]. Total: L_cross + λ (L_struct + L_sem).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def info_nce(a: torch.Tensor, b: torch.Tensor, temperature: torch.Tensor | float) -> torch.Tensor:
    """Symmetric InfoNCE of L2-normalised rows; row i of `a` matches row i of `b`."""
    a = F.normalize(a, dim=-1)
    b = F.normalize(b, dim=-1)
    logits = a @ b.T / temperature
    targets = torch.arange(len(a), device=a.device)
    return 0.5 * (F.cross_entropy(logits, targets) + F.cross_entropy(logits.T, targets))


def alignment_loss(
    structural: torch.Tensor,
    semantic: torch.Tensor,
    temperature: torch.Tensor | float,
    intra_weight: float = 0.0,
    structural_view: torch.Tensor | None = None,
    semantic_view: torch.Tensor | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """L_cross + λ (L_struct + L_sem); the parts are returned for the training history."""
    cross = info_nce(structural, semantic, temperature)
    parts = {"cross": float(cross.detach())}
    loss = cross
    if intra_weight > 0 and structural_view is not None and semantic_view is not None:
        l_struct = info_nce(structural, structural_view, temperature)
        l_sem = info_nce(semantic, semantic_view, temperature)
        loss = loss + intra_weight * (l_struct + l_sem)
        parts |= {"struct": float(l_struct.detach()), "sem": float(l_sem.detach())}
    return loss, parts
