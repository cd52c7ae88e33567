"""A formula read as mathematics, in a canonical form: what structure search compares.

The OPT mirrors presentation MathML, where a row is a flat sequence of operands and operator
tokens, and the same formula comes out of two producers (or two authors) in different
shapes: `R ⋅ I` and `I R`, `c^2 = a^2 + b^2` and `b^2 + a^2 = c^2`, `s/r` and a fraction. So
each row is read by precedence into an expression tree — separators, relations, sums,
products (every multiplication sign and juxtaposition the same), prefix operators (big
operators take the rest of their product, known functions one operand) — and brought to a
canonical form: the operands of commutative operators and the sides of symmetric relations
sorted, `>` written as `<` with its sides swapped, `/` as a fraction.

Identifiers — a letter, a name that is no known function, a letter with a plain subscript
(`E_k`), with an accent (`ẋ`, a vector arrow) or a prime — are leaves a formula may rename.
Sorting uses a key that does not know their names: each identifier gets a colour from where
it occurs (colour refinement over the tree), and the canonical traversal numbers the
identifiers v1, v2, … in the order it meets them. Two formulae that differ by a consistent
renaming, by the order of commutative operands or by the sides of `=` get the same
`pattern`; the `named` form keeps the names. Whether two patterns are equal is a heuristic
of canonical labelling (exact for trees whose look-alike operands are interchangeable), which
is what search needs: each formula reduces to a few hashes, looked up, not compared pairwise.
"""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from formula_assets.syntax.mathml import EMPTY_TOKEN, OptNode
from formula_assets.syntax.schema import OPERATOR, SYMBOL

VAR, NUM, SYM = "var", "num", "sym"
SUM, NEG, PROD, INV, POW = "sum", "neg", "prod", "inv", "pow"
APPLY, TUPLE, STATEMENTS, BIGOP = "apply", "tuple", "statements", "bigop"

# Multiplication signs (and juxtaposition) are one operator; `/` and `÷` make a fraction.
_TIMES = {"⋅", "·", "×", "∗", "*", "\u2062", "∙", "•"}
_DIVIDE = {"/", "÷", "∕"}
_PLUS = {"+"}
_MINUS = {"−", "-", "–", "‐"}
_SIGNED = {"±", "∓"}
# Relations: symmetric ones are commutative; ordered ones turn `>` into `<` with sides swapped.
_SYMMETRIC = {"=", "≠", "≈", "≡", "∼", "≃", "≅", "≍", "∥", "⊥", "⟺", "⇔", "↔", "≔", ":="}
_ORDERED = {"<": "<", ">": "<", "≤": "≤", "≥": "≤", "⩽": "≤", "⩾": "≤", "≪": "≪", "≫": "≪",
            "⊂": "⊂", "⊃": "⊂", "⊆": "⊆", "⊇": "⊆", "⊊": "⊊", "⊋": "⊊", "≺": "≺", "≻": "≺",
            "⪯": "⪯", "⪰": "⪯", "≲": "≲", "≳": "≲"}  # fmt: skip
_FLIPPED = {">", "≥", "⩾", "≫", "⊃", "⊇", "⊋", "≻", "⪰", "≳"}
_OTHER_RELATIONS = {"∝", "∈", "∉", "∋", "→", "↦", "⇒", "⟹", "⟶", "←", "⇐", "↠", "↪", "∣", "≜",
                    "≐", "≔", "◃", "⊢", "⊨", "∤", "≺"}  # fmt: skip
_SEPARATORS = {",", ";"}
_COMMUTATIVE = {SUM, PROD, STATEMENTS, "∪", "∩", "∧", "∨", "⊕", "⊗"} | {
    f"rel:{r}" for r in _SYMMETRIC
}
# Binary operators that are neither sums nor products: kept, with their symbol.
_BINARY = {"∪", "∩", "∧", "∨", "⊕", "⊗", "∖", "∘", "⋊", "⋉", "⊙", "⊛", "△", "⊎", "⨯"}
# Operators written as identifiers by some producers (`<mi>∇</mi>`): never renamed.
_OPERATOR_SYMBOLS = {"∇", "∂", "¬", "√", "∮", "∫", "∬", "∭", "∑", "∏", "⋃", "⋂"}
# A difference or variation of a quantity is one quantity: `Δx`, `δq`.
_DIFFERENCE = {"Δ", "δ"}
_BIG = {"∑", "∏", "∫", "∬", "∭", "∮", "⋃", "⋂", "⨁", "⨂", "∐", "⋁", "⋀", "lim", "max", "min",
        "sup", "inf", "lim sup", "lim inf", "limsup", "liminf", "argmax", "argmin"}  # fmt: skip
