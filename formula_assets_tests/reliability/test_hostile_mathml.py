"""Hostile MathML: each attack becomes a MathMLError / a rejected row, fast, bounded, offline.

Every case names the fault it injects and the documented reason it must be refused with.
Network access would show up as a request on a local HTTP server; file access as a secret
file's content appearing anywhere in the outcome, or as a malformed DTD file being parsed.

Two walls keep hostile XML out: a text check (`_FORBIDDEN_MARKUP`) refuses DTDs and entity
declarations before lxml sees them, and the lxml parser itself (`mathml._PARSER`) is built to
resolve, load and fetch nothing. The second wall is tested on its own, bypassing the first.
"""

from __future__ import annotations

import base64
import gc
import re
import socket
import time
import tracemalloc
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from threading import Thread
from typing import ClassVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lxml import etree

from formula_assets.syntax import mathml
from formula_assets.syntax.mathml import MathMLError, ParseOptions, parse_mathml
from formula_assets.syntax.opt import build_opt_graphs

SECRET = "formula-assets-secret-7f3a"

# Every reason parse_mathml may give, one per `raise MathMLError(...)` site in mathml.py.
DOCUMENTED_REASONS = [
    r"input of [\d,]+ bytes exceeds the size limit",
    r"input is not valid UTF-8 \(byte \d+\)",
    r"expected MathML text, got \w+",
    r"input of [\d,]+ characters exceeds the limit of [\d,]+",
    r"empty input",
    r"DTD and entity declarations are not allowed",
    r"unknown entity &[A-Za-z][A-Za-z0-9]*;",
    r"input contains unpaired surrogate characters",
    r"not well-formed XML: .+",
    r"no root element",
    r"root element is <[^>]+>, expected <math>",
    r"element <[^>]+> from foreign namespace .+",
    r"nesting deeper than \d+",
    r"formula exceeds [\d,]+ OPT nodes",
    r"the formula did not render \(merror: .*\)",
    r"the formula is empty",
    r"content MathML \(<[^>]+>\) is not supported: only presentation MathML is",
]


def assert_documented(error: MathMLError) -> None:
    reason = error.reason
    assert isinstance(reason, str) and reason == str(error)
    assert any(re.fullmatch(p, reason, re.DOTALL) for p in DOCUMENTED_REASONS), reason


class _Recorder(BaseHTTPRequestHandler):
    hits: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        type(self).hits.append(self.path)
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b'<!ENTITY x "pwned">')

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def listener() -> Iterator[str]:
    """A local HTTP server that records any request a parser might make."""
    _Recorder.hits = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture
def secret_file(tmp_path: Path) -> Path:
    path = tmp_path / "secret.txt"
    path.write_text(SECRET)
    return path


@pytest.fixture
def broken_dtd(tmp_path: Path) -> Path:
    """A DTD file that makes any parse that reads it fail: proof of a file read."""
    path = tmp_path / "broken.dtd"
    path.write_text("<!ENTITY broken")
    return path


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def billion_laughs() -> str:
    entities = ['<!ENTITY lol "lol">'] + [
        f'<!ENTITY lol{i} "{("&lol" + (str(i - 1) if i > 1 else "") + ";") * 10}">'
        for i in range(1, 10)
    ]
    return f"<!DOCTYPE math [{''.join(entities)}]><math><mi>&lol9;</mi></math>"


def quadratic_blowup() -> str:
    return (
        f'<!DOCTYPE math [<!ENTITY a "{"x" * 50_000}">]><math><mi>'
        + "&a;" * 50_000
        + "</mi></math>"
    )


def nested(levels: int) -> str:
    """<mi>x</mi> under `levels` mrows: with <math> at depth 0, the <mi> is at levels + 1."""
    return "<math>" + "<mrow>" * levels + "<mi>x</mi>" + "</mrow>" * levels + "</math>"


def utf7(text: str) -> str:
    """`text` in UTF-7's base64 form: no '<' or '!' left for a text check to see."""
    return "+" + base64.b64encode(text.encode("utf-16-be")).decode().rstrip("=") + "-"


DTD = "DTD and entity declarations are not allowed"
NOT_XML = "not well-formed XML: "
LXML_DEPTH = "not well-formed XML: Excessive depth in document: 256"


