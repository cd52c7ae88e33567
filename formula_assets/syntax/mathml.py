"""Presentation MathML → operator tree (OPT), paper §3.1.

Every MathML element becomes an OPT node of one of three canonical types:

* ``symbol``   — token elements ``mi``, ``mn``, ``mtext``, ``ms`` (value: their text);
* ``operator`` — ``mo`` (value: the operator character);
* ``function`` — structured constructs (value: a name): ``msup``→power, ``msub``→subscript,
  ``msubsup``→subsup, ``mfrac``→frac, ``msqrt``→sqrt, ``mroot``→root, ``munder``→under,
  ``mover``→over, ``munderover``→underover, ``mtable``/``mtr``/``mtd``→table/row/cell,
  ``mrow``→group, ``mmultiscripts``→multiscripts, ``menclose``→enclose, any other element by
  its tag name.

Each child carries a role (base, exp, sub, sup, num, den, index, under, over, row, cell,
presub, presup, label, arg) and its position among its siblings.

Normalisation (each switchable through `ParseOptions`, all on by default):

* ``unwrap_wrappers``: ``math``, ``mstyle``, ``mpadded``, ``semantics`` and ``maction`` only
  style or annotate; their children take their place.
* ``collapse_single_child_groups``: an ``mrow`` with one child is that child; an empty one
  disappears. Inferred rows (``msqrt``, ``mtd``, ``menclose``) are canonical: a lone group
  inside them is lifted, so ``<msqrt><mrow>x+1</mrow></msqrt>`` equals ``<msqrt>x+1</msqrt>``.
* ``drop_invisible_operators``: U+2061–U+2064 (function application, invisible times,
  separator, plus) carry no token of their own.
* ``drop_empty_tokens``: tokens whose text is empty or only white space vanish; spacing
  (``mspace``, ``mphantom``, alignment marks) always does.
* ``styled_letters`` (``distinct``, ``fold`` or ``keep``): how styled letters and other
  compatibility characters become token text, see `STYLED_LETTERS`.

Styled letters carry meaning (ℝ the reals, 𝐅 a vector, 𝔤 a Lie algebra), so by default
(``distinct``) a styled letter or digit is its plain character after a style word: ``ℝ`` and
``<mi mathvariant="double-struck">R</mi>`` are ``double-struck R``, ``𝐅`` and ``𝑭`` are
``bold F``. Italic is no style (it is how a letter identifier looks anyway), so 𝑥 is ``x``
and bold italic is ``bold``. ``mathvariant`` counts on token elements and is inherited from
``mstyle``, where a styled character of that style exists (as renderers draw it). Other
compatibility characters fold only when they are a variant of one character (ϕ → φ, ℏ → ħ);
sequences (∬, …), super- and subscripts and fractions (², ½) stay as written. ``fold`` is
NFKC of the text, ``mathvariant`` ignored (ℝ and R, ∬ and ∫∫ one token); ``keep`` leaves the
characters as written.

Named entities (``&alpha;``) become numeric character references before parsing, so they
stay text (``&LT;`` is a ``<`` character, never markup); comments, CDATA sections and
processing instructions are left as they are. ``mglyph`` stands for its ``alt`` text. Content
MathML is not read: a ``semantics`` element whose first child is content MathML is read
through its ``annotation-xml`` in presentation MathML, and content MathML with none is
rejected, saying so.

A positional child that normalises to nothing (``{}^{14}C``) becomes the ``symbol`` token
``EMPTY_TOKEN`` so arities stay intact. A construct with the wrong number of children is
repaired (missing roles are left out, extra children become ``arg``) and recorded in
`OptTree.warnings`.

Parsing is safe for hostile input: no DTDs, entity declarations, network or file access;
input size, element depth and OPT size are bounded; every failure is a `MathMLError`.
"""

from __future__ import annotations

import html.entities
import re
import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache

from lxml import etree

from formula_assets.syntax.schema import FUNCTION, OPERATOR, SYMBOL

__all__ = [
    "EMPTY_TOKEN",
    "STYLED_LETTERS",
    "MathMLError",
    "OptNode",
    "OptTree",
    "ParseOptions",
    "parse_mathml",
    "parse_mathml_tree",
    "read_xml",
]

