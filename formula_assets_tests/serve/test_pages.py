"""The pages in a real browser: the real service on a free port over a small lake, headless
Debian Chromium driven by Playwright. A LaTeX query previews and finds rendered formulae, a
text query finds a name, the keyboard reaches an item page whose concepts light up their
symbols, and two ticked audit findings download as QuickStatements. Screenshots go to
test-artifacts/."""

from __future__ import annotations

import dataclasses
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from formula_assets_tests.support.audit_rows import lead
from formula_assets_tests.support.search_lake import (
    default_embedder,
    people_records,
    write_search_lake,
)
from formula_assets_tests.ui.test_browser import ARTIFACTS, CHROMIUM_FLAGS, chromium

CLI = Path(sys.executable).parent / "formula-assets"


def addition(qid: str, text: str, concept: str, symbol: str, tex: str) -> dict:
    line = f'{qid}\tP527\t{concept}\tP7235\t"{tex}"'
    return lead(
        "unannotated_symbol", text, 0.8,
        symbol=symbol, suggestion=concept, items=["Q35875"], quickstatements=line,
    )  # fmt: skip


AUDIT = [
    {"qid": "Q41591", "label": "Ohm's law", "scored": True, "suspicion": 0.9, "priority": 0.9,
     "finding": "V has no concept; the corpus suggests voltage",
     "leads": [addition("Q41591", "V has no concept; the corpus suggests voltage", "Q25428",
                        "V", "V")]},
    {"qid": "Q46276", "label": "kinetic energy", "scored": True, "suspicion": 0.8, "priority": 0.8,
     "finding": "E_k has no concept; the corpus suggests kinetic energy",
     "leads": [addition("Q46276", "E_k has no concept; the corpus suggests kinetic energy",
                        "Q46276", "E_k", "E_{k}")]},
    {"qid": "Q35875", "label": "mass–energy equivalence", "scored": True, "suspicion": 0.1,
     "priority": 0.0, "finding": "nothing to add", "leads": []},
]  # fmt: skip


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


CURRENT_FORM = (
    '<math xmlns="http://www.w3.org/1998/Math/MathML"><mrow><mi>I</mi><mo>=</mo><mfrac>'
    "<mi>V</mi><mi>R</mi></mfrac></mrow></math>"
)


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("pages_lake")
    records = [  # Ohm's law stated a second way: an item may state several defining formulae
        dataclasses.replace(r, other_formulae=[CURRENT_FORM]) if r.qid == "Q41591" else r
        for r in people_records()
    ]
    write_search_lake(root, records, default_embedder())
    pq.write_table(pa.Table.from_pylist(AUDIT), str(root / "annotation_audit.parquet"))
    port = free_port()
    env = {**os.environ, "FORMULA_ASSETS_DATA_LAKE": str(root), "HF_HUB_OFFLINE": "1"}
    server = subprocess.Popen(
        [str(CLI), "serve", "--port", str(port), "--workers", "1"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        try:
            with urllib.request.urlopen(f"{base}/api/health", timeout=5):
                break
        except OSError:
            assert time.monotonic() < deadline and server.poll() is None, "no service"
            time.sleep(0.2)
    try:
        yield base
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.mark.slow
def test_search_item_and_audit_pages_in_chromium(service: str, tmp_path: Path) -> None:
    from playwright.sync_api import expect, sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium(), headless=True, args=CHROMIUM_FLAGS
        )
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 900}, accept_downloads=True)
            problems: list[str] = []
            page.on("pageerror", lambda error: problems.append(str(error)))
            page.on("requestfailed", lambda request: problems.append(request.url))
            page.on(  # a script or style the Content-Security-Policy refused
                "console",
                lambda m: problems.append(m.text) if "Content Security Policy" in m.text else None,
            )

            # a LaTeX query: the preview renders it as MathML as it is typed
            page.goto(service)
            page.keyboard.type("E = m c^2")  # the box has the focus
            expect(page.locator("#preview math")).to_be_visible()
            page.keyboard.press("Enter")
            first = page.locator(".hit").first
            expect(first.locator(".title")).to_have_text("mass–energy equivalence")
            expect(first.locator(".formula math")).to_be_visible()
            expect(page.locator(".symbols dt").first).to_be_visible()  # symbols explained
            page.screenshot(path=str(ARTIFACTS / "search_latex.png"))

            # a LaTeX error says where it is
            page.fill("#q", "\\frac{1}{2")
            expect(page.locator("#preview.wrong")).to_contain_text("at character 9")

            # a text query, from the keyboard: `/` focuses the box, Tab reaches the first hit
            page.locator("body").click()
            page.keyboard.press("/")
            page.keyboard.type("ohms law")
            page.keyboard.press("Enter")
            expect(page.locator(".hit .title").first).to_have_text("Ohm's law")
            expect(page.locator(".hit .channel.names").first).to_contain_text("exact")
            page.screenshot(path=str(ARTIFACTS / "search_text.png"))
            page.locator(".hit .title").first.focus()
            page.keyboard.press("Enter")

            # the item page: hovering a concept lights its symbol in the formula
            expect(page.locator("h1")).to_have_text("Ohm's law")
            expect(page.locator("#item")).not_to_contain_text("null")  # no absent part written
            concept = page.locator(".concept-list li[data-symbol]").first
            symbol = concept.get_attribute("data-symbol")
            concept.hover()
            lit = page.locator(f'.formula.large .lit[data-symbol="{symbol}"]')
            expect(lit.first).to_be_visible()
            concept.focus()
            page.mouse.move(0, 0)
            expect(page.locator(".similar li").first).to_be_visible()
            expect(page.locator(".other-formulae li math")).to_have_count(1)
            expect(page.locator(".other-formulae li math mfrac")).to_have_count(1)
            page.screenshot(path=str(ARTIFACTS / "item.png"))

            # the OpenAPI page runs from the service's own files (the CSP allows no other)
            page.goto(f"{service}/docs")
            expect(page.locator(".opblock").first).to_be_visible()

            # the audit: tick two findings, download them as QuickStatements
            page.goto(f"{service}/audit")
            ticks = page.locator(".finding input[type=checkbox]:not([disabled])")
            expect(ticks).to_have_count(2)
            ticks.nth(0).check()
            ticks.nth(1).check()
            expect(page.locator("#download")).to_have_text("Download QuickStatements (2)")
            with page.expect_download() as download:
                page.locator("#download").click()
            saved = tmp_path / "batch.txt"
            download.value.save_as(saved)
            lines = saved.read_text().strip().splitlines()
            assert lines == [
                'Q41591\tP527\tQ25428\tP7235\t"V"',
                'Q46276\tP527\tQ46276\tP7235\t"E_{k}"',
            ]
            assert page.locator(".finding .lit").count() >= 1  # the symbols in question
            evidence = page.locator(".finding p a[href='/item/Q35875']")
            expect(evidence).to_have_count(2)  # each finding links the items it rests on
            page.screenshot(path=str(ARTIFACTS / "audit.png"))
            assert problems == [], problems
        finally:
            browser.close()