def cases(listener: str, secret_file: Path, broken_dtd: Path) -> dict[str, tuple[str | bytes, str]]:
    """name → (input, the start of the reason it must be refused with)."""
    return {
        "billion laughs (nested entities)": (billion_laughs(), DTD),
        "quadratic blowup (one huge entity repeated)": (quadratic_blowup(), DTD),
        "XXE with a file:// system entity": (
            f'<!DOCTYPE math [<!ENTITY xxe SYSTEM "file://{secret_file}">]><math><mi>&xxe;</mi></math>',
            DTD,
        ),
        "XXE with an http:// system entity": (
            f'<!DOCTYPE math [<!ENTITY xxe SYSTEM "{listener}/xxe">]><math><mi>&xxe;</mi></math>',
            DTD,
        ),
        "external DTD": (
            f'<!DOCTYPE math SYSTEM "{listener}/math.dtd"><math><mi>x</mi></math>',
            DTD,
        ),
        "lower-case, spaced DOCTYPE": (f'<! doctype math SYSTEM "{broken_dtd}"><math/>', DTD),
        "parameter entity to an external DTD": (
            f'<!DOCTYPE math [<!ENTITY % ext SYSTEM "{listener}/p.dtd"> %ext;]><math/>',
            DTD,
        ),
        "DOCTYPE hidden by a UTF-7 encoding declaration": (
            '<?xml version="1.0" encoding="UTF-7"?>'
            + utf7("<!")
            + f'DOCTYPE math SYSTEM "file://{broken_dtd}"><math><mi>x</mi></math>',
            NOT_XML + "Start tag expected",
        ),
        "XInclude of a local file": (
            '<math xmlns:xi="http://www.w3.org/2001/XInclude">'
            f'<xi:include href="{secret_file}" parse="text"/></math>',
            "element <include> from foreign namespace",
        ),
        "100,000-deep nesting (1.3 M characters: over the size limit)": (
            nested(100_000),
            "input of 1,300,023 characters exceeds the limit of 1,000,000",
        ),
        "250-deep nesting (past our limit, within lxml's)": (
            nested(250),
            "nesting deeper than 200",
        ),
        "5,000-deep nesting (within the size limit)": (nested(5_000), LXML_DEPTH),
        "50 MB formula": (
            "<math>" + "<mi>x</mi>" * 5_000_000 + "</math>",
            "input of 50,000,013 characters exceeds the limit of 1,000,000",
        ),
        "20,001 OPT nodes": (
            "<math><mrow>" + "<mi>x</mi>" * 20_000 + "</mrow></math>",
            "formula exceeds 20,000 OPT nodes",
        ),
        "non-UTF-8 bytes": (b"<math><mi>\xff\xfe\xfa</mi></math>", "input is not valid UTF-8"),
        "HTML instead of XML": ("<html><body><p>x<br>y &nbsp;</p></body></html>", NOT_XML),
        "empty string": ("", "empty input"),
        "random bytes": (bytes(range(128, 256)) * 32, "input is not valid UTF-8 (byte 0)"),
    }


CASE_NAMES = [
    "billion laughs (nested entities)",
    "quadratic blowup (one huge entity repeated)",
    "XXE with a file:// system entity",
    "XXE with an http:// system entity",
    "external DTD",
    "lower-case, spaced DOCTYPE",
    "parameter entity to an external DTD",
    "DOCTYPE hidden by a UTF-7 encoding declaration",
    "XInclude of a local file",
    "100,000-deep nesting (1.3 M characters: over the size limit)",
    "250-deep nesting (past our limit, within lxml's)",
    "5,000-deep nesting (within the size limit)",
    "50 MB formula",
    "20,001 OPT nodes",
    "non-UTF-8 bytes",
    "HTML instead of XML",
    "empty string",
    "random bytes",
]


@pytest.mark.parametrize("name", CASE_NAMES)
def test_attack_is_a_clear_error_fast_bounded_and_offline(
    name: str, listener: str, secret_file: Path, broken_dtd: Path
) -> None:
    text, reason = cases(listener, secret_file, broken_dtd)[name]
    # CPU seconds of this thread: the parser's own work, not the wait for a core on a busy
    # machine, nor other threads of a long test session, nor a collection of the session's
    # heap that the parse happened to trigger (0.17 s here alone, 1.1 s counted by
    # process_time at the end of a full run)
    gc.collect()
    gc.disable()
    tracemalloc.start()
    started = time.thread_time()
    try:
        with pytest.raises(MathMLError) as raised:
            parse_mathml(text)
    finally:
        spent = time.thread_time() - started
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        gc.enable()
    assert spent < 1.0, name
    assert peak < 64 * 2**20, f"{name}: {peak / 2**20:.0f} MiB"
    assert raised.value.reason.startswith(reason), raised.value.reason
    assert_documented(raised.value)
    assert len(raised.value.reason) < 500
    assert SECRET not in raised.value.reason
    assert broken_dtd.name not in raised.value.reason  # the DTD file was never parsed
    assert _Recorder.hits == [], f"{name} made the parser fetch {_Recorder.hits}"