_FENCES = {"(": ")", "[": "]", "{": "}", "⟨": "⟩", "⌊": "⌋", "⌈": "⌉", "〈": "〉"}
_CLOSING = {")", "]", "}", "⟩", "⌋", "⌉", "〉"}
POST_POWER, POST_SUB = "^post", "_post"  # a script whose base was a closing fence
_FENCE_NAMES = {"{": "set", "⟨": "angle", "〈": "angle", "⌊": "floor", "⌈": "ceil"}
_BARS = {"|": "abs", "‖": "norm", "∥": "norm"}
_ACCENTS = {"→", "⃗", "^", "ˆ", "̂", "˙", "¨", "¯", "‾", "~", "˜", "̃", "∼", "⋅", ".", "′", "″",
            "‴", "*", "∗", "†", "‡", "T", "⊤", "∘"}  # fmt: skip
_MARKS = {"′", "″", "‴", "*", "∗", "†", "‡", "⊤"}  # a superscript that decorates, not a power
_CONSTANTS = {"π", "∞", "∅", "ℏ", "ħ", EMPTY_TOKEN, "…", "⋯", "⋮", "⋱", "."}
KNOWN_FUNCTIONS = frozenset(
    [
        "sin",
        "cos",
        "tan",
        "cot",
        "sec",
        "csc",
        "arcsin",
        "arccos",
        "arctan",
        "arccot",
        "sinh",
        "cosh",
        "tanh",
        "coth",
        "sech",
        "csch",
        "arsinh",
        "arcosh",
        "artanh",
        "log",
        "ln",
        "lg",
        "lb",
        "exp",
        "det",
        "tr",
        "Tr",
        "dim",
        "ker",
        "deg",
        "sgn",
        "sign",
        "gcd",
        "lcm",
        "Re",
        "Im",
        "arg",
        "mod",
        "Pr",
        "Var",
        "Cov",
        "max",
        "min",
        "sup",
        "inf",
        "lim",
        "erf",
        "erfc",
        "rank",
        "span",
        "diag",
        "grad",
        "div",
        "curl",
        "rot",
    ]
)
_NUMBER = re.compile(r"^[0-9]+([.,][0-9]+)?$|^[.,][0-9]+$")


@dataclass(frozen=True, slots=True)
class Expr:
    """One node: a leaf (`var`, `num`, `sym` with its `name`) or an operator with `args`."""

    head: str
    name: str = ""
    args: tuple[Expr, ...] = ()

    def size(self) -> int:
        return 1 + sum(a.size() for a in self.args)

    def leaves(self) -> Iterator[Expr]:
        if not self.args:
            yield self
        for arg in self.args:
            yield from arg.leaves()

    def nodes(self) -> Iterator[Expr]:
        yield self
        for arg in self.args:
            yield from arg.nodes()

    def text(self) -> str:
        """Readable, for tests and logs: `=(pow(c, 2), sum(…))`."""
        if not self.args:
            return self.name or self.head
        inner = ", ".join(a.text() for a in self.args)
        return f"{self.head}({inner})"


def _leaf(token: str) -> Expr:
    text = token.strip()
    if _NUMBER.match(text):
        return Expr(NUM, text.replace(",", "."))
    if text in _CONSTANTS or text in KNOWN_FUNCTIONS or text in _BIG or text in _OPERATOR_SYMBOLS:
        return Expr(SYM, text)
    return Expr(VAR, _identifier(text))


# Accents and styles that mark the same thing: a vector's arrow or bold, a bar, a hat, a tilde.
_ACCENT_FORMS = {"⃗": "→", "¯": "¯", "‾": "¯", "ˉ": "¯", "̄": "¯", "ˆ": "^", "̂": "^", "^": "^",
                 "˜": "~", "~": "~", "̃": "~", "∼": "~", "˙": "˙", "̇": "˙", ".": "˙", "⋅": "˙",
                 "¨": "¨", "̈": "¨", "→": "→"}  # fmt: skip


