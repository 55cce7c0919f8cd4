"""A real ``videotapestry serve`` process for the serve tests: started on a free port of
127.0.0.1 over a root holding the shipped sample, stopped (or killed) by the test."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from videotapestry.demo import DATA_DIR, sample_video_path

#: Launch options for Debian's chromium (no browser download is possible here).
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]  # fmt: skip


@contextmanager
def playwright_chromium(*extra_args: str) -> Iterator[Any]:
    """Debian's chromium under Playwright (``extra_args`` after the usual ones), closed after;
    the test is skipped when Playwright or the browser is missing."""
    import pytest

    playwright_api = pytest.importorskip("playwright.sync_api")
    if not Path(CHROMIUM).is_file():
        pytest.skip("Debian's chromium is not installed at /usr/bin/chromium")
    with playwright_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=CHROMIUM, args=[*CHROMIUM_ARGS, *extra_args]
        )
        try:
            yield chromium
        finally:
            chromium.close()


def sample_root(folder: Path, memory: Path | None = None) -> Path:
    """``folder`` holding a copy of the sample video and its questions (a root of its own),
    and a copy of the sample's ``memory`` as ``memories/sample`` when one is given."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(sample_video_path(), folder / "sample.mp4")
    shutil.copyfile(DATA_DIR / "questions.json", folder / "questions.json")
    if memory is not None:
        shutil.copytree(memory, folder / "memories" / "sample")
    return folder


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class Server:
    process: subprocess.Popen[bytes]
    url: str
    log: Path
    root: Path

    def get(self, path: str) -> Any:
        with urllib.request.urlopen(self.url + path, timeout=60) as response:
            return json.loads(response.read())

    def post(self, path: str, body: dict[str, Any]) -> Any:
        request = urllib.request.Request(
            self.url + path,
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            return json.loads(response.read())

    def wait_job(self, job_id: str, timeout: float = 900) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            job: dict[str, Any] = self.get(f"/api/jobs/{job_id}")
            if job["state"] in ("done", "failed", "cancelled"):
                return job
            time.sleep(0.5)
        raise AssertionError(f"job {job_id} did not finish; server log:\n{self.log.read_text()}")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()


def start_server(root: Path, data_dir: Path, *extra: str, timeout: float = 300) -> Server:
    """``videotapestry serve`` on a free loopback port with the offline model, once it answers."""
    port = free_port()
    log = data_dir.parent / f"server-{port}.log"
    data_dir.mkdir(parents=True, exist_ok=True)
    cache = data_dir.parent / "responses.sqlite"
    args = [sys.executable, "-m", "videotapestry.cli", "serve", "--root", str(root),
            "--data-dir", str(data_dir), "--port", str(port), "--profile", "offline",
            "-o", "cache.enabled=true", "-o", f"cache.path={cache}", *extra]  # fmt: skip
    with log.open("ab") as out:
        process = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, env=dict(os.environ))
    server = Server(process, f"http://127.0.0.1:{port}", log, root)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"the server exited with {process.returncode}:\n{log.read_text()}")
        try:
            server.get("/api/jobs")
            return server
        except urllib.error.HTTPError:  # it answers (a 401 when started with a token)
            return server
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.3)
    server.stop()
    raise AssertionError(f"the server did not start:\n{log.read_text()}")
