"""An OPT written back as presentation MathML: the inverse of the parser's element mapping.

Formula variants made on the tree (a renaming, a swap of sides) become MathML queries that go
through the whole query path again, parser included.
"""

from __future__ import annotations

from xml.sax.saxutils import escape

from formula_assets.syntax.mathml import MATHML_NS, OptNode
from formula_assets.syntax.schema import FUNCTION, OPERATOR

_ELEMENTS = {
    "power": "msup",
    "subscript": "msub",
    "subsup": "msubsup",
    "frac": "mfrac",
    "root": "mroot",
    "under": "munder",
    "over": "mover",
    "underover": "munderover",
    "sqrt": "msqrt",
    "table": "mtable",
    "row": "mtr",
    "cell": "mtd",
    "group": "mrow",
    "enclose": "menclose",
    "multiscripts": "mmultiscripts",
}


def _number(text: str) -> bool:
    return text.replace(".", "", 1).isdigit()


def _write(node: OptNode) -> str:
    if node.type != FUNCTION:
        if node.type == OPERATOR:
            return f"<mo>{escape(node.token)}</mo>"
        tag = "mn" if _number(node.token) else "mi"
        return f"<{tag}>{escape(node.token)}</{tag}>"
    tag = _ELEMENTS.get(node.token, node.token)
    inner = "".join(_write(child) for child in node.children)
    return f"<{tag}>{inner}</{tag}>"


def to_mathml(root: OptNode) -> str:
    """The OPT as a `<math>` element (styled letters keep their spelled-out text)."""
    return f'<math xmlns="{MATHML_NS}">{_write(root)}</math>'