def _identifier(name: str) -> str:
    """One spelling of an identifier's decorations: `bold F` and `F→` are the vector F."""
    if name.startswith("bold ") and len(name) > 5:
        return name[5:] + "→"
    return name


def renamable(token: str) -> bool:
    """Whether a leaf token is an identifier a formula may rename (not a number, a constant,
    a known function or an operator written as a letter, such as Δ)."""
    return _leaf(token).head == VAR and token not in _DIFFERENCE


def _is_var(expr: Expr | str) -> bool:
    return isinstance(expr, Expr) and expr.head == VAR


def _plain_text(node: OptNode) -> str | None:
    """The text of a subscript made of tokens only (`k`, `0`, `max`, `b a c k`), else None."""
    if not node.children:
        return node.token if node.type in (SYMBOL, OPERATOR) else None
    if node.token == "group" and len(node.children) <= 6:
        parts = [_plain_text(c) for c in node.children]
        if all(
            p is not None and c.type == SYMBOL for p, c in zip(parts, node.children, strict=True)
        ):
            return "".join(p for p in parts if p)
    return None


def from_opt(node: OptNode) -> Expr:
    """The expression tree of an OPT (not yet canonical: see `canonical`)."""
    token, children = node.token, node.children
    if node.type in (SYMBOL, OPERATOR) and not children:
        return Expr(SYM, token) if node.type == OPERATOR else _leaf(token)
    if token in ("group", "cell"):
        return _row([x for c in children for x in _items(c)])
    if token == "table":
        return _table(children)
    if token == "row":
        return _row([x for c in children for x in _cell_items(c)])
    if token == "power" and len(children) == 2:
        base, exponent = (from_opt(c) for c in children)
        if _is_var(base) and exponent.head == SYM and exponent.name in _MARKS:
            return Expr(VAR, base.name + exponent.name)
        if exponent.head in (SYM, VAR) and exponent.name in _MARKS | {"T"} and _is_var(base):
            return Expr(VAR, base.name + exponent.name)
        return Expr(POW, args=(base, exponent))
    if token == "subscript" and len(children) == 2:
        return _subscripted(children[0], children[1], None)
    if token == "subsup" and len(children) == 3:
        return _subscripted(children[0], children[1], children[2])
    if token in ("under", "underover") and children:
        base = from_opt(children[0])
        limits = tuple(from_opt(c) for c in children[1:])
        if base.head == SYM and base.name in _BIG:
            return Expr(BIGOP, base.name, limits)
        return Expr(token, args=(base, *limits))
    if token == "over" and len(children) == 2:
        base, accent = from_opt(children[0]), children[1]
        if _is_var(base) and accent.token in _ACCENTS and not accent.children:
            mark = _ACCENT_FORMS.get(accent.token, accent.token)
            return Expr(VAR, base.name if base.name.endswith(mark) else base.name + mark)
        if base.head == SYM and base.name in _BIG:
            return Expr(BIGOP, base.name, (from_opt(accent),))
        return Expr("over", args=(base, from_opt(accent)))
    if token == "frac" and len(children) == 2:
        return _fraction(from_opt(children[0]), from_opt(children[1]))
    if token == "sqrt":
        return Expr("sqrt", args=(_row([x for c in children for x in _items(c)]),))
    return Expr(f"opt:{token}", args=tuple(from_opt(c) for c in children))


def _subscripted(base_node: OptNode, sub_node: OptNode, sup_node: OptNode | None) -> Expr:
    base = from_opt(base_node)
    sup = from_opt(sup_node) if sup_node is not None else None
    if base.head == SYM and base.name in _BIG:
        limits = (from_opt(sub_node),) if sup is None else (from_opt(sub_node), sup)
        return Expr(BIGOP, base.name, limits)
    text = _plain_text(sub_node)
    if _is_var(base) and text is not None:
        named = Expr(VAR, f"{base.name}_{text}")
    else:
        named = Expr("sub", args=(base, from_opt(sub_node)))
    if sup is None:
        return named
    if _is_var(named) and sup.head == SYM and sup.name in _MARKS:
        return Expr(VAR, named.name + sup.name)
    return Expr(POW, args=(named, sup))


