"""Take the site's pictures of a trace page: ``docs/images/trace-page.png`` (the top of the
page: answer, citations, timeline) and ``docs/images/timeline.png`` (the timeline alone).

    videotapestry demo --html pages/            # the demo's pages, offline model
    python scripts/docs_screenshots.py pages/gate_b_code.html

Playwright drives Debian's chromium (``/usr/bin/chromium``, or ``--chromium PATH``); no
browser is downloaded, and the page loads nothing from the network.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[1]
IMAGES = ROOT / "docs" / "images"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("page", type=Path, help="a trace page (inspect --html, demo --html)")
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    args = parser.parse_args()
    IMAGES.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=args.chromium, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1000, "height": 760})
        page.goto(args.page.resolve().as_uri())
        page.screenshot(path=IMAGES / "trace-page.png")
        page.locator("svg.vt-timeline").screenshot(path=IMAGES / "timeline.png")
        browser.close()
    for name in ("trace-page.png", "timeline.png"):
        print(f"docs/images/{name}: {(IMAGES / name).stat().st_size // 1024} KB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
