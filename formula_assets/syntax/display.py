"""MathML as a page shows it: read by the parser's hardened XML reader, rebuilt from MathML
elements and presentation attributes only, and each identifier marked.

A formula from the data lake (Wikidata's rendering) or from a query goes into an HTML page as
markup, so nothing but MathML may pass: any element outside MathML's presentation vocabulary
is dropped with its content, any attribute outside the list below (event handlers, `href`,
`style`, namespaced ones) is dropped, text is escaped. Each element that is one identifier as
structure search reads it (`mi`, a subscripted or accented letter: `syntax.canonical`) gets
`data-symbol="<identifier>"`, so a page can light up a concept's symbol in the formula.
"""

from __future__ import annotations

from xml.sax.saxutils import escape, quoteattr

from lxml import etree

from formula_assets.syntax.canonical import TooDeep, identifier
from formula_assets.syntax.mathml import (
    DEFAULT_OPTIONS,
    MATHML_NS,
    MathMLError,
    ParseOptions,
    parse_mathml,
    read_xml,
)

ELEMENTS = frozenset(
    [
        "math",
        "mrow",
        "mi",
        "mn",
        "mo",
        "mtext",
        "ms",
        "mspace",
        "msub",
        "msup",
        "msubsup",
        "mfrac",
        "msqrt",
        "mroot",
        "munder",
        "mover",
        "munderover",
        "mtable",
        "mtr",
        "mtd",
        "mstyle",
        "mpadded",
        "mphantom",
        "menclose",
        "mmultiscripts",
        "mprescripts",
        "none",
        "semantics",
        "merror",
        "maction",
    ]
)
ATTRIBUTES = frozenset(
    [
        "mathvariant",
        "displaystyle",
        "scriptlevel",
        "stretchy",
        "fence",
        "separator",
        "lspace",
        "rspace",
        "accent",
        "accentunder",
        "linethickness",
        "columnalign",
        "rowalign",
        "columnspacing",
        "rowspacing",
        "mathsize",
        "notation",
        "form",
        "largeop",
        "movablelimits",
        "symmetric",
        "width",
        "height",
        "depth",
        "display",
    ]
)
_MARKED = frozenset({"mi", "msub", "msup", "msubsup", "mover"})
MAX_DEPTH = 64


def _symbol(element: etree._Element, options: ParseOptions) -> str | None:
    """The identifier an element is, if it is one (its OPT read alone)."""
    try:
        root = parse_mathml(
            f'<math xmlns="{MATHML_NS}">{etree.tostring(element, encoding="unicode")}</math>',
            options,
        )
        return identifier(root)
    except (MathMLError, TooDeep):
        return None


def _write(element: etree._Element, options: ParseOptions, depth: int, out: list[str]) -> None:
    if depth > MAX_DEPTH:
        raise MathMLError(f"nesting deeper than {MAX_DEPTH}")
    name = etree.QName(element).localname  # parse_mathml refused foreign namespaces
    if name not in ELEMENTS:
        return
    attributes = [
        f" {key}={quoteattr(value)}"
        for key, value in sorted(element.attrib.items())
        if key in ATTRIBUTES
    ]
    if name in _MARKED:
        symbol = _symbol(element, options)
        if symbol:
            attributes.append(f" data-symbol={quoteattr(symbol)}")
    if name == "math":
        attributes.insert(0, f' xmlns="{MATHML_NS}"')
    out.append(f"<{name}{''.join(attributes)}>")
    if element.text and name in ("mi", "mn", "mo", "mtext", "ms"):
        out.append(escape(element.text))
    for child in element:
        if isinstance(child.tag, str):
            _write(child, options, depth + 1, out)
        if child.tail and name in ("mi", "mn", "mo", "mtext", "ms"):
            out.append(escape(child.tail))
    out.append(f"</{name}>")


def display_mathml(text: str, options: ParseOptions = DEFAULT_OPTIONS) -> str:
    """Safe MathML for a page (a `MathMLError` when the input is no MathML the parser reads)."""
    parse_mathml(text, options)  # every limit of the parser holds
    root = read_xml(text, options)
    out: list[str] = []
    _write(root, options, 0, out)
    return "".join(out)