def _items(node: OptNode) -> list[Expr | str]:
    """A row's elements from one child: an operator token as its text, anything else as an
    expression. A script on a closing fence (`(a+b)^2`: the `)` is the base of the power)
    is the fence, then the script, which applies to the group the fence closes."""
    if node.type == OPERATOR and not node.children:
        return [node.token.strip()]
    scripts = {"power": POST_POWER, "subscript": POST_SUB}
    if node.token in scripts and len(node.children) == 2:
        base, script = node.children
        if base.type == OPERATOR and not base.children and base.token in _CLOSING | set(_BARS):
            return [base.token.strip(), Expr(scripts[node.token], args=(from_opt(script),))]
    return [from_opt(node)]


def _cell_items(cell: OptNode) -> list[Expr | str]:
    if cell.token == "cell":
        return [x for c in cell.children for x in _items(c)]
    return _items(cell)


def _table(rows: Sequence[OptNode]) -> Expr:
    """Aligned equations: a row that starts with a relation (its first cell empty) goes on
    the statement above it (`a = b` / `  = c` is the chain `a = b = c`)."""
    statements: list[list[Expr | str]] = []
    for row in rows:
        items = [x for c in row.children for x in _cell_items(c)] if row.token == "row" else []
        if not items:
            continue
        continues = isinstance(items[0], str) and _relation(items[0]) is not None
        if continues and statements:
            statements[-1].extend(items)
        else:
            statements.append(items)
    parsed = [_row(s) for s in statements]
    if len(parsed) == 1:
        return parsed[0]
    return Expr(STATEMENTS, args=tuple(parsed))


def _relation(token: str) -> str | None:
    if token in _SYMMETRIC or token in _ORDERED or token in _OTHER_RELATIONS:
        return token
    return None


# -- reading a row -------------------------------------------------------------------------


def _row(items: list[Expr | str]) -> Expr:
    items = [i for i in items if not (isinstance(i, str) and i in ("", "\u2061", "\u2063"))]
    if not items:
        return Expr(SYM, EMPTY_TOKEN)
    return _separated(_fenced(items))


def _fenced(items: list[Expr | str]) -> list[Expr | str]:
    """Fenced spans read as one operand: `(…)` and `[…]` group, `{…}` is a set, `|…|` an
    absolute value; an operand right before `(` is applied to it (`f(x)`). A fence without
    its partner is dropped."""
    out: list[Expr | str] = []
    i = 0
    while i < len(items):
        item = items[i]
        if isinstance(item, str) and (item in _FENCES or item in _BARS):
            close = _closing(items, i)
            if close is not None:
                inner = _separated(_fenced(items[i + 1 : close]))
                if item in _BARS:
                    inner = Expr(_BARS[item], args=(inner,))
                elif item in _FENCE_NAMES:
                    inner = Expr(_FENCE_NAMES[item], args=(inner,))
                previous = out[-1] if out else None
                if (
                    item == "("
                    and isinstance(previous, Expr)
                    and previous.head in (VAR, SYM)
                    and previous.name not in _BIG
                ):
                    out[-1] = Expr(APPLY, args=(previous, inner))
                else:
                    out.append(inner)
                i = close + 1
                continue
            if item == "|":
                out.append("∣")  # a bar without a partner: "given", "divides"
            i += 1  # an unmatched fence is dropped
            continue
        if isinstance(item, str) and (item in _FENCES.values()):
            i += 1
            continue
        out.append(item)
        i += 1
    return out


def _closing(items: Sequence[Expr | str], start: int) -> int | None:
    opening = items[start]
    closing = _FENCES.get(opening, opening)  # type: ignore[arg-type]
    depth = 0
    for j in range(start + 1, len(items)):
        token = items[j]
        if not isinstance(token, str):
            continue
        if token == closing and depth == 0:
            return j
        if token in _FENCES and token != closing:
            depth += 1
        elif token in _FENCES.values() and depth:
            depth -= 1
    return None


def _split(items: Sequence[Expr | str], separators: set[str]) -> list[list[Expr | str]]:
    parts: list[list[Expr | str]] = [[]]
    for item in items:
        if isinstance(item, str) and item in separators:
            parts.append([])
        else:
            parts[-1].append(item)
    return parts


