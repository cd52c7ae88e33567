"""The pages' load time in Debian's Chromium, over the service on the configured lake.

`formula-assets serve` starts in its own process on a free loopback port; headless Chromium
(Playwright) opens each page `--runs` times in a fresh tab and reports, per page, the time from
navigation to the load event, and for pages that fetch their content (search results, an item,
the audit queue) to that content shown. `--screenshots DIR` also saves each page as the
documentation shows it.

    python -m benchmarks.pages [--runs 10] [--screenshots docs/images]
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import time
import urllib.parse
from pathlib import Path

from benchmarks.common import print_table, write_result
from benchmarks.serve import CLI, free_port, wait_ready
from formula_assets.core.settings import Settings

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
# page, its path, what shows its content (None: the load event is the end)
PAGES = [
    ("search box", "/", None),
    ("text query", "/?" + urllib.parse.urlencode({"q": "ohms law"}), ".hit .formula math"),
    ("LaTeX query", "/?" + urllib.parse.urlencode({"q": "c^2 = a^2 + b^2"}), ".hit math"),
    ("item", "/item/Q11518", ".similar li"),
    ("audit queue", "/audit", ".finding"),
]


def measure(page, base: str, path: str, shown: str | None) -> tuple[float, float]:
    """(ms to the load event, ms to the content shown) of one fresh navigation."""
    started = time.perf_counter()
    page.goto(base + path, wait_until="load")
    loaded = time.perf_counter()
    if shown is not None:
        page.locator(shown).first.wait_for(state="visible", timeout=10_000)
    return 1000 * (loaded - started), 1000 * (time.perf_counter() - started)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--screenshots", type=Path, default=None)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    browser_path = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser_path is None:
        raise SystemExit("Debian's chromium is not installed (apt-get install chromium)")
    lake = Settings.from_environment().data_lake
    env = {**os.environ, "FORMULA_ASSETS_DATA_LAKE": lake, "HF_HUB_OFFLINE": "1"}
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    process = subprocess.Popen(
        [str(CLI), "serve", "--port", str(port), "--workers", "1"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    results: dict[str, dict[str, float]] = {}
    try:
        wait_ready(port, process, 120)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=browser_path, args=FLAGS)
            try:
                for name, path, shown in PAGES:
                    times = []
                    for _ in range(args.runs + 1):  # the first warms the service's caches
                        tab = browser.new_page(viewport={"width": 1200, "height": 900})
                        times.append(measure(tab, base, path, shown))
                        if args.screenshots is not None and len(times) == args.runs + 1:
                            args.screenshots.mkdir(parents=True, exist_ok=True)
                            slug = name.replace(" ", "_").replace("LaTeX", "latex")
                            tab.screenshot(path=str(args.screenshots / f"page_{slug}.png"))
                        tab.close()
                    loads, shows = zip(*times[1:], strict=True)
                    results[name] = {
                        "load_ms_median": round(statistics.median(loads), 1),
                        "load_ms_max": round(max(loads), 1),
                        "shown_ms_median": round(statistics.median(shows), 1),
                        "shown_ms_max": round(max(shows), 1),
                    }
            finally:
                browser.close()
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=60)
    print_table(
        f"page loads in headless Chromium, {args.runs} fresh tabs each, on loopback",
        ["page", "load event: median / max ms", "content shown: median / max ms"],
        [
            [name, f"{r['load_ms_median']} / {r['load_ms_max']}",
             f"{r['shown_ms_median']} / {r['shown_ms_max']}"]
            for name, r in results.items()
        ],
    )  # fmt: skip
    write_result("pages", {"runs": args.runs, "pages": results})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