def test_xinclude_is_not_processed(secret_file: Path) -> None:
    """A MathML element tree that holds an XInclude is parsed without including anything."""
    mathml_text = (
        '<math xmlns:xi="http://www.w3.org/2001/XInclude"><mi>x</mi>'
        f'<xi:include href="{secret_file}" parse="text"/></math>'
    )
    with pytest.raises(MathMLError, match="foreign namespace"):
        parse_mathml(mathml_text)


def test_attacks_in_the_pipeline_become_rejected_rows(
    listener: str, secret_file: Path, broken_dtd: Path
) -> None:
    attacks = cases(listener, secret_file, broken_dtd)
    # Undecodable bytes reach Python text as lone surrogates (as json and os do).
    rows = [
        (f"Q{i}", text if isinstance(text, str) else text.decode("utf-8", "surrogateescape"))
        for i, (text, _) in enumerate(attacks.values(), start=1)
    ]
    rows.append(("Q999", "<math><mi>x</mi></math>"))
    started = time.thread_time()
    built = build_opt_graphs(rows)
    assert time.thread_time() - started < 1.0 * len(rows)
    assert built.graphs["qid"].to_pylist() == ["Q999"]
    rejected = built.rejected.to_pylist()
    assert len(rejected) == len(attacks)
    assert all(r["stage"] == "parse" and r["reason"] for r in rejected)
    assert all(len(r["excerpt"]) <= 200 for r in rejected)
    assert not any(SECRET in r["reason"] + r["excerpt"] for r in rejected)
    assert _Recorder.hits == []


# ---- size and depth limits at their edges, with the default options -----------------------


def test_character_limit_is_inclusive() -> None:
    body = "<math><mi>x</mi></math>"
    assert parse_mathml(body + " " * (1_000_000 - len(body))).token == "x"
    with pytest.raises(MathMLError) as raised:
        parse_mathml(body + " " * (1_000_001 - len(body)))
    assert raised.value.reason == "input of 1,000,001 characters exceeds the limit of 1,000,000"


def test_byte_limit_is_four_bytes_a_character() -> None:
    """Bytes are refused before decoding only beyond 4 × max_input_chars (UTF-8's widest)."""
    options = ParseOptions(max_input_chars=100)
    widest = "\U0001d435".encode()  # 4 bytes, one character
    with pytest.raises(MathMLError) as raised:
        parse_mathml(widest * 100, options)  # 400 bytes, 100 characters: decoded, then parsed
    assert raised.value.reason.startswith(NOT_XML)
    with pytest.raises(MathMLError) as raised:
        parse_mathml(widest * 100 + b" ", options)
    assert raised.value.reason == "input of 401 bytes exceeds the size limit"
    with pytest.raises(MathMLError) as raised:
        parse_mathml(b" " * 4_000_001)
    assert raised.value.reason == "input of 4,000,001 bytes exceeds the size limit"
    with pytest.raises(MathMLError) as raised:
        parse_mathml(b" " * 4_000_000)
    assert raised.value.reason == "input of 4,000,000 characters exceeds the limit of 1,000,000"


def test_depth_limit_default_is_200_levels_inclusive() -> None:
    assert ParseOptions().max_depth == 200
    assert parse_mathml(nested(199)).token == "x"  # <mi> at depth 200
    with pytest.raises(MathMLError) as raised:
        parse_mathml(nested(200))  # <mi> at depth 201
    assert raised.value.reason == "nesting deeper than 200"


@pytest.mark.parametrize(
    ("levels", "reason"),
    [
        (201, "nesting deeper than 200"),
        (254, "nesting deeper than 200"),  # 256 elements in all: lxml's own limit, reached
        (255, LXML_DEPTH),  # 257 elements: lxml refuses before we look
        (300, LXML_DEPTH),
        (5_000, LXML_DEPTH),
        (70_000, LXML_DEPTH),  # 910 k characters: still under the size limit
    ],
)
def test_deep_nesting_under_the_size_limit(levels: int, reason: str) -> None:
    text = nested(levels)
    assert len(text) <= 1_000_000
    with pytest.raises(MathMLError) as raised:
        parse_mathml(text)
    assert raised.value.reason.startswith(reason), raised.value.reason


