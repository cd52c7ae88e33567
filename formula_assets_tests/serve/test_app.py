"""The service's JSON API and pages through the real ASGI application (httpx's test client),
over a small lake of real snapshot items: answers, the errors people make, the hostile-MathML
suite over HTTP, and what a page may contain."""

from __future__ import annotations

import dataclasses
import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote_from_bytes

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from fastapi.testclient import TestClient
from upath import UPath

from formula_assets.serve.app import create_app
from formula_assets.serve.content import Loaded
from formula_assets.serve.published import Published, Snapshot, fingerprint
from formula_assets_tests.reliability import test_hostile_mathml as hostile
from formula_assets_tests.support.audit_rows import lead
from formula_assets_tests.support.search_lake import (
    FROZEN,
    default_embedder,
    people_records,
    write_search_lake,
)

V_LEAD = lead("unannotated_symbol", "V has no concept", 0.9, symbol="V", suggestion="Q25428",
              items=["Q11"], quickstatements='Q41591\tP527\tQ25428\tP7235\t"V"')  # fmt: skip
AUDIT = [
    {"qid": "Q41591", "label": "Ohm's law", "scored": True, "suspicion": 0.9, "priority": 0.9,
     "finding": "V has no concept", "leads": [V_LEAD, lead("concept_on_two_symbols", "two", 0.1)]},
    {"qid": "Q35875", "label": "mass–energy equivalence", "scored": True, "suspicion": 0.5,
     "priority": 0.0, "finding": "fine", "leads": []},
    {"qid": "Q11518", "label": "Pythagorean theorem", "scored": False, "suspicion": None,
     "priority": 0.0, "finding": None, "leads": []},
]  # fmt: skip


# kinetic energy stated a second way, as an item may state several defining formulae
MOMENTUM_FORM = (
    '<math xmlns="http://www.w3.org/1998/Math/MathML"><mrow><mi>E</mi><mo>=</mo><mfrac>'
    "<msup><mi>p</mi><mn>2</mn></msup><mrow><mn>2</mn><mi>m</mi></mrow></mfrac></mrow></math>"
)


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> UPath:
    root = tmp_path_factory.mktemp("serve_lake")
    records = [
        dataclasses.replace(r, other_formulae=[MOMENTUM_FORM]) if r.qid == "Q46276" else r
        for r in people_records()
    ]
    write_search_lake(root, records, default_embedder())
    pq.write_table(pa.Table.from_pylist(AUDIT), str(root / "annotation_audit.parquet"))
    return UPath(root)


def published(root: UPath) -> Published:
    def load(version: str) -> Snapshot:
        return Snapshot(version, time.time(), Loaded.load(root, method=FROZEN))

    return Published(load, lambda: fingerprint(root), poll_s=60)


@pytest.fixture(scope="module")
def client(lake: UPath) -> Iterator[TestClient]:
    with TestClient(create_app(published(lake))) as client:
        yield client


def test_a_text_search_answers_with_hits_and_safe_formulae(client: TestClient) -> None:
    answer = client.get("/api/search", params={"q": "ohms law", "kind": "text", "top": 3})
    assert answer.status_code == 200
    body = answer.json()
    assert body["version"] and body["channels"] == ["names", "meaning"]
    assert body["hits"][0]["qid"] == "Q41591" and len(body["hits"]) == 3
    hit = body["hits"][0]
    assert hit["display_mathml"].startswith('<math xmlns="http://www.w3.org/1998/Math/MathML">')
    assert "data-symbol=" in hit["display_mathml"]


def test_a_formula_search_explains_its_symbols(client: TestClient) -> None:
    body = client.get("/api/search", params={"q": "E = m c^2", "kind": "latex"}).json()
    assert body["hits"][0]["qid"] == "Q35875"
    assert {s["identifier"] for s in body["symbols"]} == {"E", "m", "c"}
    assert body["display_mathml"].startswith("<math")


