"""Which weights a trained model stores: what training made, not what its base model holds.

A fine-tuned sentence encoder keeps its embeddings and lowest layers frozen at its base
model's weights, which are in the base model's own files, whose content hash the model's
description records (and loading checks). Stored again in every fold's model, they would make
each model mostly a copy of its base model: of all-MiniLM-L6-v2's 90 MB of weights, 14 MB are
trained with four of six layers frozen; of all-mpnet-base-v2's 436 MB, 28 MB with eleven of
twelve. So a network marks the part it takes unchanged from a base model
(`PretrainedPart.base_keys`), a model stores the rest (`kept_state`), and a load builds the
network from its base model and loads the rest over it, refusing a stored state that is not
exactly that rest (`load_kept_state`).
"""

from __future__ import annotations

import torch
from torch import nn


class PretrainedPart(nn.Module):
    """A network part of which some weights are its base model's, unchanged by training."""

    def base_keys(self) -> set[str]:
        """State-dict names (relative to this module) of the weights its base model holds."""
        raise NotImplementedError


def base_keys(module: nn.Module) -> set[str]:
    """The state-dict names of `module` held by base models (every `PretrainedPart` in it)."""
    keys: set[str] = set()
    for prefix, part in module.named_modules():
        if isinstance(part, PretrainedPart):
            keys |= {f"{prefix}.{key}" if prefix else key for key in part.base_keys()}
    return keys


def kept_state(module: nn.Module) -> dict[str, torch.Tensor]:
    """The weights a trained model stores (on the CPU): all but its base models' part."""
    base = base_keys(module)
    return {k: v.detach().cpu() for k, v in module.state_dict().items() if k not in base}


def load_kept_state(module: nn.Module, state: dict[str, torch.Tensor]) -> None:
    """Load a stored `kept_state` into a network built as its description says (its base
    models' part already loaded from their files). Strict: names missing or extra are an
    error, not a half-loaded model."""
    expected = set(module.state_dict()) - base_keys(module)
    missing, extra = sorted(expected - set(state)), sorted(set(state) - expected)
    if missing or extra:
        raise ValueError(
            "the stored weights do not fit the described network: "
            + "; ".join(
                f"{what} {', '.join(names[:5])}{' …' if len(names) > 5 else ''}"
                for what, names in (("missing", missing), ("unexpected", extra))
                if names
            )
            + " (a model stored otherwise, e.g. by an older version: retrain it)"
        )
    module.load_state_dict(state, strict=False)
