"""Examples of every REST route and MCP tool, made by calling them.

``docs/reference/rest-and-mcp-examples.md`` asks for this page with the marker
``<!-- generated: serve_examples -->``, and the MkDocs hook (``scripts/docs_reference.py``)
runs it at build time, so every request and response on the page is one the code gave.

Both servers are started in this process over a throwaway root: a copy of the shipped
sample video with its questions, and a small synthetic memory (``memories/drama``, from
``videotapestry.testing.memories``), with the offline model and no response cache. The web
app is driven by FastAPI's ``TestClient``: each GET route is called; a question is asked from
the memory only, and a one-question eval run over the same memory, each waited for (the
offline model, about 15 s together); a build is started and cancelled at once; the library
is indexed from the root, listed, searched and asked across. The MCP
server is driven by the SDK's own client, in process: its tools are listed, and every tool
whose call needs no model run is called with the arguments of :data:`TOOL_EXAMPLES`. The three
that do (``build_memory``, ``answer_question``, ``answer_across_library``) are shown with their
arguments and the fields of their declared result; ``tests/test_docs.py`` calls the first two
with those arguments (``tests/test_serve_library.py`` the third).

Responses are abridged (lists cut to two items, long texts cut) and what changes from run
to run (ids, times, durations, the temporary root) is replaced by a placeholder, so the page
is the same on every build. Run it by hand: ``python scripts/docs_serve_examples.py``.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: The example arguments of every MCP tool (the tests call each tool with them).
TOOL_EXAMPLES: dict[str, dict[str, Any]] = {
    "list_videos": {},
    "list_memories": {},
    "build_memory": {"video": "sample.mp4", "follow": False},
    "answer_question": {
        "video": "sample.mp4",
        "memory": "memories/sample",
        "question": "What is the door code for Gate B, the delivery gate?",
        "options": ["A. 7457", "B. 4471", "C. 4417", "D. 1875"],
    },
    "read_trace": {"path": "videotapestry-traces/<trace>.json"},
    "search_library": {"query": "green door", "top": 3},
    "answer_across_library": {"question": "Who opens the green door?"},
}

#: Tools whose call is a model run (minutes for a build): shown by arguments and result fields.
MODEL_RUN_TOOLS = frozenset({"build_memory", "answer_question", "answer_across_library"})

QUESTION = {
    "kind": "ask",
    "memory": "memories/drama",
    "question": "Who opens the green door?",
    "options": ["A. Anna", "B. Tom", "C. Rita", "D. Max"],
}

#: Keys whose value changes every run, by the placeholder shown instead.
_VOLATILE = {
    "run_id": "<run id>",
    "created_at": "<time>",
    "updated_at": "<time>",
    "memory_stamp": "<time>",
    "started_at": "<time>",
    "finished_at": "<time>",
}
_SECONDS = re.compile(r"(latency|elapsed|wall|duration_s$|_at$)")
_ITEMS = 2
_CHARS = 120


@dataclass
class Example:
    """One call: what was sent and what came back, ready to show."""

    title: str
    request: str
    body: Any = None
    status: int | None = None
    response: Any = None
    note: str = ""
    raw: str | None = None  # a non-JSON response, shown as text
    depth: int = 3  # nesting shown before a value becomes {…}


@dataclass
class Page:
    rest: list[Example] = field(default_factory=list)
    tools: list[tuple[str, str, dict[str, Any], Any, str]] = field(default_factory=list)


def abridge(value: Any, root: str, depth: int = 0, key: str = "", max_depth: int = 6) -> Any:
    """``value`` with lists cut to two items, long texts cut, volatile fields as
    placeholders and the throwaway root's path as ``<root>``."""
    if key in _VOLATILE and value is not None:
        return _VOLATILE[key]
    if isinstance(value, float) and key and _SECONDS.search(key) and key != "duration_s":
        return "<seconds>"
    if isinstance(value, str):
        text = value.replace(root, "<root>")
        text = re.sub(r"-\d{8}-\d{6}-[0-9a-f]{6}\.json", "-<time>-<run id>.json", text)
        return text if len(text) <= _CHARS else text[: _CHARS - 1] + "…"
    if depth >= max_depth and isinstance(value, dict | list) and value:
        return "{…}" if isinstance(value, dict) else "[…]"
    if isinstance(value, list):
        shown = [abridge(v, root, depth + 1, "", max_depth) for v in value[:_ITEMS]]
        return shown + ([f"… {len(value) - _ITEMS} more"] if len(value) > _ITEMS else [])
    if isinstance(value, dict):
        items = list(value.items())
        nested = len(items) > _ITEMS and all(isinstance(v, dict) for _, v in items)
        kept = items[:_ITEMS] if nested else items
        out = {k: abridge(v, root, depth + 1, k, max_depth) for k, v in kept}
        if nested:
            out["…"] = f"{len(items) - _ITEMS} more"
        return out
    return value


