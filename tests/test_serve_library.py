"""The library (SPEC §15) served: REST routes on a real ``videotapestry serve`` over HTTP, and
the MCP tools through the SDK's client over stdio.

One root holds the sample video with its memory (``memories/sample``, as a served build
writes it) and two synthetic memories without a video; a memory outside the root is reached
through a symlink inside it and must not be indexed. Offline model; the REST and MCP
questions share one response cache, so MCP's run is answered from it.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from serve_support import Server, sample_root, start_server

from videotapestry.memory import save_memory
from videotapestry.testing.memories import synthetic_memory

pytest.importorskip("lancedb")

pytestmark = pytest.mark.slow

SAMPLE = "Riverside Festival- volunteer briefing"
#: The sample's key slide: "Door code 4417".
GATE_B = (212.0, 258.0)
QUESTION = "What is the door code for Gate B, the delivery gate?"
TITLES = ("A city drama", "Sunday cooking")


@pytest.fixture(scope="module")
def root(demo_cache: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from videotapestry.demo import sample_video_path
    from videotapestry.demo.runner import demo_memory_dir

    base = tmp_path_factory.mktemp("serve-library")
    folder = sample_root(base / "root", demo_memory_dir(sample_video_path(), demo_cache))
    for n, title in enumerate(TITLES):
        memory = synthetic_memory(
            duration_s=600.0, supers=2, macros_per_super=3, seed=n, title=title
        )
        save_memory(memory, folder / "memories" / f"other_{n}")
    outside = base / "outside"
    save_memory(synthetic_memory(duration_s=600.0, supers=1, title="Secret"), outside / "secret")
    (folder / "memories" / "leak").symlink_to(outside / "secret", target_is_directory=True)
    return folder


@pytest.fixture(scope="module")
def server(root: Path) -> Iterator[Server]:
    served = start_server(root, root.parent / "data")
    try:
        yield served
    finally:
        served.stop()


@pytest.fixture(scope="module")
def indexed(server: Server) -> dict[str, Any]:
    """The index job, run to its end."""
    job = server.post("/api/library/index", {})
    assert job["kind"] == "library_index" and job["inputs"]["library"] == ".videotapestry-library"
    return server.wait_job(job["id"])


def status_of(server: Server, path: str) -> int:
    try:
        with urllib.request.urlopen(server.url + path, timeout=60) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code


def post_status(server: Server, path: str, body: dict[str, Any]) -> tuple[int, str]:
    try:
        server.post(path, body)
        return 201, ""
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())["detail"]


def test_the_index_job_indexes_every_memory_under_the_roots_and_nothing_outside(
    indexed: dict[str, Any],
) -> None:
    assert indexed["state"] == "done", indexed
    report = indexed["result"]
    assert sorted(report["added"]) == ["memories/other_0", "memories/other_1", "memories/sample"]
    assert report["failed"] == [] and report["moments"] == report["moments_written"] > 0
    assert indexed["progress"] == {"stage": "library", "done": 3, "total": 3}


def test_search_finds_the_fact_in_its_video_with_a_span_to_open(
    server: Server, indexed: dict[str, Any]
) -> None:
    query = urllib.parse.urlencode({"q": "door code 4417", "top": 5})
    hits = server.get(f"/api/library/search?{query}")
    assert 0 < len(hits) <= 5
    first = hits[0]
    assert first["title"] == SAMPLE and first["memory"] == "memories/sample"
    assert first["video"] == "sample.mp4"  # what GET /api/media?path= takes
    assert first["start_s"] <= GATE_B[1] and first["end_s"] >= GATE_B[0], first
    assert first["seek_s"] == first["start_s"] and ":" in first["when"]
    assert status_of(server, f"/api/media?path={first['video']}") == 200
    assert status_of(server, "/api/library/search?q=") == 422
    assert status_of(server, "/api/library/search?q=door&top=0") == 422


def test_the_library_lists_its_videos_under_the_roots(
    server: Server, indexed: dict[str, Any]
) -> None:
    videos = server.get("/api/library/videos")
    assert [v["title"] for v in videos] == sorted([SAMPLE, *TITLES], key=str.lower)
    by_title = {v["title"]: v for v in videos}
    assert by_title[SAMPLE]["video"] == "sample.mp4"
    assert by_title[TITLES[0]]["video"] is None and by_title[TITLES[0]]["moments"] > 0
    assert not any("Secret" in v["title"] or "outside" in v["memory"] for v in videos)


def test_asking_across_the_library_answers_from_the_video_that_shows_it(
    server: Server, indexed: dict[str, Any]
) -> None:
    job = server.post("/api/library/ask", {"question": QUESTION})
    assert job["kind"] == "library_ask"
    done = server.wait_job(job["id"])
    assert done["state"] == "done", done
    answer = done["result"]
    assert "4417" in answer["answer_text"] and not answer["none_found"]
    assert answer["answered_from"] == [SAMPLE]
    assert answer["citations"] and all(c["video"] == "sample.mp4" for c in answer["citations"])
    assert len(answer["citations_shown"]) == len(answer["citations"])
    for citation in answer["citations_shown"]:
        assert citation["title"] == SAMPLE and citation["video"] == "sample.mp4"
        assert citation["claim"] and citation["sources"]
        for source in citation["sources"]:
            assert GATE_B[0] - 1 <= source["seek_s"] <= GATE_B[1] + 1, source
            assert source["shown"] and source["when"] in source["shown"]
    assert answer["videos"][0]["video"] == "sample.mp4"
    assert answer["usage"]["calls"] > 0 and answer["usage_text"]


def test_the_library_routes_refuse_bad_input_and_paths_outside_the_roots(
    server: Server, indexed: dict[str, Any]
) -> None:
    status, detail = post_status(server, "/api/library/ask", {"question": ""})
    assert status == 400 and detail
    status, _ = post_status(server, "/api/library/ask", {"question": "Which?", "options": ["A"]})
    assert status == 400
    assert status_of(server, "/api/media?path=../outside/secret/memory.json") == 403
    assert status_of(server, "/api/media?path=memories/leak/memory.json") == 403
    hits = server.get("/api/library/search?q=Secret&top=50")
    assert all(h["memory"].startswith("memories/") and h["memory"] != "memories/leak" for h in hits)


# --------------------------------------------------------------------------- MCP


async def _mcp_calls(root: Path, cache: Path) -> dict[str, Any]:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    env = dict(os.environ)
    repo = str(Path(__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (repo, env.get("PYTHONPATH")) if p)
    args = ["-m", "videotapestry.cli", "mcp", "--root", str(root), "--profile", "offline",
            "-o", "cache.enabled=true", "-o", f"cache.path={cache}"]  # fmt: skip
    got: dict[str, Any] = {}
    async with Client(StdioServerParameters(command=sys.executable, args=args, env=env)) as client:
        got["tools"] = {t.name for t in (await client.list_tools()).tools}
        got["search"] = await client.call_tool(
            "search_library", {"query": "door code 4417", "top": 3}
        )
        got["answer"] = await client.call_tool("answer_across_library", {"question": QUESTION})
        got["empty"] = await client.call_tool("search_library", {"query": "   "})
    return got


def test_the_mcp_tools_search_and_answer_across_the_library(
    root: Path, server: Server, indexed: dict[str, Any]
) -> None:
    cache = root.parent / "responses.sqlite"  # the REST server's: its answer is reused
    got = asyncio.run(_mcp_calls(root, cache))
    assert {"search_library", "answer_across_library"} <= got["tools"]

    search = got["search"]
    assert not search.is_error, search.content
    hits = search.structured_content["hits"]
    assert hits[0]["title"] == SAMPLE and hits[0]["video"] == "sample.mp4"
    text = search.content[0].text
    assert text.startswith(f"1. {SAMPLE} — ") and "video: sample.mp4" in text

    answer = got["answer"]
    assert not answer.is_error, answer.content
    structured = answer.structured_content
    assert "4417" in structured["answer_text"] and structured["answered_from"] == [SAMPLE]
    shown = answer.content[0].text
    assert f"from: {SAMPLE}" in shown and f"cites {SAMPLE} (sample.mp4): " in shown
    source_ids = {s["id"] for c in structured["citations"] for s in c["sources"]}
    assert source_ids and not any(i in shown for i in source_ids if len(i) > 2), shown

    assert got["empty"].is_error and "words" in got["empty"].content[0].text