MATHML_NS = "http://www.w3.org/1998/Math/MathML"
EMPTY_TOKEN = "∅"
# How styled letters become token text (`ParseOptions.styled_letters`): the distinction kept,
# folded to plain letters by NFKC (the parser's behaviour before the distinction), as written.
DISTINCT, FOLD, KEEP = "distinct", "fold", "keep"
STYLED_LETTERS = (DISTINCT, FOLD, KEEP)


class MathMLError(ValueError):
    """The input is not MathML this parser accepts; `reason` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class ParseOptions:
    unwrap_wrappers: bool = True
    collapse_single_child_groups: bool = True
    drop_invisible_operators: bool = True
    drop_empty_tokens: bool = True
    styled_letters: str = DISTINCT
    max_input_chars: int = 1_000_000
    max_depth: int = 200
    max_nodes: int = 20_000

    def __post_init__(self) -> None:
        if self.styled_letters not in STYLED_LETTERS:
            raise ValueError(
                f"styled_letters must be one of {', '.join(STYLED_LETTERS)}, "
                f"not {self.styled_letters!r}"
            )


DEFAULT_OPTIONS = ParseOptions()


class OptNode:
    """One OPT node: (type, value, children), plus the role and position it has in its parent."""

    __slots__ = ("children", "position", "role", "token", "type")

    def __init__(
        self,
        type: str,
        token: str,
        children: list[OptNode] | None = None,
        role: str = "root",
        position: int = 0,
    ) -> None:
        self.type = type
        self.token = token
        self.children: list[OptNode] = children if children is not None else []
        self.role = role
        self.position = position

    def __repr__(self) -> str:
        inner = f", {len(self.children)} children" if self.children else ""
        return f"OptNode({self.type} {self.token!r} as {self.role}#{self.position}{inner})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, OptNode):
            return NotImplemented
        return (
            self.type == other.type
            and self.token == other.token
            and self.role == other.role
            and self.position == other.position
            and self.children == other.children
        )

    __hash__ = None  # type: ignore[assignment]

    def to_sexpr(self) -> str:
        """Compact text form for tests and logs: ``power(x, 2)``."""
        if not self.children:
            return self.token
        return f"{self.token}({', '.join(c.to_sexpr() for c in self.children)})"

    def size(self) -> int:
        return 1 + sum(c.size() for c in self.children)


@dataclass
class OptTree:
    root: OptNode
    warnings: list[str] = field(default_factory=list)


# Element name → (function token, child roles by position) for fixed-arity constructs.
_SCRIPTED: dict[str, tuple[str, tuple[str, ...]]] = {
    "msup": ("power", ("base", "exp")),
    "msub": ("subscript", ("base", "sub")),
    "msubsup": ("subsup", ("base", "sub", "sup")),
    "mfrac": ("frac", ("num", "den")),
    "mroot": ("root", ("base", "index")),
    "munder": ("under", ("base", "under")),
    "mover": ("over", ("base", "over")),
    "munderover": ("underover", ("base", "under", "over")),
}
# Elements whose content is an inferred row: the node's children are its arguments.
_INFERRED_ROW: dict[str, str] = {
    "msqrt": "sqrt",
    "mtd": "cell",
    "menclose": "enclose",
    "mscarries": "carries",
}
_TOKENS = {"mi", "mn", "mtext", "ms"}
_WRAPPERS = {"math", "mstyle", "mpadded", "semantics", "maction"}
_SILENT = {
    "mspace",
    "mphantom",
    "malignmark",
    "maligngroup",
    "none",
    "mprescripts",
    "annotation",
    "annotation-xml",
}
_INVISIBLE = {"\u2061", "\u2062", "\u2063", "\u2064"}
_XML_PREDEFINED = {"amp", "lt", "gt", "quot", "apos"}
# A named entity XML does not predefine (most formulae have none: they take the fast path).
_NAMED_ENTITY = re.compile(r"&(?!(?:amp|lt|gt|quot|apos);)[A-Za-z][A-Za-z0-9]{1,31};")
# A named entity, or the start of markup whose text is not expanded (comment, CDATA, PI).
_ENTITY_OR_MARKUP = re.compile(r"&([A-Za-z][A-Za-z0-9]{1,31});|<!--|<!\[CDATA\[|<\?")
_MARKUP_END = {"<!--": "-->", "<![CDATA[": "]]>", "<?": "?>"}
_FORBIDDEN_MARKUP = re.compile(r"<!\s*(DOCTYPE|ENTITY)", re.IGNORECASE)
# Content MathML (MathML 3, chapter 4): this parser reads presentation MathML only.
_CONTENT_NAMES = """
    apply bind bvar ci cn cs csymbol share cerror cbytes set list vector matrix matrixrow
    interval piecewise piece otherwise lambda declare reln fn condition domainofapplication
    degree lowlimit uplimit logbase momentabout sep abs and approx arccos arccosh arccot
    arccoth arccsc arccsch arcsec arcsech arcsin arcsinh arctan arctanh arg card
    cartesianproduct ceiling codomain compose conjugate cos cosh cot coth csc csch curl
    determinant diff divergence divide domain eq equivalent exists exp factorial factorof
    floor forall gcd geq grad gt ident image imaginary implies in int intersect inverse
    laplacian lcm leq limit ln log lt max mean median min minus mode moment neq not notin
    notprsubset notsubset or outerproduct partialdiff plus power prsubset product quotient
    real rem root scalarproduct sdev sec sech selector setdiff sin sinh subset sum tan tanh
    tendsto times transpose union variance vectorproduct xor complexes emptyset eulergamma
    exponentiale false imaginaryi infinity integers naturalnumbers notanumber pi primes
    rationals reals true"""
_CONTENT = frozenset(_CONTENT_NAMES.split())
_ANNOTATIONS = {"annotation", "annotation-xml"}
_PRESENTATION_ENCODINGS = {"mathml-presentation", "application/mathml-presentation+xml"}

# Styled letters: Unicode's name of a <font> variant spells its style. Italic is no style
# (the look of any letter identifier); black-letter is fraktur; bold comes first.
_STYLE_WORDS = {
    "BOLD": "bold",
    "ITALIC": "",
    "SCRIPT": "script",
    "FRAKTUR": "fraktur",
    "BLACK-LETTER": "fraktur",
    "DOUBLE-STRUCK": "double-struck",
    "SANS-SERIF": "sans-serif",
    "MONOSPACE": "monospace",
}
# mathvariant values → the same styles (italic dropped); the Arabic ones draw no new letter.
_VARIANT_STYLES = {
    "bold": "bold",
    "bold-italic": "bold",
    "double-struck": "double-struck",
    "script": "script",
    "bold-script": "bold script",
    "fraktur": "fraktur",
    "bold-fraktur": "bold fraktur",
    "sans-serif": "sans-serif",
    "bold-sans-serif": "bold sans-serif",
    "sans-serif-italic": "sans-serif",
    "sans-serif-bold-italic": "bold sans-serif",
    "monospace": "monospace",
}
# Compatibility decompositions that change what a character says: kept as written.
_MEANINGFUL_TAGS = {"<super>", "<sub>", "<fraction>", "<circle>", "<square>"}


def _style_of(name: str) -> str:
    """The style a styled character's Unicode name spells ("bold", "double-struck", "")."""
    words = name.split()
    if words[:1] == ["MATHEMATICAL"]:
        words = words[1:]
    styles = []
    for word in words:
        if word not in _STYLE_WORDS:
            break
        styles.append(_STYLE_WORDS[word])
    ordered = sorted(filter(None, styles), key=lambda style: style != "bold")
    return " ".join(ordered)