# ---- the second wall: lxml's parser on its own, with the text check bypassed ----------------


def raw_parse(text: str) -> etree._Element:
    return etree.fromstring(text.encode(), mathml._PARSER)


def test_parser_keeps_internal_entities_unexpanded() -> None:
    root = raw_parse('<!DOCTYPE math [<!ENTITY a "EXPANDED">]><math><mi>&a;</mi></math>')
    assert root[0].text is None
    assert root[0][0].tag is etree.Entity and root[0][0].text == "&a;"
    assert b"EXPANDED" not in etree.tostring(root)


def test_parser_does_not_expand_an_entity_bomb() -> None:
    small = (
        '<!DOCTYPE math [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">'
        '<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">]><math><mi>&c;</mi></math>'
    )
    assert etree.tostring(raw_parse(small)) == b"<math><mi>&c;</mi></math>"
    started = time.thread_time()
    with pytest.raises(etree.XMLSyntaxError, match="amplification"):
        raw_parse(billion_laughs())  # libxml2 refuses the declarations themselves
    assert time.thread_time() - started < 1.0


def test_parser_does_not_read_external_entities(secret_file: Path) -> None:
    root = raw_parse(
        f'<!DOCTYPE math [<!ENTITY xxe SYSTEM "file://{secret_file}">]><math><mi>&xxe;</mi></math>'
    )
    assert SECRET.encode() not in etree.tostring(root)
    assert root[0].text is None


@pytest.mark.parametrize(
    "template",
    [
        '<!DOCTYPE math SYSTEM "file://{path}"><math><mi>x</mi></math>',
        '<!DOCTYPE math SYSTEM "{path}"><math><mi>x</mi></math>',
        '<!DOCTYPE math [<!ENTITY % p SYSTEM "file://{path}"> %p;]><math><mi>x</mi></math>',
    ],
    ids=["DTD by URL", "DTD by path", "parameter entity"],
)
def test_parser_does_not_read_local_dtd_files(template: str, broken_dtd: Path) -> None:
    """A broken DTD file would fail the parse if it were read; the document parses."""
    root = raw_parse(template.format(path=broken_dtd))
    assert etree.tostring(root) == b"<math><mi>x</mi></math>"


def test_parser_does_not_take_declarations_from_a_dtd_file(tmp_path: Path) -> None:
    dtd = tmp_path / "entities.dtd"
    dtd.write_text(f'<!ENTITY s "{SECRET}">')
    root = raw_parse(f'<!DOCTYPE math SYSTEM "file://{dtd}"><math><mi>&s;</mi></math>')
    external = root.getroottree().docinfo.externalDTD
    assert external is None or list(external.entities()) == []
    assert SECRET.encode() not in etree.tostring(root)


@pytest.mark.parametrize(
    "template",
    [
        '<!DOCTYPE math SYSTEM "{url}/math.dtd"><math><mi>x</mi></math>',
        '<!DOCTYPE math [<!ENTITY % p SYSTEM "{url}/p.dtd"> %p;]><math/>',
        '<!DOCTYPE math [<!ENTITY e SYSTEM "{url}/e">]><math><mi>&e;</mi></math>',
    ],
    ids=["DTD", "parameter entity", "general entity"],
)
def test_parser_makes_no_network_request(template: str, listener: str) -> None:
    raw_parse(template.format(url=listener))
    assert _Recorder.hits == []
    # A closed port: nothing is attempted, so nothing fails either.
    raw_parse(template.format(url=f"http://127.0.0.1:{closed_port()}"))


def test_parser_refuses_trees_deeper_than_lxml_allows() -> None:
    text = "<math>" + "<mrow>" * 300 + "</mrow>" * 300 + "</math>"
    with pytest.raises(etree.XMLSyntaxError, match="Excessive depth in document: 256"):
        raw_parse(text)


def test_parser_drops_comments_and_processing_instructions() -> None:
    root = raw_parse("<math><!-- note --><?pi data?><mi>a<!--c-->b<?p q?></mi></math>")
    assert etree.tostring(root) == b"<math><mi>ab</mi></math>"
    assert len(root) == 1 and len(root[0]) == 0