def _separated(items: list[Expr | str]) -> Expr:
    parts = [p for p in _split(items, _SEPARATORS) if p]
    if len(parts) > 1:
        return Expr(TUPLE, args=tuple(_colon(p) for p in parts))
    return _colon(parts[0]) if parts else Expr(SYM, EMPTY_TOKEN)


def _colon(items: list[Expr | str]) -> Expr:
    parts = [p for p in _split(items, {":", "∣"}) if p]
    if len(parts) > 1:
        return Expr("rel::", args=tuple(_relations(p) for p in parts))
    return _relations(parts[0]) if parts else Expr(SYM, EMPTY_TOKEN)


def _relations(items: list[Expr | str]) -> Expr:
    """`a R b S c`: one symmetric relation of all sides when every R is the same symmetric
    one (`a = b = c`), else the chain of its links."""
    sides: list[list[Expr | str]] = [[]]
    relations: list[str] = []
    for item in items:
        if isinstance(item, str) and _relation(item) is not None and sides[-1]:
            relations.append(item)
            sides.append([])
        else:
            sides[-1].append(item)
    if not relations:
        return _sum(items)
    parsed = [_sum(s) for s in sides]
    if len(set(relations)) == 1 and relations[0] in _SYMMETRIC:
        return Expr(f"rel:{relations[0]}", args=tuple(parsed))
    links = [_link(r, parsed[k], parsed[k + 1]) for k, r in enumerate(relations)]
    return links[0] if len(links) == 1 else Expr("chain", args=tuple(links))


def _link(relation: str, left: Expr, right: Expr) -> Expr:
    if relation in _ORDERED:
        if relation in _FLIPPED:
            left, right = right, left
        return Expr(f"rel:{_ORDERED[relation]}", args=(left, right))
    return Expr(f"rel:{relation}", args=(left, right))


def _sum(items: list[Expr | str]) -> Expr:
    terms: list[Expr] = []
    sign = ""
    current: list[Expr | str] = []

    def close() -> None:
        if not current:
            return
        term = _binary(current)
        if sign in _MINUS:
            term = Expr(NEG, args=(term,))
        elif sign in _SIGNED:
            term = Expr("pm", args=(term,))
        terms.append(term)

    for item in items:
        if isinstance(item, str) and (item in _PLUS or item in _MINUS or item in _SIGNED):
            close()
            current = []
            sign = item
        else:
            current.append(item)
    close()
    if not terms:
        return Expr(SYM, sign or EMPTY_TOKEN)
    return terms[0] if len(terms) == 1 else Expr(SUM, args=tuple(terms))


def _binary(items: list[Expr | str]) -> Expr:
    """Binary operators that are neither sums nor products (∪, ∘, ⊗, …), left to right."""
    parts = _split(items, _BINARY)
    if len(parts) == 1:
        return _product(items)
    operators = [i for i in items if isinstance(i, str) and i in _BINARY]
    result = _product(parts[0]) if parts[0] else Expr(SYM, EMPTY_TOKEN)
    for operator, part in zip(operators, parts[1:], strict=True):
        right = _product(part) if part else Expr(SYM, EMPTY_TOKEN)
        if operator in _COMMUTATIVE and result.head == operator:
            result = Expr(operator, args=(*result.args, right))
        else:
            result = Expr(operator, args=(result, right))
    return result