def _styled_table() -> tuple[dict[str, tuple[str, str]], frozenset[tuple[str, str]]]:
    """Every styled character → (style, plain character), and the (style, plain) that exist.

    They all live in two blocks: Letterlike Symbols (ℂ U+2102 to ⅉ U+2149) and Mathematical
    Alphanumeric Symbols (U+1D400 to U+1D7FF).
    """
    table: dict[str, tuple[str, str]] = {}
    for code in (*range(0x2102, 0x214A), *range(0x1D400, 0x1D800)):
        char = chr(code)
        if unicodedata.decomposition(char).startswith("<font>"):
            table[char] = (_style_of(unicodedata.name(char)), unicodedata.normalize("NFKC", char))
    return table, frozenset(table.values())


_STYLED, _STYLES_THAT_EXIST = _styled_table()


def _char_form(char: str, style: str) -> tuple[str, str]:
    """(style, text) of one character, `style` being the token's mathvariant style."""
    styled = _STYLED.get(char)
    if styled is not None:
        return styled
    if style and (style, char) in _STYLES_THAT_EXIST:
        return style, char
    decomposition = unicodedata.decomposition(char)
    if not decomposition.startswith("<"):  # none, or canonical: NFC composes it
        return "", char
    tag = decomposition[: decomposition.index(">") + 1]
    folded = unicodedata.normalize("NFKC", char)
    if tag in _MEANINGFUL_TAGS or (tag == "<compat>" and len(folded) != 1):
        return "", char  # ², ½, ∬, …, ″, spacing accents
    return "", folded  # a variant of one character: ϕ → φ, fullwidth → ASCII, NBSP


