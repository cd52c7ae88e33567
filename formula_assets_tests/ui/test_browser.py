"""The web UI in a real browser: `dg dev` on a free port, driven by headless Chromium.

Opens the asset graph of every group, checks that every asset key is rendered, launches the
materialization of `wikidata_formulae` from its page, sees it succeed, and saves screenshots
to test-artifacts/. Debian's Chromium is used (never a downloaded browser).
"""

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from formula_assets.definitions import defs
from formula_assets_tests.support import dev_server
from formula_assets_tests.support.dev_server import graphql

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        message = "Debian's chromium is not installed (apt-get install chromium)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return path


@pytest.fixture
def dagster_dev(tmp_path: Path) -> Iterator[str]:
    """A `dg dev` server on its own instance; the whole process group is stopped after."""
    home, lake = tmp_path / "dagster_home", tmp_path / "lake"
    env = {
        **os.environ,
        "DAGSTER_HOME": str(home),
        "FORMULA_ASSETS_DATA_LAKE": str(lake),
        "FORMULA_ASSETS_AUTOMATION": "off",  # only the run this test launches
        "HF_HUB_OFFLINE": "1",
    }
    env.pop("FORMULA_ASSETS_SOURCE", None)
    subprocess.run([Path(sys.executable).parent / "formula-assets", "home"], env=env, check=True)
    with dev_server.dagster_dev(env, tmp_path / "dagster_dev.log") as base:
        yield base


def wait_for_run(base: str, timeout: float = 300) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        runs = graphql(base, "{ runsOrError { ... on Runs { results { runId status } } } }")
        statuses = [r["status"] for r in runs["runsOrError"]["results"]]
        if any(s in ("FAILURE", "CANCELED") for s in statuses):
            return "FAILURE"
        if "SUCCESS" in statuses:
            return "SUCCESS"
        time.sleep(2)
    return "TIMEOUT"


@pytest.mark.slow
def test_asset_graph_and_a_materialization_from_the_ui(dagster_dev: str, tmp_path: Path) -> None:
    from playwright.sync_api import expect, sync_playwright

    base = dagster_dev
    entries = graphql(
        base, "{ workspaceOrError { ... on Workspace { locationEntries { name } } } }"
    )
    (location,) = [e["name"] for e in entries["workspaceOrError"]["locationEntries"]]
    graph = defs.resolve_asset_graph()
    groups: dict[str, set[str]] = {}
    for key in graph.get_all_asset_keys():
        groups.setdefault(graph.get(key).group_name, set()).add(key.to_user_string())
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch_persistent_context(
            str(tmp_path / "chromium-profile"),
            executable_path=chromium(),
            headless=True,
            args=CHROMIUM_FLAGS,
            viewport={"width": 1600, "height": 1000},
        )
        try:
            page = browser.new_page()
            seen: set[str] = set()
            for group, keys in sorted(groups.items()):
                page.goto(f"{base}/locations/{location}/asset-groups/{group}")
                # the lineage graph draws only the nodes in view: it is screenshotted, and every
                # asset of the group is looked for in the List tab
                expect(page.locator("svg").first).to_be_visible(timeout=60_000)
                page.wait_for_load_state("networkidle")
                page.screenshot(path=str(ARTIFACTS / f"ui_group_{group}.png"))
                page.get_by_role("tab", name="List").click()
                for key in sorted(keys):
                    expect(page.get_by_text(key, exact=True).first).to_be_visible(timeout=60_000)
                    seen.add(key)
            assert seen == {k.to_user_string() for k in graph.get_all_asset_keys()}
            assert set(groups) == {
                "ingest",
                "syntax",
                "semantics",
                "analysis",
                "training",
                "search",
                "audit",
                "evaluation",
            }

            page.goto(f"{base}/assets/wikidata_formulae")
            expect(page.get_by_text("Never materialized")).to_be_visible(timeout=60_000)
            page.locator("button").filter(has_text=re.compile(r"^\s*Materialize\s*$")).first.click()
            assert wait_for_run(base) == "SUCCESS"
            page.goto(f"{base}/assets/wikidata_formulae")
            expect(page.get_by_text("Never materialized")).to_have_count(0, timeout=60_000)
            expect(page.get_by_text("Latest materialization")).to_be_visible()
            page.screenshot(path=str(ARTIFACTS / "ui_wikidata_formulae_materialized.png"))
        finally:
            browser.close()