def _product(items: list[Expr | str]) -> Expr:
    """Factors multiplied (any sign, or none); `a / b` is a fraction of what precedes and the
    next factor; a big operator takes every factor after it, a known function the next one."""
    factors: list[Expr] = []
    pending_divide = False
    i = 0
    while i < len(items):
        item = items[i]
        if isinstance(item, str):
            if item in _TIMES:
                i += 1
                continue
            if item in _DIVIDE:
                pending_divide = True
                i += 1
                continue
            if item == "!" and factors:
                factors[-1] = Expr("factorial", args=(factors[-1],))
                i += 1
                continue
            item = Expr(SYM, item)
        if item.head in (POST_POWER, POST_SUB) and factors:
            head = POW if item.head == POST_POWER else "sub"
            factors[-1] = Expr(head, args=(factors[-1], item.args[0]))
            i += 1
            continue
        if item.head == BIGOP or (item.head == SYM and item.name in _BIG):
            body = _product(items[i + 1 :])
            operator = item if item.head == BIGOP else Expr(BIGOP, item.name)
            factors.append(Expr(BIGOP, operator.name, (*operator.args, body)))
            break
        if item.head in (VAR, SYM) and item.name in _DIFFERENCE and i + 1 < len(items):
            nxt = items[i + 1]
            if isinstance(nxt, Expr) and nxt.head == VAR:
                item = Expr(VAR, item.name + nxt.name)
                i += 1
        if item.head == SYM and item.name in KNOWN_FUNCTIONS and i + 1 < len(items):
            nxt = items[i + 1]
            if isinstance(nxt, Expr):
                item = Expr(APPLY, args=(item, nxt))
                i += 1
        if pending_divide and factors:
            numerator = factors.pop() if len(factors) == 1 else _times(factors)
            factors = [_fraction(numerator, item)]
            pending_divide = False
        else:
            factors.append(item)
        i += 1
    if not factors:
        return Expr(SYM, EMPTY_TOKEN)
    return _times(factors)


def _fraction(numerator: Expr, denominator: Expr) -> Expr:
    """`a/b` as the product of `a` and the inverse of `b`, so that `½ m v²`, `m v²/2` and
    `(m/2) v²` are one product; a fraction of two numbers is one number."""
    if numerator.head == NUM and denominator.head == NUM:
        return Expr(NUM, f"{numerator.name}/{denominator.name}")
    inverse = (
        Expr(NUM, f"1/{denominator.name}")
        if denominator.head == NUM
        else Expr(INV, args=(denominator,))
    )
    if numerator.head == NUM and numerator.name == "1":
        return inverse
    return _times([numerator, inverse])


def _times(factors: list[Expr]) -> Expr:
    flat: list[Expr] = []
    for factor in factors:
        flat.extend(factor.args if factor.head == PROD else (factor,))
    return flat[0] if len(flat) == 1 else Expr(PROD, args=tuple(flat))


# -- the canonical form --------------------------------------------------------------------


def _flatten(expr: Expr) -> Expr:
    """Nested sums in sums and products in products are one operator; a negated product
    keeps its sign outside."""
    args = tuple(_flatten(a) for a in expr.args)
    if expr.head in (SUM, PROD):
        flat: list[Expr] = []
        for arg in args:
            flat.extend(arg.args if arg.head == expr.head else (arg,))
        args = tuple(flat)
    return Expr(expr.head, expr.name, args)


def _commutative(expr: Expr) -> bool:
    return expr.head in _COMMUTATIVE


@dataclass
class Canonical:
    """A formula's canonical tree and the hashes search looks up."""

    tree: Expr
    pattern: str  # identifiers numbered v1, v2, … in canonical order
    named: str  # the same canonical order with the names
    variables: dict[str, str] = field(default_factory=dict)  # name → v<k>

    @property
    def size(self) -> int:
        return self.tree.size()


def _contexts(expr: Expr, colour: dict[str, str]) -> dict[str, list[str]]:
    """Where each identifier occurs: its parent's key (identifiers by colour) and its place
    there (`*` in a commutative operator, else its position)."""
    contexts: dict[str, list[str]] = defaultdict(list)

    def visit(node: Expr) -> str:
        if node.head == VAR:
            return colour[node.name]
        if not node.args:
            return f"{node.head}:{node.name}"
        keys = [visit(a) for a in node.args]
        shown = sorted(keys) if _commutative(node) else keys
        key = f"{node.head}:{node.name}({','.join(shown)})"
        for position, arg in enumerate(node.args):
            if arg.head == VAR:
                where = "*" if _commutative(node) else str(position)
                contexts[arg.name].append(f"{key}@{where}")
        return key

    visit(expr)
    return contexts


def _colours(expr: Expr, rounds: int = 3) -> dict[str, str]:
    """Each identifier's colour: refined from the contexts it occurs in, names unseen; it
    stops when a round splits no colour."""
    colour: dict[str, str] = {leaf.name: "v" for leaf in expr.leaves() if leaf.head == VAR}
    for _ in range(rounds):
        contexts = _contexts(expr, colour)
        refined = {
            name: _digest(colour[name] + "|" + "|".join(sorted(contexts[name])))[:12]
            for name in colour
        }
        split = len(set(refined.values())) > len(set(colour.values()))
        colour = refined
        if not split:
            break
    return colour