@lru_cache(maxsize=65_536)
def _distinct_text(text: str, style: str) -> str:
    """Token text with styled runs spelled out: 𝐅 → "bold F", ℝx → "double-struck R x"."""
    runs: list[tuple[str, list[str]]] = []
    for char in text:
        char_style, plain = _char_form(char, style)
        if runs and runs[-1][0] == char_style:
            runs[-1][1].append(plain)
        else:
            runs.append((char_style, [plain]))
    parts = [
        f"{run_style} {''.join(chars)}" if run_style else "".join(chars)
        for run_style, chars in runs
    ]
    return " ".join(unicodedata.normalize("NFC", " ".join(parts)).split())


def _inner_text(element: etree._Element) -> str:
    """A token's text with markup inside it: an ``mglyph`` stands for its ``alt`` text."""
    parts = [element.text or ""]
    for child in element:
        if isinstance(child.tag, str):
            if child.tag.rpartition("}")[2] == "mglyph":
                parts.append(child.get("alt") or "")
            else:
                parts.append("".join(child.itertext()))
        parts.append(child.tail or "")
    return "".join(parts)


class _RefuseExternal(etree.Resolver):
    """Answers every request for an external DTD or entity with nothing.

    ``load_dtd=False`` alone does not keep files out: with libxml2 < 2.15, lxml implements
    ``collect_ids=False`` through the parser's ``loadsubset`` field, and libxml2 then reads an
    external DTD subset or parameter entity from any local path the document names.
    """

    def resolve(self, url: str, pubid: str | None, context: object) -> object:
        return self.resolve_string("", context)


def _make_parser() -> etree.XMLParser:
    parser = etree.XMLParser(
        encoding="utf-8",  # what _to_bytes hands over, whatever an XML declaration says
        resolve_entities=False,
        no_network=True,
        load_dtd=False,
        dtd_validation=False,
        huge_tree=False,
        remove_comments=True,
        remove_pis=True,
        collect_ids=False,
        recover=False,
    )
    parser.resolvers.add(_RefuseExternal())
    return parser


_PARSER = _make_parser()


def _replace_named_entities(text: str) -> str:
    """HTML/MathML named entities (``&alpha;``) → numeric character references, without a DTD.

    A reference is always text to the XML parser, so ``&LT;mo&GT;`` stays the characters
    ``<mo>`` and never becomes markup. Comments, CDATA and processing instructions are
    copied as they are: entities mean nothing there. One pass, no backtracking: linear time.
    """
    out: list[str] = []
    position = 0
    while True:
        match = _ENTITY_OR_MARKUP.search(text, position)
        if match is None:
            break
        name = match.group(1)
        if name is None:  # markup: copy it through its end (unterminated: the parser rejects)
            close = _MARKUP_END[match.group(0)]
            end = text.find(close, match.end())
            end = len(text) if end == -1 else end + len(close)
            out.append(text[position:end])
            position = end
            continue
        out.append(text[position : match.start()])
        position = match.end()
        if name in _XML_PREDEFINED:
            out.append(match.group(0))
            continue
        chars = html.entities.html5.get(name + ";")
        if chars is None:
            raise MathMLError(f"unknown entity &{name};")
        out.append("".join(f"&#x{ord(char):X};" for char in chars))
    out.append(text[position:])
    return "".join(out)