def test_parser_does_not_recover_broken_xml() -> None:
    with pytest.raises(etree.XMLSyntaxError):
        raw_parse("<math><mi>x</mi>")


def test_parser_reads_utf8_whatever_the_declaration_says() -> None:
    """The text check sees UTF-8 text, so the parser must read exactly that."""
    root = raw_parse('<?xml version="1.0" encoding="ISO-8859-1"?><math><mi>é</mi></math>')
    assert root[0].text == "é"
    with pytest.raises(etree.XMLSyntaxError, match="Start tag expected"):
        raw_parse('<?xml version="1.0" encoding="UTF-7"?>' + utf7("<!") + "DOCTYPE math><math/>")
    assert parse_mathml(
        '<?xml version="1.0" encoding="ISO-8859-1"?><math><mi>é</mi></math>'
    ).token == ("é")


def test_duplicate_and_odd_xml_ids_are_not_checked() -> None:
    """Ids are not collected: a converter's repeated or odd xml:id does not fail a formula."""
    text = '<math><mi xml:id="a">x</mi><mi xml:id="a">y</mi><mi xml:id="1 2">z</mi></math>'
    assert len(raw_parse(text)) == 3
    assert parse_mathml(text).to_sexpr() == "group(x, y, z)"


# ---- properties: whatever the input, a documented MathMLError or a tree --------------------


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=400))
def test_arbitrary_text_raises_only_documented_errors(text: str) -> None:
    try:
        root = parse_mathml(text)
    except MathMLError as error:
        assert_documented(error)
        return
    assert root.size() >= 1


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=400))
def test_arbitrary_bytes_raise_only_documented_errors(data: bytes) -> None:
    try:
        root = parse_mathml(data)
    except MathMLError as error:
        assert_documented(error)
        return
    assert root.size() >= 1


TAGS = [
    "math",
    "mrow",
    "mi",
    "mo",
    "mn",
    "msup",
    "msub",
    "mfrac",
    "msqrt",
    "mroot",
    "mtable",
    "mtr",
    "mtd",
    "mstyle",
    "munderover",
    "mmultiscripts",
    "mprescripts",
    "none",
    "mfenced",
    "semantics",
    "annotation",
    "merror",
    "mspace",
    "menclose",
    "mtext",
    "mglyph",
    "annotation-xml",
    "apply",
    "ci",
    "x:y",
]


@st.composite
def markup(draw, depth: int = 0) -> str:
    """Random MathML-shaped markup: well-formed and not, deep and wide, odd arities."""
    if depth > 6 or draw(st.booleans()):
        return draw(
            st.sampled_from(
                [
                    "x",
                    "",
                    "&amp;",
                    "&alpha;",
                    "\u2061",
                    "&#x1D435;",
                    "<",
                    "&",
                    "&nosuch;",
                    "∅",
                    "&LT;mi&GT;",
                    "<!-- &nosuch; -->",
                    "<![CDATA[&alpha;]]>",
                    "<!--",
                    "ℝ𝐅",
                ]
            )
        )
    tag = draw(st.sampled_from(TAGS))
    children = draw(st.lists(markup(depth + 1), max_size=4))
    attrs = draw(
        st.sampled_from(
            [
                "",
                ' open="["',
                ' separators=""',
                ' xmlns:x="urn:x"',
                ' xmlns="urn:z"',
                ' encoding="MathML-Presentation"',
                ' mathvariant="bold"',
                ' alt="&LT;"',
            ]
        )
    )
    close = draw(st.sampled_from([f"</{tag}>", f"</{tag}>", "", "</mi>"]))
    return f"<{tag}{attrs}>{''.join(children)}{close}"


@settings(max_examples=150, deadline=None)
@given(markup())
def test_random_mathml_like_markup_raises_only_documented_errors(text: str) -> None:
    try:
        root = parse_mathml(text if text.startswith("<math") else f"<math>{text}</math>")
    except MathMLError as error:
        assert_documented(error)
        return
    assert root.size() >= 1
    assert root.role == "root" and root.position == 0


def test_undecodable_text_in_a_record_is_stored_not_crashed() -> None:
    """A dump's JSON may hold lone surrogate escapes; the table keeps U+FFFD instead."""
    from formula_assets.ingest.records import FormulaRecord, records_to_table

    record = FormulaRecord(qid="Q1", label="bad \udcff label", description=None, mathml="<math/>")
    table = records_to_table([record])
    assert table["label"].to_pylist() == ["bad \ufffd label"]
