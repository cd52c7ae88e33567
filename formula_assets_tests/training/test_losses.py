"""The contrastive losses against values computed by hand from their definitions."""

import math

import pytest
import torch

from formula_assets.training.losses import alignment_loss, info_nce


def _ce(logits: list[list[float]]) -> float:
    """Mean cross-entropy with targets on the diagonal, from the definition."""
    return sum(
        -row[i] + math.log(sum(math.exp(v) for v in row)) for i, row in enumerate(logits)
    ) / len(logits)


def _info_nce(a: list[list[float]], b: list[list[float]], temperature: float) -> float:
    """½ [CE(â b̂ᵀ / τ) + CE(b̂ âᵀ / τ)] with rows L2-normalised, in plain Python."""

    def unit(rows):
        return [[v / math.sqrt(sum(x * x for x in r)) for v in r] for r in rows]

    a, b = unit(a), unit(b)
    logits = [
        [sum(x * y for x, y in zip(ra, rb, strict=True)) / temperature for rb in b] for ra in a
    ]
    transposed = [list(column) for column in zip(*logits, strict=True)]
    return 0.5 * (_ce(logits) + _ce(transposed))


A = [[3.0, 4.0], [0.0, 2.0]]  # unit rows: (0.6, 0.8), (0, 1)
B = [[1.0, 0.0], [0.0, 5.0]]  # unit rows: (1, 0), (0, 1)


def test_info_nce_of_two_pairs_by_hand() -> None:
    """â b̂ᵀ / 0.5 = [[1.2, 1.6], [0, 2]]: row CE ½[(−1.2 + ln(e^1.2 + e^1.6)) + (−2 + ln(1 + e²))],
    column CE ½[(−1.2 + ln(e^1.2 + 1)) + (−2 + ln(e^1.6 + e²))], the loss their mean."""
    rows = 0.5 * (
        (-1.2 + math.log(math.exp(1.2) + math.exp(1.6))) + (-2 + math.log(1 + math.exp(2)))
    )
    columns = 0.5 * (
        (-1.2 + math.log(math.exp(1.2) + 1)) + (-2 + math.log(math.exp(1.6) + math.exp(2)))
    )
    expected = 0.5 * (rows + columns)
    assert expected == pytest.approx(_info_nce(A, B, 0.5))
    assert rows != pytest.approx(columns)  # the two directions differ here: both count
    got = info_nce(torch.tensor(A), torch.tensor(B), 0.5)
    assert float(got) == pytest.approx(expected, rel=1e-5)
    # the temperature divides the similarities (τ = 2 gives other logits than τ = 0.5)
    assert float(info_nce(torch.tensor(A), torch.tensor(B), 2.0)) == pytest.approx(
        _info_nce(A, B, 2.0), rel=1e-5
    )
    assert float(info_nce(torch.tensor(A), torch.tensor(B), torch.tensor(0.5))) == pytest.approx(
        expected, rel=1e-5
    )


def test_info_nce_reads_directions_only() -> None:
    """Rows are L2-normalised: scaling any row leaves the loss unchanged."""
    a, b = torch.tensor(A), torch.tensor(B)
    scaled_a = a * torch.tensor([[7.0], [0.1]])
    scaled_b = b * torch.tensor([[0.3], [4.0]])
    assert float(info_nce(scaled_a, scaled_b, 0.5)) == pytest.approx(float(info_nce(a, b, 0.5)))


def test_perfectly_aligned_pairs_by_hand() -> None:
    """Orthonormal matched pairs at τ = 1: each CE is ln(1 + e⁻¹)."""
    eye = torch.eye(2)
    assert float(info_nce(eye, eye, 1.0)) == pytest.approx(math.log(1 + math.exp(-1)), rel=1e-6)


S, M = [[1.0, 2.0], [2.0, -1.0]], [[1.0, 1.0], [-1.0, 2.0]]
S_VIEW, M_VIEW = [[1.0, 2.5], [1.5, -1.0]], [[0.5, 1.0], [-1.0, 0.5]]


def test_alignment_loss_is_cross_plus_weighted_intra_by_hand() -> None:
    cross, struct, sem = _info_nce(S, M, 0.5), _info_nce(S, S_VIEW, 0.5), _info_nce(M, M_VIEW, 0.5)
    assert len({round(cross, 6), round(struct, 6), round(sem, 6)}) == 3
    t = torch.tensor
    loss, parts = alignment_loss(t(S), t(M), 0.5, 0.25, t(S_VIEW), t(M_VIEW))
    assert float(loss) == pytest.approx(cross + 0.25 * (struct + sem), rel=1e-5)
    assert parts == pytest.approx({"cross": cross, "struct": struct, "sem": sem}, rel=1e-5)
    loss, _ = alignment_loss(t(S), t(M), 0.5, 2.0, t(S_VIEW), t(M_VIEW))
    assert float(loss) == pytest.approx(cross + 2.0 * (struct + sem), rel=1e-5)


def test_without_weight_or_views_the_loss_is_cross_modal_only() -> None:
    t = torch.tensor
    cross = _info_nce(S, M, 0.5)
    cases = [
        alignment_loss(t(S), t(M), 0.5),  # λ = 0 by default
        alignment_loss(t(S), t(M), 0.5, structural_view=t(S_VIEW), semantic_view=t(M_VIEW)),
        alignment_loss(t(S), t(M), 0.5, 0.0, t(S_VIEW), t(M_VIEW)),
        alignment_loss(t(S), t(M), 0.5, 0.5),  # a weight, but no views
        alignment_loss(t(S), t(M), 0.5, 0.5, t(S_VIEW), None),
        alignment_loss(t(S), t(M), 0.5, 0.5, None, t(M_VIEW)),
    ]
    for loss, parts in cases:
        assert float(loss) == pytest.approx(cross, rel=1e-5)
        assert parts == pytest.approx({"cross": cross}, rel=1e-5)


def test_the_loss_carries_gradients() -> None:
    s = torch.tensor(S, requires_grad=True)
    loss, _ = alignment_loss(
        s, torch.tensor(M), 0.5, 0.5, torch.tensor(S_VIEW), torch.tensor(M_VIEW)
    )
    loss.backward()
    assert s.grad is not None and float(s.grad.abs().sum()) > 0