def _to_bytes(text: str | bytes, options: ParseOptions) -> bytes:
    if isinstance(text, bytes | bytearray | memoryview):
        raw = bytes(text)
        if len(raw) > options.max_input_chars * 4:
            raise MathMLError(f"input of {len(raw):,} bytes exceeds the size limit")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise MathMLError(f"input is not valid UTF-8 (byte {exc.start})") from None
    if not isinstance(text, str):
        raise MathMLError(f"expected MathML text, got {type(text).__name__}")
    if len(text) > options.max_input_chars:
        raise MathMLError(
            f"input of {len(text):,} characters exceeds the limit of {options.max_input_chars:,}"
        )
    text = text.strip().lstrip("\ufeff")
    if not text:
        raise MathMLError("empty input")
    if _FORBIDDEN_MARKUP.search(text):
        raise MathMLError("DTD and entity declarations are not allowed")
    if _NAMED_ENTITY.search(text):
        text = _replace_named_entities(text)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        raise MathMLError("input contains unpaired surrogate characters") from None


_LOCAL_NAMES: dict[str, str] = {}


def _local_name(element: etree._Element) -> str:
    tag = element.tag
    name = _LOCAL_NAMES.get(tag)
    if name is not None:
        return name
    if tag[0] == "{":
        ns, _, name = tag[1:].partition("}")
        if ns != MATHML_NS:
            raise MathMLError(f"element <{name}> from foreign namespace {ns[:60]!r}")
    else:
        name = tag
    if len(_LOCAL_NAMES) < 4096:  # hostile input must not grow the cache without bound
        _LOCAL_NAMES[tag] = name
    return name