def _make_root(base: Path) -> Path:
    from videotapestry.demo import DATA_DIR, sample_video_path
    from videotapestry.memory import save_memory
    from videotapestry.testing.memories import synthetic_memory

    root = base / "root"
    root.mkdir()
    shutil.copyfile(sample_video_path(), root / "sample.mp4")
    shutil.copyfile(DATA_DIR / "questions.json", root / "questions.json")
    memory = synthetic_memory(
        duration_s=600, supers=2, macros_per_super=2, title="A synthetic ten-minute drama"
    )
    save_memory(memory, root / "memories" / "drama")
    row = {"id": "q1", "video": "drama.mp4", **{k: QUESTION[k] for k in ("question", "options")}}
    (root / "questions.jsonl").write_text(json.dumps({**row, "answer": "A"}) + "\n")
    return root


def _config() -> Any:
    from videotapestry.config import load_config

    return load_config(None, profile="offline", overrides=["cache.enabled=false"])


def _wait(client: Any, job_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        job: dict[str, Any] = client.get(f"/api/jobs/{job_id}").json()
        if job["state"] in ("done", "failed", "cancelled"):
            return job
        time.sleep(0.1)
    raise RuntimeError(f"job {job_id} did not finish in 300 s")


def rest_examples(base: Path, root: Path) -> list[Example]:
    """Every route of the web app, called."""
    from fastapi.testclient import TestClient

    from videotapestry.serve.app import ServeSettings, create_app
    from videotapestry.serve.roots import Roots

    settings = ServeSettings(config=_config(), roots=Roots.of([root]), data_dir=base / "data")
    shown: list[Example] = []

    def call(
        title: str, method: str, url: str, body: Any = None, note: str = "", depth: int = 3
    ) -> Any:
        response = client.request(method, url, json=body)
        example = Example(title, f"{method} {url}", body, response.status_code, note, depth=depth)
        if response.headers["content-type"].startswith("application/json"):
            example.response = response.json()
        shown.append(example)
        return response

    with TestClient(create_app(settings), base_url="http://127.0.0.1:8000") as client:
        call("The videos under the roots", "GET", "/api/videos")
        call("The memories under the roots", "GET", "/api/memories")
        call("One memory's outline", "GET", "/api/memory?path=memories/drama")
        media = client.get("/api/media?path=sample.mp4", headers={"Range": "bytes=0-1023"})
        headers = ("content-type", "content-range", "content-length", "accept-ranges")
        shown.append(
            Example(
                "The video itself, with a range request",
                "GET /api/media?path=sample.mp4  (Range: bytes=0-1023)",
                status=media.status_code,
                raw="\n".join(f"{h}: {media.headers[h]}" for h in headers if h in media.headers),
            )
        )
        frame = client.get("/api/frame?path=sample.mp4&t=258&w=320")
        size = "×".join(map(str, _jpeg_size(frame.content))) if frame.status_code == 200 else "-"
        lines = [f"{h}: {frame.headers[h]}" for h in ("content-type", "cache-control")]
        lines += ["", f"(a {size} JPEG: the frame on screen at t seconds)"]
        shown.append(
            Example(
                "One frame of a video (a cited moment's thumbnail)",
                "GET /api/frame?path=sample.mp4&t=258&w=320",
                status=frame.status_code,
                raw="\n".join(lines),
                note="`w` is the width in pixels (default 320, at most 640, never wider than "
                "the video). A `t` before the start or past the end is a 400 whose `detail` "
                "gives the video's length.",
            )
        )
        build = call(
            "Start a build",
            "POST",
            "/api/jobs",
            {"kind": "build", "video": "sample.mp4"},
            note="Also `out`, `subtitles`, `force`. The job is stored before any work begins; "
            "follow it with its events or by polling `GET /api/jobs/{id}`.",
        ).json()
        call("Cancel a job", "POST", f"/api/jobs/{build['id']}/cancel")
        followed = call(
            "Follow a live source (a memory that grows as the video arrives)",
            "POST",
            "/api/jobs",
            {"kind": "build", "video": "cam/index.m3u8", "out": "memories/cam", "follow": True},
            note="`video` is an HLS playlist (a path under the roots or an http(s) URL) or a "
            "file still being written under the roots (MPEG-TS, fragmented MP4, Matroska); "
            "`out` is needed for a URL. The job runs until the stream ends (ENDLIST, no "
            "growth for `builder.follow.idle_end_s`, or a cancel). "
            "Each version published is one `progress` event: `version`, `covered_s`, "
            '`arrived_s`, `lag_s` (arrived minus covered), `ended`, `covers` ("live memory '
            'covering 00:00-03:20 (still recording)") and, when the server has a library, '
            "`library` (its update after the version). A question about a live memory "
            "carries `memory_covers` in its result: the version it read.",
        ).json()
        call("Stop following (cancel)", "POST", f"/api/jobs/{followed['id']}/cancel")
        asked = call(
            "Ask a question (here from the memory only: no `video`)",
            "POST",
            "/api/jobs",
            QUESTION,
            note="Give `video` to let the agents look at the video again; no `options`: a "
            "free-form question, answered in words.",
        ).json()
        _wait(client, asked["id"])
        call("One job (the question, finished)", "GET", f"/api/jobs/{asked['id']}")
        call("All jobs", "GET", "/api/jobs", depth=2)
        events = client.get(f"/api/jobs/{asked['id']}/events")
        shown.append(
            Example(
                "A job's server-sent events (a finished job: its state, then its end)",
                f"GET /api/jobs/{asked['id']}/events",
                status=events.status_code,
                raw=_events(events.text, str(root)),
                note="While a job runs, `progress` (a build's stage and counts) and `level` "
                "(a question's level as it finishes) events come between the two.",
            )
        )
        call("The question's trace as JSON", "GET", f"/api/jobs/{asked['id']}/trace", depth=2)
        page = client.get(f"/api/jobs/{asked['id']}/trace.html")
        shown.append(
            Example(
                "The question's trace page",
                f"GET /api/jobs/{asked['id']}/trace.html",
                status=page.status_code,
                raw=f"content-type: {page.headers['content-type']}\n\n"
                "(the page `videotapestry inspect TRACE --html` writes)",
            )
        )
        run = call(
            "Start an eval run",
            "POST",
            "/api/jobs",
            {
                "kind": "eval",
                "benchmark": "jsonl",
                "annotations": "questions.jsonl",
                "memories": "memories",
                "out": "evals/drama",
            },
            note="The other fields of `videotapestry eval` too: `videos`, `variants`, `mode`, "
            "`duration`, `ids`, `limit`, `concurrency`, `subtitles`, `build_missing`, "
            "`retry_failed`, `force`.",
        ).json()
        _wait(client, run["id"])
        indexing = call(
            "Index the library (every memory under the roots)",
            "POST",
            "/api/library/index",
            note="No body. The library is `serve.library` (default `.videotapestry-library` "
            "in the first root); the job's result is the update report, its progress the "
            "memories done.",
        ).json()
        _wait(client, indexing["id"])
        call("The library's indexing, finished", "GET", f"/api/jobs/{indexing['id']}")
        call("The videos the library holds", "GET", "/api/library/videos")
        call(
            "Search the library",
            "GET",
            "/api/library/search?q=green%20door&top=2",
            note="Each moment's `video` (relative to its root, null when no video under the "
            "roots is known) opens with `GET /api/media?path=`; `seek_s` is where to seek.",
        )
        across = call(
            "Ask across the library",
            "POST",
            "/api/library/ask",
            {"question": QUESTION["question"], "options": QUESTION["options"]},
            note="A job like a question's; its result has the answer, the videos it cites "
            "and `citations_shown`: each claim in words with its video and its sources' times.",
        ).json()
        _wait(client, across["id"])
        call(
            "The question across the library, answered",
            "GET",
            f"/api/jobs/{across['id']}",
            depth=4,
        )
        call("The eval runs under the roots", "GET", "/api/evals")
        call("One run's report", "GET", "/api/evals/report?path=evals/drama", depth=2)
        call(
            "Two runs compared (here a run with itself)",
            "GET",
            "/api/evals/compare?a=evals/drama&b=evals/drama",
            depth=2,
        )
    return shown


def _jpeg_size(data: bytes) -> tuple[int, int]:
    import io

    from PIL import Image

    with Image.open(io.BytesIO(data)) as image:
        return image.size


def _events(text: str, root: str) -> str:
    lines = []
    for line in text.splitlines():
        if line.startswith("data: "):
            data = abridge(json.loads(line[6:]), root, max_depth=2)
            line = "data: " + json.dumps(data, ensure_ascii=False)
        lines.append(line)
    return "\n".join(lines).strip()


async def _mcp_calls(root: Path, trace: str) -> list[tuple[str, str, dict[str, Any], Any, str]]:
    from mcp import Client

    from videotapestry.serve.mcp_server import McpSettings, create_mcp_server
    from videotapestry.serve.roots import Roots

    roots = Roots.of([root])
    server = create_mcp_server(McpSettings(_config(), roots, root / "videotapestry-traces"))
    shown = []
    async with Client(server) as client:
        for tool in (await client.list_tools()).tools:
            arguments = dict(TOOL_EXAMPLES[tool.name])
            if tool.name in MODEL_RUN_TOOLS:
                fields = (tool.output_schema or {}).get("properties", {})
                result: Any = {name: _schema_type(spec) for name, spec in fields.items()}
                how = "fields of the structured result (its declared schema)"
            else:
                if tool.name == "read_trace":
                    arguments = {"path": trace}
                called = await client.call_tool(tool.name, arguments)
                if called.is_error:
                    raise RuntimeError(f"{tool.name}{arguments}: {called.content}")
                result = called.structured_content
                how = "structured result"
            shown.append((tool.name, tool.description or "", arguments, result, how))
    return shown


def _schema_type(spec: dict[str, Any]) -> str:
    if "type" in spec:
        kind = spec["type"]
        return f"{kind} of {spec['items'].get('type', 'object')}" if kind == "array" else kind
    kinds = [s.get("type", "object") for s in spec.get("anyOf", [])]
    return " | ".join(kinds) if kinds else "object"


def collect() -> tuple[Page, str]:
    """Both servers called over one throwaway root; the root's path too (to hide it)."""
    with tempfile.TemporaryDirectory(prefix="vt-docs-serve-") as tmp:
        base = Path(tmp)
        root = _make_root(base)
        page = Page(rest=rest_examples(base, root))
        traces = root / "videotapestry-traces"
        traces.mkdir()
        saved = next((base / "data" / "traces").glob("*.json"))
        shutil.copyfile(saved, traces / "drama-question.json")
        trace = "videotapestry-traces/drama-question.json"
        page.tools = asyncio.run(_mcp_calls(root, trace))
        return page, str(root)


def _json(value: Any, indent: int = 0, used: int = 0) -> str:
    """Indented JSON with every value that fits on its line written on one line (``used``:
    the columns its line already holds)."""
    flat = json.dumps(value, ensure_ascii=False)
    if used + len(flat) <= 88 or not isinstance(value, dict | list) or not value:
        return flat
    pad = " " * (indent + 2)
    if isinstance(value, list):
        items = [pad + _json(v, indent + 2, indent + 3) for v in value]
        return "[\n" + ",\n".join(items) + "\n" + " " * indent + "]"
    items = []
    for key, item in value.items():
        head = f"{pad}{json.dumps(key, ensure_ascii=False)}: "
        items.append(head + _json(item, indent + 2, len(head) + 1))
    return "{\n" + ",\n".join(items) + "\n" + " " * indent + "}"


def serve_examples_page() -> str:
    page, root = collect()
    jobs = {
        e.response["id"] for e in page.rest if isinstance(e.response, dict) and "kind" in e.response
    }
    out = ["## REST", ""]
    for example in page.rest:
        out += [f"### {example.title}", "", "```http", example.request]
        if example.body is not None:
            out += ["Content-Type: application/json", "", _json(example.body)]
        out += ["```", ""]
        if example.note:
            out += [example.note, ""]
        if example.raw is not None:
            out += [f"Response `{example.status}`:", "", "```text", example.raw, "```", ""]
        else:
            shown = _json(abridge(example.response, root, max_depth=example.depth))
            out += [f"Response `{example.status}`:", "", "```json", shown, "```", ""]
    out += ["## MCP tools", ""]
    for name, description, arguments, result, how in page.tools:
        out += [f"### `{name}`", "", " ".join(description.split()), ""]
        out += ["Arguments:", "", "```json", _json(arguments), "```", ""]
        if name in MODEL_RUN_TOOLS:
            out += [f"Result ({how}; a call is a model run, not made here):", ""]
            out += ["```json", _json(result), "```", ""]
        else:
            out += [f"Result ({how}):", "", "```json", _json(abridge(result, root, max_depth=3))]
            out += ["```", ""]
    text = "\n".join(out).strip() + "\n"
    for job_id in jobs:
        text = text.replace(job_id, "<job id>")
    return text


if __name__ == "__main__":
    print(serve_examples_page())