@pytest.mark.parametrize(
    ("params", "reason"),
    [
        ({"q": "x", "kind": "words"}, "kind: Input should be 'text', 'latex' or 'mathml'"),
        ({"q": "x", "top": 0}, "top: Input should be greater than or equal to 1"),
        ({"q": "x", "top": 101}, "top: Input should be less than or equal to 100"),
        ({"kind": "text"}, "q: Field required"),
        ({"q": "   "}, "the query is empty"),
        ({"q": "x" * 1001}, "longer than 1,000 characters"),
        ({"q": "\\frac{1}{2", "kind": "latex"}, "at character 9 is never closed"),
        ({"q": "<math><mi>x</mi>", "kind": "mathml"}, "the formula does not parse"),
    ],
)
def test_a_bad_request_is_a_4xx_with_the_reason(client, params: dict, reason: str) -> None:
    answer = client.get("/api/search", params=params)
    assert answer.status_code == 400, answer.text
    body = answer.json()
    assert reason in body["error"] and body["status"] == 400


def test_a_brace_error_says_where(client: TestClient) -> None:
    body = client.get("/api/search", params={"q": "\\frac{1}{2", "kind": "latex"}).json()
    assert body["position"] == 8
    preview = client.get("/api/preview", params={"latex": "a}"})
    assert preview.status_code == 400 and preview.json()["position"] == 1
    good = client.get("/api/preview", params={"latex": "E_k = \\frac{1}{2} m v^2"}).json()
    assert 'data-symbol="E_k"' in good["display_mathml"]


listener = hostile.listener
secret_file = hostile.secret_file
broken_dtd = hostile.broken_dtd


@pytest.mark.parametrize("name", hostile.CASE_NAMES)
def test_hostile_mathml_over_http_is_refused_with_a_reason(
    client: TestClient, name: str, listener: str, secret_file: Path, broken_dtd: Path
) -> None:
    """Every attack of the parser's own suite, POSTed as a MathML query (a URL is too short
    for most): a 4xx with the reason, within seconds, no file read, nothing fetched."""
    text, _ = hostile.cases(listener, secret_file, broken_dtd)[name]
    if isinstance(text, bytes):  # raw bytes in the body: no JSON, no UTF-8
        body = b'{"q": "' + text + b'", "kind": "mathml"}'
    else:
        body = json.dumps({"q": text, "kind": "mathml"}).encode()
    started = time.monotonic()
    answer = client.post("/api/search", content=body, headers={"Content-Type": "application/json"})
    assert time.monotonic() - started < 10, name
    assert 400 <= answer.status_code < 500, (name, answer.status_code, answer.text[:300])
    assert answer.json()["error"], name
    assert hostile.SECRET not in answer.text and hostile._Recorder.hits == [], name


def test_a_url_with_bytes_that_are_not_utf8_is_refused(client: TestClient) -> None:
    answer = client.get("/api/search?kind=text&q=" + quote_from_bytes(b"caf\xe9"))
    assert answer.status_code == 400 and "not UTF-8" in answer.json()["error"]


def test_a_long_formula_may_come_in_a_body(client: TestClient) -> None:
    answer = client.post("/api/search", json={"q": "E = m c^2", "kind": "latex", "top": 2})
    assert answer.status_code == 200 and answer.json()["hits"][0]["qid"] == "Q35875"
    too_big = client.post(
        "/api/search", content=b"x" * 500_000, headers={"Content-Type": "application/json"}
    )
    assert too_big.status_code == 413 and "at most" in too_big.json()["error"]