class _Converter:
    __slots__ = (
        "budget",
        "keep_empty",
        "keep_invisible",
        "options",
        "styled",
        "variant",
        "warnings",
    )

    def __init__(self, options: ParseOptions) -> None:
        self.options = options
        self.warnings: list[str] = []
        self.budget = options.max_nodes
        self.styled = options.styled_letters
        self.variant = ""  # the mathvariant an enclosing mstyle sets
        self.keep_empty = not options.drop_empty_tokens
        self.keep_invisible = not options.drop_invisible_operators

    def _node(self, type: str, token: str, children: list[OptNode] | None = None) -> OptNode:
        self.budget -= 1
        if self.budget < 0:
            raise MathMLError(f"formula exceeds {self.options.max_nodes:,} OPT nodes")
        return OptNode(type, token, children)

    def _text(self, element: etree._Element, variant: str = "") -> str:
        """A token's text, white space collapsed, styled letters as `styled_letters` says."""
        text = _inner_text(element) if len(element) else element.text or ""
        if not text.isalnum():  # letters and digits only: no white space to collapse
            text = " ".join(text.split())
        if self.styled == DISTINCT:
            style = _VARIANT_STYLES.get(variant, "")
            if style or not text.isascii():
                text = _distinct_text(text, style)
        elif self.styled == FOLD and not text.isascii():
            text = unicodedata.normalize("NFKC", text)
        return text

    def sequence(self, element: etree._Element, depth: int) -> list[OptNode]:
        """Nodes this element contributes to an enclosing row (zero, one or several)."""
        if depth > self.options.max_depth:
            raise MathMLError(f"nesting deeper than {self.options.max_depth}")
        name = _local_name(element)
        if name == "mi" or name == "mn" or name == "mtext" or name == "ms":
            text = self._text(element, element.get("mathvariant") or self.variant)
            if not text:
                if not self.keep_empty:
                    return []
                text = EMPTY_TOKEN
            return [self._node(SYMBOL, text)]
        if name == "mo":
            text = self._text(element, element.get("mathvariant") or self.variant)
            if text in _INVISIBLE and not self.keep_invisible:
                return []
            if not text:
                if not self.keep_empty:
                    return []
                text = EMPTY_TOKEN
            return [self._node(OPERATOR, text)]
        if name == "mrow":
            children = self.row(element, depth)
            if len(children) <= 1 and self.options.collapse_single_child_groups:
                return children
            return [self._with_roles(self._node(FUNCTION, "group"), children, "arg")]
        if name == "mstyle":
            variant = element.get("mathvariant")
            if variant is not None:  # inherited by the tokens inside
                outer, self.variant = self.variant, variant
                nodes = self._unwrapped(element, name, depth)
                self.variant = outer
                return nodes
        return self._unwrapped(element, name, depth)

    def _unwrapped(self, element: etree._Element, name: str, depth: int) -> list[OptNode]:
        if name in _WRAPPERS and self.options.unwrap_wrappers:
            if name == "semantics":
                return self._semantics(element, depth)
            if name == "maction":
                first = next((c for c in element if isinstance(c.tag, str)), None)
                return [] if first is None else self.sequence(first, depth + 1)
            return self.row(element, depth)
        if name in _SILENT:
            return []
        if name == "merror":
            detail = " ".join("".join(element.itertext()).split())[:120]
            raise MathMLError(f"the formula did not render (merror: {detail!r})")
        return [self.construct(element, name, depth)]

    def _semantics(self, element: etree._Element, depth: int) -> list[OptNode]:
        """The annotated expression, or its presentation annotation when that is content."""
        kids = [c for c in element if isinstance(c.tag, str)]
        if not kids:
            return []
        first = kids[0]
        first_name = first.tag.rpartition("}")[2]
        if first_name in _CONTENT or first_name in _ANNOTATIONS:
            for kid in kids:
                encoding = " ".join(kid.get("encoding", "").split()).lower()
                if (
                    kid.tag.rpartition("}")[2] == "annotation-xml"
                    and encoding in _PRESENTATION_ENCODINGS
                ):
                    return self.row(kid, depth + 1)
        return self.sequence(first, depth + 1)

    def row(self, element: etree._Element, depth: int) -> list[OptNode]:
        nodes: list[OptNode] = []
        depth += 1
        for child in element:
            if isinstance(child.tag, str):  # elements only
                nodes += self.sequence(child, depth)
        return nodes

    def one(self, element: etree._Element, depth: int) -> OptNode:
        """The single node an element stands for in a positional slot."""
        return self.single(self.sequence(element, depth))

    def single(self, nodes: list[OptNode]) -> OptNode:
        """One node for a sequence: itself, a group of several, or the empty placeholder."""
        if len(nodes) == 1:
            return nodes[0]
        if not nodes:
            return self._node(SYMBOL, EMPTY_TOKEN)
        return self._with_roles(self._node(FUNCTION, "group"), nodes, "arg")

    @staticmethod
    def _with_roles(node: OptNode, children: list[OptNode], role: str) -> OptNode:
        for position, child in enumerate(children):
            child.role = role
            child.position = position
        node.children = children
        return node

    def construct(self, element: etree._Element, name: str, depth: int) -> OptNode:
        kids = [c for c in element if isinstance(c.tag, str)]
        if name in _SCRIPTED:
            token, roles = _SCRIPTED[name]
            if len(kids) != len(roles):
                self.warnings.append(
                    f"<{name}> has {len(kids)} children, expected {len(roles)}; repaired"
                )
            node = self._node(FUNCTION, token)
            for position, kid in enumerate(kids):
                child = self.one(kid, depth + 1)
                child.role = roles[position] if position < len(roles) else "arg"
                child.position = position
                node.children.append(child)
            return node
        if name in _INFERRED_ROW:
            children = self.row(element, depth)
            if len(children) == 1 and children[0].token == "group" and children[0].children:
                children = children[0].children
            return self._with_roles(self._node(FUNCTION, _INFERRED_ROW[name]), children, "arg")
        if name == "mtable":  # rows are normalised like any row: wrappers, spacing, merror
            rows = self.row(element, depth)
            return self._with_roles(self._node(FUNCTION, "table"), rows, "row")
        if name in ("mtr", "mlabeledtr"):
            cells = self.row(element, depth)
            node = self._with_roles(self._node(FUNCTION, "row"), cells, "cell")
            if name == "mlabeledtr" and cells:
                cells[0].role = "label"
            return node
        if name == "mmultiscripts":
            return self._multiscripts(kids, depth)
        if name == "mfenced":
            return self._fenced(element, kids, depth)
        if name == "mrow" or name in _WRAPPERS:  # wrappers kept as nodes when not unwrapped
            token = "group" if name == "mrow" else name
            return self._with_roles(self._node(FUNCTION, token), self.row(element, depth), "arg")
        if name in _CONTENT:
            raise MathMLError(
                f"content MathML (<{name}>) is not supported: only presentation MathML is"
            )
        # Any other element: a function node named by its tag, or a symbol if it is a leaf.
        if not kids:
            text = self._text(element) or element.get("alt", "").strip()
            return self._node(SYMBOL, text or name)
        children = [self.one(k, depth + 1) for k in kids]
        return self._with_roles(self._node(FUNCTION, name), children, "arg")

    def _multiscripts(self, kids: list[etree._Element], depth: int) -> OptNode:
        node = self._node(FUNCTION, "multiscripts")
        if not kids:
            self.warnings.append("<mmultiscripts> without a base; repaired")
            return node
        base = self.one(kids[0], depth + 1)
        base.role = "base"
        node.children.append(base)
        pre = False
        slot = 0
        for kid in kids[1:]:
            name = _local_name(kid)
            if name == "mprescripts":
                pre, slot = True, 0
                continue
            role = ("presub", "presup")[slot % 2] if pre else ("sub", "sup")[slot % 2]
            slot += 1
            if name == "none":
                continue
            child = self.one(kid, depth + 1)
            child.role = role
            child.position = len(node.children)
            node.children.append(child)
        return node

    def _fenced(self, element: etree._Element, kids: list[etree._Element], depth: int) -> OptNode:
        """Deprecated <mfenced>: expand to the row of fences and separators it renders as."""
        open_, close = element.get("open", "("), element.get("close", ")")
        separators = "".join(element.get("separators", ",").split())
        items: list[OptNode] = []
        if open_:
            items.append(self._node(OPERATOR, open_))
        for i, kid in enumerate(kids):
            if i and separators:
                items.append(self._node(OPERATOR, separators[min(i - 1, len(separators) - 1)]))
            items.append(self.one(kid, depth + 1))
        if close:
            items.append(self._node(OPERATOR, close))
        return self._with_roles(self._node(FUNCTION, "group"), items, "arg")


