"""Headless Chromium for the HTML view tests: load a page, dump its DOM or take a screenshot,
and find the shapes of the drawing in the screenshot by their exact colours."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if path := shutil.which(name):
            return path
    pytest.skip("chromium is not installed (Debian: apt-get install -y chromium)")


def browse(page: Path, tmp_path: Path, *mode: str) -> subprocess.CompletedProcess:
    args = [chromium(), "--headless", "--disable-gpu", f"--user-data-dir={tmp_path / 'ud'}",
            "--force-device-scale-factor=1", "--hide-scrollbars", *mode, page.as_uri()]  # fmt: skip
    if os.geteuid() == 0:
        args.insert(1, "--no-sandbox")
    return subprocess.run(args, capture_output=True, text=True, timeout=60, check=True)


def root_element(dom: str) -> str:
    """The ``<html ...>`` start tag of a dumped DOM, where the page records its state."""
    start = dom.index("<html")
    return dom[start : dom.index(">", start)]


def longest_run(image: np.ndarray, colour: str) -> int:
    """The longest horizontal run of pixels of exactly ``colour`` anywhere in ``image``."""
    rgb = [int(colour[i : i + 2], 16) for i in (1, 3, 5)]
    hits = np.all(image == rgb, axis=2).astype(np.int8)
    padded = np.pad(hits, ((0, 0), (1, 1)))
    edges = np.diff(padded, axis=1)
    starts, stops = np.nonzero(edges == 1), np.nonzero(edges == -1)
    return int((stops[1] - starts[1]).max(initial=0))  # row-major: pairs line up
