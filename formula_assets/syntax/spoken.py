"""A formula read aloud: the words people use when they say or describe one.

People ask for a formula by saying it (`h bar`, `E equals m c squared`, `voltage equals
resistance times current`), in the words screen readers and speech rule engines speak:
`equals`, `plus`, `times`, `over`, `squared`, `square root of`, `sum of`. `speak` reads the
expression tree of `syntax.canonical` in written order and says each identifier as its
letter and, where the item annotates it, the concept's label (`mass m`), each constant and
known function as a word (`pi`, `h bar`, `sine`). The result is for matching words, not for
reading to a person: it says every part once, in order, without parentheses.
"""

from __future__ import annotations

from collections.abc import Mapping

from formula_assets.syntax.canonical import (
    APPLY,
    BIGOP,
    INV,
    NEG,
    NUM,
    POST_POWER,
    POST_SUB,
    POW,
    PROD,
    STATEMENTS,
    SUM,
    SYM,
    TUPLE,
    VAR,
    Expr,
    TooDeep,
    written_order,
)
from formula_assets.syntax.mathml import EMPTY_TOKEN, OptNode

_RELATIONS = {
    "=": "equals", "≠": "is not equal to", "≈": "is approximately", "≃": "is approximately",
    "≅": "is congruent to", "≡": "is identical to", "∼": "is similar to", "<": "is less than",
    "≤": "is at most", "≪": "is much less than", "∝": "is proportional to", "∈": "is in",
    "∉": "is not in", "→": "tends to", "↦": "maps to", "⇒": "implies", "⟹": "implies",
    "⇔": "if and only if", "⟺": "if and only if", "≔": "is defined as", ":=": "is defined as",
    "≜": "is defined as", "∣": "divides", "⊂": "is a subset of", "⊆": "is a subset of",
    ":": "such that",
}  # fmt: skip
_WORDS = {
    "π": "pi", "∞": "infinity", "ℏ": "h bar", "ħ": "h bar", "∅": "empty set",
    "∑": "sum", "∏": "product", "∫": "integral", "∬": "double integral",
    "∭": "triple integral", "∮": "contour integral", "⋃": "union", "⋂": "intersection",
    "lim": "limit", "max": "maximum", "min": "minimum", "sup": "supremum", "inf": "infimum",
    "∂": "partial", "∇": "nabla", "√": "square root", "¬": "not", "∀": "for all",
    "∃": "there exists", "∧": "and", "∨": "or", "∪": "union", "∩": "intersection",
    "sin": "sine", "cos": "cosine", "tan": "tangent", "cot": "cotangent", "sec": "secant",
    "csc": "cosecant", "arcsin": "arcsine", "arccos": "arccosine", "arctan": "arctangent",
    "sinh": "hyperbolic sine", "cosh": "hyperbolic cosine", "tanh": "hyperbolic tangent",
    "log": "logarithm", "ln": "natural logarithm", "lg": "logarithm", "exp": "exponential",
    "det": "determinant", "tr": "trace", "Tr": "trace", "gcd": "greatest common divisor",
    "lcm": "least common multiple", "Pr": "probability", "Var": "variance",
    "Cov": "covariance", "erf": "error function", "sgn": "sign", "grad": "gradient",
    "div": "divergence", "curl": "curl", "rot": "curl", "mod": "modulo", "±": "plus or minus",
    "∓": "minus or plus", "×": "cross", "∘": "composed with", "⊗": "tensor",
    "⊕": "direct sum", "…": "", "⋯": "", "⋮": "", "⋱": "", ".": "", EMPTY_TOKEN: "",
}  # fmt: skip
_POWERS = {"2": "squared", "3": "cubed"}
# operators of one operand said before it; `_SILENT` ones are only their operands
_OPERATORS = {
    "abs": "absolute value of", "norm": "norm of", "set": "set of", "floor": "floor of",
    "ceil": "ceiling of", "sqrt": "square root of", "pm": "plus or minus",
}  # fmt: skip
_SILENT = {"angle", "over", "under", "underover"}


