"""Take the site's pictures of a trace page: ``docs/images/trace-page.png`` (the top of the
page: answer, citations, timeline) and ``docs/images/timeline.png`` (the timeline alone).

In a folder holding a copy of the sample video and its memory (the offline model)::

    videotapestry ask sample.mp4 --memory memories/sample --profile offline \
        --question-id gate_b_code --trace gate_b_code.json \
        --question "What is the door code for Gate B, the delivery gate?" \
        --option "A. 7457" --option "B. 4471" --option "C. 4417" --option "D. 1875"
    python scripts/docs_screenshots.py gate_b_code.json --video sample.mp4

The page is drawn from a copy of the trace whose memory and video are named as a user's
folder would name them (``memories/sample``, ``sample.mp4``), so no path of the machine
that made it is in the picture; the frames are decoded from ``--video``. Playwright drives
Debian's chromium (``/usr/bin/chromium``, or ``--chromium PATH``); no browser is
downloaded, and the page loads nothing from the network.
"""

from __future__ import annotations

import argparse
import json
import tempfile
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
    parser.add_argument("trace", type=Path, help="a trace JSON (ask --trace)")
    parser.add_argument("--video", type=Path, required=True, help="the video it asked about")
    parser.add_argument("--correct", default="C", help="the right option (default: %(default)s)")
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    args = parser.parse_args()
    IMAGES.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        page_file = Path(tmp) / "page.html"
        page_file.write_text(neutral_page(args.trace, args.video, args.correct), encoding="utf-8")
        shoot(page_file, args.chromium)
    for name in ("trace-page.png", "timeline.png"):
        print(f"docs/images/{name}: {(IMAGES / name).stat().st_size // 1024} KB")
    return 0


def neutral_page(trace: Path, video: Path, correct: str) -> str:
    """The trace page, the trace's memory and video named by their place in a user's folder."""
    from videotapestry.views.trace_html import trace_page

    data = json.loads(trace.read_text(encoding="utf-8"))
    data["memory_source"] = "memories/" + Path(data["memory_source"]).name
    data["video"]["path"] = Path(data["video"]["path"]).name
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / trace.name
        copy.write_text(json.dumps(data), encoding="utf-8")
        return trace_page(copy, video=video.resolve(), correct=correct)


def shoot(page_file: Path, chromium: str) -> None:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1000, "height": 760})
        page.goto(page_file.as_uri())
        page.screenshot(path=IMAGES / "trace-page.png")
        page.locator("svg.vt-timeline").screenshot(path=IMAGES / "timeline.png")
        browser.close()


if __name__ == "__main__":
    raise SystemExit(main())