def _key(expr: Expr, colour: dict[str, str]) -> str:
    if expr.head == VAR:
        return f"v:{colour.get(expr.name, 'v')}"
    if not expr.args:
        return f"{expr.head}:{expr.name}"
    keys = [_key(a, colour) for a in expr.args]
    if _commutative(expr):
        keys.sort()
    return f"{expr.head}:{expr.name}({','.join(keys)})"


def _sorted(expr: Expr, colour: dict[str, str]) -> Expr:
    args = tuple(_sorted(a, colour) for a in expr.args)
    if _commutative(expr):
        args = tuple(sorted(args, key=lambda a: (_key(a, colour), a.text())))
    return Expr(expr.head, expr.name, args)


def canonical(expr: Expr) -> Canonical:
    """The canonical tree of an expression, its pattern and its named form."""
    tree = _flatten(expr)
    colour = _colours(tree)
    tree = _sorted(tree, colour)
    numbers: dict[str, str] = {}
    for leaf in tree.leaves():
        if leaf.head == VAR and leaf.name not in numbers:
            numbers[leaf.name] = f"v{len(numbers) + 1}"
    return Canonical(tree, _written(tree, numbers), _written(tree, None), numbers)


def _written(expr: Expr, numbers: dict[str, str] | None) -> str:
    if expr.head == VAR:
        return numbers[expr.name] if numbers is not None else f"'{expr.name}'"
    if not expr.args:
        return f"{expr.head}:{expr.name}"
    inner = ",".join(_written(a, numbers) for a in expr.args)
    return f"{expr.head}:{expr.name}({inner})"


MAX_DEPTH = 64  # deeper than any formula met (17); each level costs a few stack frames


class TooDeep(ValueError):
    """An OPT nested deeper than `MAX_DEPTH`: not read (the reason is the message)."""


def _check_depth(root: OptNode) -> None:
    stack = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise TooDeep(f"the formula nests deeper than {MAX_DEPTH} levels")
        stack.extend((child, depth + 1) for child in node.children)


def canonical_of_opt(root: OptNode) -> Canonical:
    """The canonical form of an OPT (`TooDeep` past `MAX_DEPTH` levels)."""
    _check_depth(root)
    return canonical(from_opt(root))


def written_order(root: OptNode) -> Expr:
    """An OPT's expression tree in the order it is written (flattened, not sorted): what
    reads adjacency, such as the `d x` of a differential (`TooDeep` past `MAX_DEPTH`)."""
    _check_depth(root)
    return _flatten(from_opt(root))


def identifier(root: OptNode) -> str | None:
    """The one identifier (or constant, or number) a symbol's OPT is, as formulae name it
    (`E_k`, `Δx`, `F→` for a bold or arrowed F); None for a symbol that is an expression."""
    tree = written_order(root)
    return tree.name if not tree.args and tree.name else None


def links(tree: Expr) -> list[Expr]:
    """The relations a formula states, each on its own: every pair of sides of `a = b = c`,
    each link of a chain, each statement of a system (the formula itself when it is one)."""
    if tree.head == STATEMENTS:
        return [link for statement in tree.args for link in links(statement)]
    if tree.head == "chain":
        return [link for arg in tree.args for link in links(arg)]
    if tree.head.startswith("rel:") and len(tree.args) > 2:
        sides = tree.args
        return [
            Expr(tree.head, args=(sides[i], sides[j]))
            for i in range(len(sides))
            for j in range(i + 1, len(sides))
        ]
    return [tree]


def sides(tree: Expr) -> list[Expr]:
    """The sides of every relation a formula states."""
    return [side for link in links(tree) if link.head.startswith("rel:") for side in link.args]


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=8).hexdigest()


def fingerprint(text: str) -> int:
    """A 63-bit hash of a pattern or feature (fits Arrow's int64)."""
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "big") >> 1


__all__ = [
    "KNOWN_FUNCTIONS",
    "Canonical",
    "Expr",
    "canonical",
    "canonical_of_opt",
    "fingerprint",
    "from_opt",
    "identifier",
    "links",
    "renamable",
    "sides",
]
