"""The web app's figures: idle memory, requests per second for cached answers, and the UI's
time to first answer on the sample (warm).

A real ``videotapestry serve`` (offline model) over a root in bench/.cache/serve holding the
shipped sample; its memory is built through the REST API on the first run and kept.

- idle memory: the server's resident set (VmRSS) right after start-up, and again idle after
  it has answered (the embedding model and the memory then loaded);
- cached answers: the same question POSTed again and again (answered from the earlier job),
  one client after another and from ``--clients`` threads at once;
- UI, warm: the server has answered one question (models and memory loaded); chromium then
  opens the page, picks another shipped question, clicks Ask and waits for the answer.

    python bench/bench_serve.py [--requests 500] [--clients 8] [--minutes M] [--smoke]

``--minutes`` serves a generated silent video of that length under the sample's name instead
of the sample (with the sample's questions, whose answers it does not hold): a quick run.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from benchkit import cache_dir, smoke  # noqa: E402
from serve_support import (  # noqa: E402
    CHROMIUM,
    CHROMIUM_ARGS,
    Server,
    sample_root,
    start_server,
)

from videotapestry.demo import DATA_DIR  # noqa: E402
from videotapestry.testing.media import make_test_video  # noqa: E402

#: ``--smoke``: the options put first (bench/benchkit.py), and the figure lines it must print
#: (a smoke run's cache is fresh, so the memory is always built).
SMOKE_ARGS = ("--minutes", "0.25", "--requests", "5", "--clients", "2")
SMOKE_FIGURES: tuple[str, ...] = (
    r"^built the sample's memory: ",
    r"^idle RSS after start-up: \S+ MB; idle after answering: \S+ MB",
    r"^cached answers: \S+ req/s one client, \S+ req/s \d+ clients",
    r"^UI time to first answer \(warm server, a question not asked before\): \S+ s",
    r"^UI time to a cached answer: \S+ s",
)


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def ask_body(question: dict) -> dict:
    return {
        "kind": "ask",
        "memory": "memories/sample",
        "video": "sample.mp4",
        "question": question["question"],
        "options": question["options"],
    }


def cached_rps(server: Server, body: dict, requests: int, clients: int) -> tuple[float, float]:
    started = time.perf_counter()
    for _ in range(requests):
        assert server.post("/api/jobs", body)["state"] == "done"
    serial = requests / (time.perf_counter() - started)
    started = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        states = list(pool.map(lambda _: server.post("/api/jobs", body)["state"], range(requests)))
    assert set(states) == {"done"}
    return serial, requests / (time.perf_counter() - started)


def ui_time_to_answer(server: Server, question_index: int) -> float:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page()
        started = time.perf_counter()
        page.goto(server.url)
        page.wait_for_selector('#videos li[data-path="sample.mp4"]')
        page.select_option("#shipped", index=question_index + 1)
        page.click("#ask")
        page.wait_for_selector("#answer[data-letter]", timeout=600_000)
        elapsed = time.perf_counter() - started
        browser.close()
    return elapsed


def main() -> None:
    smoke(SMOKE_ARGS)
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=500)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument(
        "--minutes", type=float, help="a generated video this long in place of the sample"
    )
    args = parser.parse_args()
    cache = cache_dir("serve")
    root = cache / ("root" if args.minutes is None else f"root_{args.minutes:g}min")
    if not (root / "sample.mp4").is_file():
        if args.minutes is None:
            sample_root(root)
        else:
            make_test_video(root / "sample.mp4", args.minutes * 60, fps=1, size=(640, 360))
            shutil.copyfile(DATA_DIR / "questions.json", root / "questions.json")
    # The memory is kept between runs; the jobs and the model replies are not, so every run
    # answers its questions anew.
    shutil.rmtree(cache / "data", ignore_errors=True)
    (cache / "responses.sqlite").unlink(missing_ok=True)
    server = start_server(root, cache / "data")
    try:
        idle_start = rss_mb(server.process.pid)
        if not (root / "memories" / "sample" / "memory.json").is_file():
            job = server.post("/api/jobs", {"kind": "build", "video": "sample.mp4"})
            print(f"built the sample's memory: {server.wait_job(job['id'])['state']}")
        questions = json.loads((root / "questions.json").read_text())["questions"]
        warm = server.post("/api/jobs", ask_body(questions[0]))
        server.wait_job(warm["id"])
        time.sleep(2)
        idle_after = rss_mb(server.process.pid)
        serial, parallel = cached_rps(server, ask_body(questions[0]), args.requests, args.clients)
        ui_s = ui_time_to_answer(server, 1)  # not asked before (no job, no cached reply)
        ui_cached_s = ui_time_to_answer(server, 0)
    finally:
        server.stop()
    print(
        f"idle RSS after start-up: {idle_start:.0f} MB; idle after answering: {idle_after:.0f} MB"
    )
    clients = args.clients
    print(f"cached answers: {serial:.0f} req/s one client, {parallel:.0f} req/s {clients} clients")
    print(f"UI time to first answer (warm server, a question not asked before): {ui_s:.2f} s")
    print(f"UI time to a cached answer: {ui_cached_s:.2f} s")


if __name__ == "__main__":
    main()