def speak(tree: Expr, labels: Mapping[str, str]) -> str:
    """The words of `tree`; `labels`: an identifier's concept label (`m` → `mass`)."""
    return " ".join(" ".join(_words(tree, labels)).split())


def _words(tree: Expr, labels: Mapping[str, str]) -> list[str]:
    head, args = tree.head, tree.args
    if head == VAR:
        plain = _WORDS.get(tree.name, tree.name.replace("_", " "))  # `±` as a letter
        label = labels.get(tree.name)
        return [label, plain] if label else [plain]
    if head == NUM:
        return [_FRACTIONS.get(tree.name, tree.name)]
    if head == SYM:
        return [_WORDS.get(tree.name, tree.name)]
    said = [_words(a, labels) for a in args]  # each part once: a tree is read in linear time
    if head in _AROUND and len(said) == 1:
        before, after = _AROUND[head]
        return [*before, *said[0], *after]
    if head == SUM:  # `a − b` is `a minus b`, not `a plus minus b`
        out = list(said[0]) if said else []
        for arg, words in zip(args[1:], said[1:], strict=True):
            if arg.head != NEG:
                out.append("plus")
            out.extend(words)
        return out
    if head == PROD:
        return _product(args, said)
    if head == POW and len(said) == 2:
        return _power(args[1], said)
    if head == APPLY and said:
        return [*said[0], "of", *_joined(said[1:], "and")]
    if head == BIGOP:  # its limits, then what it takes (the last): `sum from i = 1 to n of i`
        limits = _joined(said[:-1], "to")
        body = said[-1] if said else []
        name = _WORDS.get(tree.name, tree.name)
        return [name, *(["from", *limits] if limits else []), "of", *body]
    if head.startswith("rel:"):
        relation = head.removeprefix("rel:")
        return _joined(said, _RELATIONS.get(relation, relation))
    if head in (TUPLE, STATEMENTS, "chain"):
        return _joined(said, "and")
    if head == "sub" and said:
        return [*said[0], "sub", *_joined(said[1:], "")]
    opener = [] if head in _SILENT else [head.removeprefix("opt:")]
    return [*opener, *_joined(said, "")]


# one-operand operators: the words before and after their operand
_AROUND = {
    NEG: (["minus"], []), INV: (["one over"], []), "factorial": ([], ["factorial"]),
    POST_POWER: (["to the power"], []), POST_SUB: (["sub"], []),
    **{head: ([words], []) for head, words in _OPERATORS.items()},
}  # fmt: skip


def _joined(parts: list[list[str]], word: str) -> list[str]:
    out: list[str] = []
    for i, part in enumerate(parts):
        if i and word:
            out.append(word)
        out.extend(part)
    return out


def _product(args: tuple[Expr, ...], said: list[list[str]]) -> list[str]:
    """`a b / (c d)` as `a times b over c times d`."""
    above = [words for a, words in zip(args, said, strict=True) if a.head != INV]
    # an inverse was said `one over` and its operand: the operand goes below the line
    below = [words[1:] for a, words in zip(args, said, strict=True) if a.head == INV]
    out = _joined(above, "times") if above else ["one"]
    if below:
        out += ["over", *_joined(below, "times")]
    return out


def _power(exponent: Expr, said: list[list[str]]) -> list[str]:
    if exponent.head == NUM and exponent.name in _POWERS:
        return [*said[0], _POWERS[exponent.name]]
    if exponent.head == NUM and exponent.name == "1/2":
        return ["square root of", *said[0]]
    return [*said[0], "to the power", *said[1]]


# a fraction of two numbers said as one; other numbers as written
_FRACTIONS = {"1/2": "one half", "1/3": "one third", "1/4": "one quarter"}


def spoken_of_opt(root: OptNode, labels: Mapping[str, str]) -> str | None:
    """An OPT's words (`speak`); None for a formula nested past `MAX_DEPTH` levels."""
    try:
        return speak(written_order(root), labels)
    except TooDeep:
        return None