def read_xml(text: str | bytes, options: ParseOptions = DEFAULT_OPTIONS) -> etree._Element:
    """The XML of a MathML input, read with the hardening above (no DTD, no entity
    declarations, no network or file access, the size limit), its root a `<math>` element."""
    data = _to_bytes(text, options)
    try:
        root = etree.fromstring(data, _PARSER)
    except etree.XMLSyntaxError as exc:
        raise MathMLError(f"not well-formed XML: {exc}") from None
    if root is None or not isinstance(root.tag, str):
        raise MathMLError("no root element")
    name = _local_name(root)
    if name != "math":
        raise MathMLError(f"root element is <{name}>, expected <math>")
    return root


def parse_mathml_tree(text: str | bytes, options: ParseOptions = DEFAULT_OPTIONS) -> OptTree:
    """Parse MathML into an OPT with the repairs made on the way.

    Bad input raises MathMLError with the reason: the size, depth and node limits, XML that is
    not well-formed, what is not MathML. Any other exception is a bug and propagates.
    """
    root = read_xml(text, options)
    converter = _Converter(options)
    nodes = converter.sequence(root, 0)
    if not nodes:  # not `node.token == EMPTY_TOKEN`: <mi>∅</mi> is the empty set, not nothing
        raise MathMLError("the formula is empty")
    node = converter.single(nodes)
    node.role, node.position = "root", 0
    return OptTree(node, converter.warnings)


def parse_mathml(text: str | bytes, options: ParseOptions = DEFAULT_OPTIONS) -> OptNode:
    """Parse MathML into the root `OptNode` of its operator tree (errors: see parse_mathml_tree)."""
    return parse_mathml_tree(text, options).root
