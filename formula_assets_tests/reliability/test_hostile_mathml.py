"""Hostile MathML: each attack becomes a MathMLError / a rejected row, fast, bounded, offline.

Every case names the fault it injects. Network access would show up as a request on a local
HTTP server; file access as a secret file's content appearing anywhere in the outcome.
"""

import contextlib
import os
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

from formula_assets.syntax.mathml import MathMLError, parse_mathml
from formula_assets.syntax.opt import build_opt_graphs

SECRET = "formula-assets-secret-7f3a"


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
    Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture
def secret_file(tmp_path: Path) -> Path:
    path = tmp_path / "secret.txt"
    path.write_text(SECRET)
    return path


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


def cases(listener: str, secret_file: Path) -> dict[str, str | bytes]:
    return {
        "billion laughs (nested entities)": billion_laughs(),
        "quadratic blowup (one huge entity repeated)": quadratic_blowup(),
        "XXE with a file:// system entity": (
            f'<!DOCTYPE math [<!ENTITY xxe SYSTEM "file://{secret_file}">]><math><mi>&xxe;</mi></math>'
        ),
        "XXE with an http:// system entity": (
            f'<!DOCTYPE math [<!ENTITY xxe SYSTEM "{listener}/xxe">]><math><mi>&xxe;</mi></math>'
        ),
        "external DTD": f'<!DOCTYPE math SYSTEM "{listener}/math.dtd"><math><mi>x</mi></math>',
        "parameter entity to an external DTD": (
            f'<!DOCTYPE math [<!ENTITY % ext SYSTEM "{listener}/p.dtd"> %ext;]><math/>'
        ),
        "XInclude of a local file": (
            '<math xmlns:xi="http://www.w3.org/2001/XInclude">'
            f'<xi:include href="{secret_file}" parse="text"/></math>'
        ),
        "100,000-deep nesting": "<math>" + "<mrow>" * 100_000 + "</mrow>" * 100_000 + "</math>",
        "50 MB formula": "<math>" + "<mi>x</mi>" * 5_000_000 + "</math>",
        "non-UTF-8 bytes": b"<math><mi>\xff\xfe\xfa</mi></math>",
        "HTML instead of XML": "<html><body><p>x<br>y &nbsp;</p></body></html>",
        "empty string": "",
        "random bytes": os.urandom(4096),
    }


CASE_NAMES = [
    "billion laughs (nested entities)",
    "quadratic blowup (one huge entity repeated)",
    "XXE with a file:// system entity",
    "XXE with an http:// system entity",
    "external DTD",
    "parameter entity to an external DTD",
    "XInclude of a local file",
    "100,000-deep nesting",
    "50 MB formula",
    "non-UTF-8 bytes",
    "HTML instead of XML",
    "empty string",
    "random bytes",
]


@pytest.mark.parametrize("name", CASE_NAMES)
def test_attack_is_a_clear_error_fast_bounded_and_offline(
    name: str, listener: str, secret_file: Path
) -> None:
    text = cases(listener, secret_file)[name]
    tracemalloc.start()
    started = time.perf_counter()
    try:
        with pytest.raises(MathMLError) as raised:
            parse_mathml(text)
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert time.perf_counter() - started < 1.0, name
    assert peak < 64 * 2**20, f"{name}: {peak / 2**20:.0f} MiB"
    assert raised.value.reason and len(raised.value.reason) < 500
    assert SECRET not in raised.value.reason
    assert _Recorder.hits == [], f"{name} made the parser fetch {_Recorder.hits}"


def test_xinclude_is_not_processed(secret_file: Path) -> None:
    """A MathML element tree that holds an XInclude is parsed without including anything."""
    mathml = (
        '<math xmlns:xi="http://www.w3.org/2001/XInclude"><mi>x</mi>'
        f'<xi:include href="{secret_file}" parse="text"/></math>'
    )
    with pytest.raises(MathMLError, match="foreign namespace"):
        parse_mathml(mathml)


def test_attacks_in_the_pipeline_become_rejected_rows(listener: str, secret_file: Path) -> None:
    attacks = cases(listener, secret_file)
    # Undecodable bytes reach Python text as lone surrogates (as json and os do).
    rows = [
        (f"Q{i}", text if isinstance(text, str) else text.decode("utf-8", "surrogateescape"))
        for i, text in enumerate(attacks.values(), start=1)
    ]
    rows.append(("Q999", "<math><mi>x</mi></math>"))
    started = time.perf_counter()
    built = build_opt_graphs(rows)
    assert time.perf_counter() - started < 1.0 * len(rows)
    assert built.graphs["qid"].to_pylist() == ["Q999"]
    rejected = built.rejected.to_pylist()
    assert len(rejected) == len(attacks)
    assert all(r["stage"] == "parse" and r["reason"] for r in rejected)
    assert all(len(r["excerpt"]) <= 200 for r in rejected)
    assert not any(SECRET in r["reason"] + r["excerpt"] for r in rejected)
    assert _Recorder.hits == []


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=400))
def test_arbitrary_text_raises_only_mathml_error(text: str) -> None:
    with contextlib.suppress(MathMLError):
        parse_mathml(text)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=400))
def test_arbitrary_bytes_raise_only_mathml_error(data: bytes) -> None:
    with contextlib.suppress(MathMLError):
        parse_mathml(data)


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
    "x:y",
]


@st.composite
def markup(draw, depth: int = 0) -> str:
    """Random MathML-shaped markup: well-formed and not, deep and wide, odd arities."""
    if depth > 6 or draw(st.booleans()):
        return draw(st.sampled_from(["x", "", "&amp;", "&alpha;", "\u2061", "&#x1D435;", "<", "&"]))
    tag = draw(st.sampled_from(TAGS))
    children = draw(st.lists(markup(depth + 1), max_size=4))
    attrs = draw(st.sampled_from(["", ' open="["', ' separators=""', ' xmlns:x="urn:x"']))
    close = draw(st.sampled_from([f"</{tag}>", f"</{tag}>", "", "</mi>"]))
    return f"<{tag}{attrs}>{''.join(children)}{close}"


@settings(max_examples=400, deadline=None)
@given(markup())
def test_random_mathml_like_markup_raises_only_mathml_error(text: str) -> None:
    try:
        root = parse_mathml(text if text.startswith("<math") else f"<math>{text}</math>")
    except MathMLError:
        return
    assert root.size() >= 1


def test_undecodable_text_in_a_record_is_stored_not_crashed() -> None:
    """A dump's JSON may hold lone surrogate escapes; the table keeps U+FFFD instead."""
    from formula_assets.ingest.records import FormulaRecord, records_to_table

    record = FormulaRecord(qid="Q1", label="bad \udcff label", description=None, mathml="<math/>")
    table = records_to_table([record])
    assert table["label"].to_pylist() == ["bad \ufffd label"]