def test_an_item_has_its_formula_concepts_and_similar_formulae(client: TestClient) -> None:
    body = client.get("/api/items/Q46276").json()
    assert body["label"] == "kinetic energy" and body["url"].endswith("/Q46276")
    symbols = {c["symbol"] for c in body["concepts"]}
    assert symbols & set(re.findall(r'data-symbol="([^"]+)"', body["display_mathml"]))
    assert body["similar"] and all(s["qid"] != "Q46276" for s in body["similar"])
    (other,) = body["other_formulae"]  # the further defining formula, shown as the first is
    assert other["mathml"] == MOMENTUM_FORM and "<mfrac" in other["display_mathml"]
    assert client.get("/api/items/Q11518").json()["other_formulae"] == []
    missing = client.get("/api/items/Q1")
    assert missing.status_code == 404 and "no formula item" in missing.json()["error"]


def test_a_concept_annotated_twice_shows_each_of_its_symbols(client: TestClient) -> None:
    body = client.get("/api/items/Q11518").json()  # the legs a and b are both "cathetus"
    legs = [c for c in body["concepts"] if c["label"] == "cathetus"]
    assert sorted(c["symbol"] for c in legs) == ["a", "b"]
    for leg in legs:
        assert f'data-symbol="{leg["symbol"]}"' in leg["symbol_display_mathml"]


def test_the_audit_is_a_queue_of_findings_filtered_and_paged(client: TestClient) -> None:
    body = client.get("/api/audit", params={"limit": 1}).json()
    assert body["total"] == 3 and [f["qid"] for f in body["findings"]] == ["Q41591"]
    first = body["findings"][0]
    assert first["kind"] == "unannotated_symbol" and first["symbols"] == ["V"]
    assert first["quickstatements"] == ['Q41591\tP527\tQ25428\tP7235\t"V"']
    assert first["evidence"] == ["Q11"] and first["url"].endswith("/Q41591")
    assert body["kinds"] == ["unannotated_symbol", "concept_on_two_symbols"]
    second = client.get("/api/audit", params={"limit": 1, "offset": 1}).json()
    assert [f["kind"] for f in second["findings"]] == ["concept_on_two_symbols"]
    shared = client.get("/api/audit", params={"kind": "concept_on_two_symbols"}).json()
    assert shared["total"] == 1 and shared["findings"][0]["quickstatements"] == []
    found = client.get("/api/audit", params={"q": "ENERGY"}).json()
    assert [(f["qid"], f["kind"]) for f in found["findings"]] == [("Q35875", None)]
    assert client.get("/api/audit", params={"limit": 201}).status_code == 400


def test_health_docs_and_pages(client: TestClient) -> None:
    health = client.get("/api/health").json()
    assert health["items"] == 40 and health["failed_loads"] == 0
    assert client.get("/openapi.json").json()["paths"].keys() >= {
        "/api/search", "/api/items/{qid}", "/api/audit", "/api/preview"
    }  # fmt: skip
    assert client.get("/docs").status_code == 200
    for path in ("/", "/audit", "/item/Q41591"):
        page = client.get(path)
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        assert '<script type="module" src="/static/' in page.text
        assert "http://" not in page.text and "https://" not in page.text  # nothing fetched
    assert client.get("/static/search.js").status_code == 200


def test_nothing_writes_and_nothing_crosses_origins(client: TestClient) -> None:
    for method in ("put", "delete", "patch"):
        assert getattr(client, method)("/api/search").status_code == 405
    for path in ("/api/items/Q41591", "/api/audit", "/api/preview", "/api/health", "/"):
        assert client.post(path, json={}).status_code == 405, path
    answer = client.get(
        "/api/search", params={"q": "x"}, headers={"Origin": "https://elsewhere.example"}
    )
    assert "access-control-allow-origin" not in answer.headers  # CORS is off
    policy = answer.headers["content-security-policy"]
    assert "default-src 'self'" in policy and "script-src 'self'" in policy
    assert answer.headers["x-content-type-options"] == "nosniff"
    refused = client.post(  # an answer the middleware gives itself carries them too
        "/api/search", content=b"x" * 500_000, headers={"Content-Type": "application/json"}
    )
    assert (
        refused.status_code == 413
        and "default-src 'self'" in refused.headers["content-security-policy"]
    )
