"""An identifier (as `syntax.canonical` names it) written as TeX, the way Wikidata stores a
symbol (`P7235` holds TeX): `E_k` → `E_{k}`, `x¯` → `\\bar{x}`, `F→` → `\\vec{F}`, `Δx` →
`\\Delta x`, `α` → `\\alpha`, `double-struck R` → `\\mathbb{R}`, a multi-letter name upright."""

from __future__ import annotations

import unicodedata

_GREEK = {
    "α": "alpha", "β": "beta", "γ": "gamma", "δ": "delta", "ε": "epsilon", "ϵ": "epsilon",
    "ζ": "zeta", "η": "eta", "θ": "theta", "ϑ": "vartheta", "ι": "iota", "κ": "kappa",
    "λ": "lambda", "μ": "mu", "ν": "nu", "ξ": "xi", "π": "pi", "ρ": "rho", "ϱ": "varrho",
    "σ": "sigma", "ς": "varsigma", "τ": "tau", "υ": "upsilon", "φ": "phi", "ϕ": "phi",
    "χ": "chi", "ψ": "psi", "ω": "omega", "Γ": "Gamma", "Δ": "Delta", "Θ": "Theta",
    "Λ": "Lambda", "Ξ": "Xi", "Π": "Pi", "Σ": "Sigma", "Υ": "Upsilon", "Φ": "Phi",
    "Ψ": "Psi", "Ω": "Omega", "ℏ": "hbar", "ħ": "hbar", "∞": "infty", "∇": "nabla",
    "∂": "partial", "ℓ": "ell",
}  # fmt: skip
_ACCENTS = {"¯": "bar", "^": "hat", "~": "tilde", "˙": "dot", "¨": "ddot", "→": "vec"}
_PRIMES = {"′": "'", "″": "''", "‴": "'''", "*": "^{*}", "∗": "^{*}", "†": "^{\\dagger}"}
_STYLES = {
    "double-struck": "mathbb", "script": "mathcal", "fraktur": "mathfrak", "bold": "mathbf",
    "sans-serif": "mathsf", "monospace": "mathtt",
}  # fmt: skip


def _letters(text: str) -> str:
    if text in _GREEK:
        return f"\\{_GREEK[text]}"
    if len(text) == 1 or text.isdigit():
        return text
    if all(c in _GREEK for c in text):
        return " ".join(f"\\{_GREEK[c]}" for c in text)
    return f"\\mathrm{{{text}}}"


def _base(name: str) -> str:
    for style, command in _STYLES.items():
        if name.startswith(style + " "):
            return f"\\{command}{{{_base(name[len(style) + 1 :])}}}"
    if name[:1] in ("Δ", "δ") and len(name) > 1:
        return f"\\{_GREEK[name[0]]} {_base(name[1:])}"
    return _letters(unicodedata.normalize("NFC", name))


def _decorated(name: str) -> str:
    for mark, command in _ACCENTS.items():
        if name.endswith(mark) and len(name) > 1:
            return f"\\{command}{{{_decorated(name[: -len(mark)])}}}"
    return _base(name)


def identifier_tex(name: str) -> str:
    """TeX of one identifier (its subscript, accent and prime included)."""
    for mark, tex in _PRIMES.items():
        if name.endswith(mark) and len(name) > 1:
            return identifier_tex(name[: -len(mark)]) + tex
    base, underscore, sub = name.partition("_")
    if underscore and base and sub:
        return f"{_decorated(base)}_{{{_letters(sub)}}}"
    return _decorated(name)
