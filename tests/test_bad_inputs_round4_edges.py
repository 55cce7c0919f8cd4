"""Issue 38, items 4, 6 and 7 and the small ones: a server that always starts, and no traceback
at the edges. Real servers in subprocesses, real files, the CLI in-process through
``cli.main``; each case failed before the change (a traceback, exit 3, a 500, or silence).

a server that always starts (item 4)
  a job store of random bytes, or cut in half: moved aside under a dated name, said on
  stderr, a fresh one serves; a row whose inputs are not JSON and one of a kind this version
  does not serve: marked failed with the reason and left out, the good job still listed;
  ``--data-dir`` naming a file, or a path under a file, and a port already in use: exit 2
  with one line; file and folder names that are not UTF-8 under the root: GET /api/videos
  and MCP's list_videos / list_memories list the rest and the server warns.

answers tied to their inputs (item 6)
  a served question's earlier answer is given again only while the video is the same file:
  a different video copied over the name is asked afresh.

edges (item 7)
  build-memory into a folder no write lands in, ask --trace and chat --trace-dir there (the
  answer printed first, then the failure, exit 2; reanswer's variant trace alike), a
  LongVideoBench subtitle JSON nested 100 000 levels deep: exit 2 naming the file.

  The tests run as root here, and chmod does not stop root: so as root the unwritable
  folder is a path under a regular file (every write fails with "Not a directory"); as
  another user it is a folder with mode 0555.

smaller
  eval --subtitles with --no-video: refused (exit 2); a JSON Lines chat script's error names
  the file's line; a refused scripted turn is named by its number; a byte-order mark before
  a script's first question is dropped.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import urllib.error
from pathlib import Path
from typing import Any

import pytest
from method_support import OPTIONS, QUESTION, SAMPLE, cli_args
from method_support import run_cli_output as run_cli
from serve_support import free_port, sample_root, start_server

from videotapestry.commands.chat import read_script
from videotapestry.serve.jobs import JOBS_FILE, JobStore
from videotapestry.testing import FakeOpenAIServer
from videotapestry.testing.media import make_test_video
from videotapestry.testing.scripted_builder import offline_build_overrides

OPTION_ARGS = [x for option in OPTIONS for x in ("--option", option)]
DEEP_LIST = "[" * 100_000 + "]" * 100_000
#: Names that are not UTF-8 (Latin-1 bytes), as a file system may hold them.
BAD_VIDEO = b"caf\xe9.mp4"
BAD_FOLDER = b"m\xe9moires"


def unwritable_folder(tmp_path: Path) -> Path:
    """A folder no write lands in, for root as well (see the module docstring)."""
    if os.geteuid() == 0:
        blocker = tmp_path / "a-file"
        blocker.write_text("not a folder\n")
        return blocker / "out"
    folder = tmp_path / "read-only"
    folder.mkdir()
    folder.chmod(0o555)
    return folder


def serve_args(root: Path, data_dir: Path, port: int) -> list[str]:
    return [sys.executable, "-m", "videotapestry.cli", "serve", "--root", str(root),
            "--data-dir", str(data_dir), "--port", str(port), "--profile", "offline"]  # fmt: skip


def failed_start(args: list[str]) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert "Traceback" not in done.stderr + done.stdout, done.stderr
    return done


# --------------------------------------------------------------------------- item 4


def damage(store: Path, how: str) -> None:
    if how == "random bytes":
        store.write_bytes(os.urandom(8192))
        return
    jobs = JobStore(store.parent)
    for number in range(300):
        jobs.create("build", {"video": f"/nowhere/{number}.mp4", "note": "x" * 400})
    jobs.close()
    data = store.read_bytes()
    store.write_bytes(data[: len(data) // 2])


@pytest.mark.slow
@pytest.mark.parametrize("how", ["random bytes", "cut in half"])
def test_a_damaged_job_store_is_moved_aside_and_a_new_one_serves(how: str, tmp_path: Path) -> None:
    root = sample_root(tmp_path / "root")
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    damage(data_dir / JOBS_FILE, how)
    server = start_server(root, data_dir)
    try:
        assert server.get("/api/jobs") == []
        assert [video["path"] for video in server.get("/api/videos")] == ["sample.mp4"]
    finally:
        server.stop()
    log = server.log.read_text()
    assert "Traceback" not in log, log
    moved = sorted(p.name for p in data_dir.glob(f"{JOBS_FILE}.damaged-*"))
    assert len(moved) == 1, sorted(p.name for p in data_dir.iterdir())
    assert f"{data_dir / JOBS_FILE} is damaged" in log and moved[0] in log, log
    assert JobStore(data_dir).all() == []  # the new store, whole


def insert_row(store: Path, key: str, kind: str, inputs: str) -> None:
    with sqlite3.connect(store) as connection:
        connection.execute(
            "INSERT INTO jobs VALUES (?, ?, ?, 'queued', '{}', NULL, NULL, 1.0, 1.0, 0)",
            (key, kind, inputs),
        )
    connection.close()


def make_unicode_trouble(root: Path) -> None:
    """A video and a memory folder whose names are not UTF-8, beside good ones."""
    raw = os.fsencode(root)
    shutil.copyfile(root / "sample.mp4", raw + b"/" + BAD_VIDEO)
    os.makedirs(raw + b"/" + BAD_FOLDER + b"/talk")
    with open(raw + b"/" + BAD_FOLDER + b"/talk/memory.json", "w") as handle:
        handle.write("{}\n")
    (root / "memories" / "good").mkdir(parents=True)
    (root / "memories" / "good" / "memory.json").write_text("{}\n")


@pytest.mark.slow
def test_bad_rows_are_failed_and_skipped_and_bad_names_listed_around(tmp_path: Path) -> None:
    root = sample_root(tmp_path / "root").resolve()
    make_unicode_trouble(root)
    data_dir = tmp_path / "data"
    store = JobStore(data_dir)
    good = store.create("build", {"video": str(root / "sample.mp4"), "out": str(root / "m")})
    store.update(good.id, state="cancelled", error="cancelled by the client")
    # Asked under a root this start no longer serves: listed by its names alone, no 403.
    moved = store.create("build", {"video": "/elsewhere/old/talk.mp4", "out": "/elsewhere/m"})
    store.update(moved.id, state="done")
    store.close()
    insert_row(data_dir / JOBS_FILE, "notjson00001", "build", "{not json")
    insert_row(data_dir / JOBS_FILE, "unknownkind1", "transcode", "{}")
    server = start_server(root, data_dir)
    try:
        listed = {job["id"]: job for job in server.get("/api/jobs")}
        assert sorted(listed) == sorted([good.id, moved.id])
        assert listed[moved.id]["inputs"]["video"] == "(outside the roots)/talk.mp4"
        assert server.get(f"/api/jobs/{moved.id}")["inputs"]["out"] == "(outside the roots)/m"
        with pytest.raises(urllib.error.HTTPError) as refused:
            server.get("/api/jobs/unknownkind1")
        assert refused.value.code == 404
        assert "unreadable in the job store" in json.loads(refused.value.read())["detail"]
        videos = server.get("/api/videos")
        memories = server.get("/api/memories")
    finally:
        server.stop()
    assert [video["path"] for video in videos] == ["sample.mp4"]
    assert [memory["path"] for memory in memories] == ["memories/good"]
    log = server.log.read_text()
    assert "Traceback" not in log, log
    assert "job notjson00001" in log and "job unknownkind1" in log and "marked failed" in log
    assert "caf\\xe9.mp4" in log and "m\\xe9moires" in log and "not UTF-8" in log
    with sqlite3.connect(data_dir / JOBS_FILE) as connection:
        rows = dict(connection.execute("SELECT key, state || ': ' || error FROM jobs"))
    connection.close()
    assert rows["notjson00001"].startswith("failed: unreadable in the job store")
    assert rows["unknownkind1"].startswith("failed: unreadable in the job store: kind")


@pytest.mark.slow
def test_mcp_lists_around_names_that_are_not_utf8(tmp_path: Path) -> None:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    root = sample_root(tmp_path / "root")
    make_unicode_trouble(root)
    args = ["-m", "videotapestry.cli", "mcp", "--root", str(root), "--profile", "offline"]

    async def listed() -> tuple[Any, Any]:
        params = StdioServerParameters(command=sys.executable, args=args, env=dict(os.environ))
        async with Client(params) as client:
            videos = await client.call_tool("list_videos", {})
            memories = await client.call_tool("list_memories", {})
        return videos, memories

    videos, memories = asyncio.run(listed())
    assert not videos.is_error and not memories.is_error, (videos.content, memories.content)
    shown = videos.structured_content["videos"]
    assert [video["path"] for video in shown] == ["sample.mp4"]
    stored = memories.structured_content["memories"]
    assert [memory["path"] for memory in stored] == ["memories/good"]


def test_a_data_dir_that_is_no_folder_stops_the_start_with_status_2(tmp_path: Path) -> None:
    root = sample_root(tmp_path / "root")
    a_file = tmp_path / "data.txt"
    a_file.write_text("a file, not a folder\n")
    for data_dir, said in ((a_file, "is not a folder"), (a_file / "data", "cannot be made")):
        done = failed_start(serve_args(root, data_dir, free_port()))
        assert done.returncode == 2, done.stderr
        assert done.stderr.startswith(f"videotapestry: error: data directory {data_dir}"), (
            done.stderr
        )
        assert said in done.stderr


@pytest.mark.slow
def test_a_port_in_use_stops_the_start_with_status_2(tmp_path: Path) -> None:
    root = sample_root(tmp_path / "root")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = failed_start(serve_args(root, tmp_path / "data", port))
    assert done.returncode == 2, done.stderr
    assert f"videotapestry: error: the server could not start on 127.0.0.1:{port}" in done.stderr


# --------------------------------------------------------------------------- item 6


@pytest.mark.slow
def test_a_served_answer_is_reused_only_for_the_same_video(tmp_path: Path) -> None:
    """A finished question is answered again at once while its memory and video are
    unchanged; once a different file takes the video's name it is asked afresh."""
    from videotapestry.video.container import fingerprint

    root = sample_root(tmp_path / "root").resolve()
    memory = root / "memories" / "sample"
    memory.mkdir(parents=True)
    (memory / "memory.json").write_text("{}\n")
    video = root / "sample.mp4"
    inputs = {
        "memory": str(memory),
        "video": str(video),
        "question": QUESTION,
        "options": OPTIONS,
        "memory_stamp": os.stat(memory / "memory.json").st_mtime,
        "video_fingerprint": fingerprint(video),
    }
    store = JobStore(tmp_path / "data")
    earlier = store.create("ask", inputs)
    store.update(earlier.id, state="done", result={"answer": "B"})
    store.close()
    request = {"kind": "ask", "memory": "memories/sample", "video": "sample.mp4",
               "question": QUESTION, "options": OPTIONS}  # fmt: skip
    server = start_server(root, tmp_path / "data")
    try:
        assert server.post("/api/jobs", request)["id"] == earlier.id
        make_test_video(tmp_path / "other.mp4", 4, fps=2, size=(96, 54))
        shutil.copyfile(tmp_path / "other.mp4", video)  # the same name, another video
        again = server.post("/api/jobs", request)
    finally:
        server.stop()
    assert again["id"] != earlier.id and again["state"] != "done"


# --------------------------------------------------------------------------- item 7


@pytest.fixture(scope="module")
def short_video(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("edges") / "short.mp4"
    make_test_video(path, 20, fps=2, size=(96, 54), scene_s=10)
    return path


def build_options(server: FakeOpenAIServer) -> list[str]:
    overrides = offline_build_overrides(server.base_url, "cache.enabled=false")
    return [x for override in overrides for x in ("-o", override)]


def test_build_memory_into_a_folder_no_write_lands_in(
    short_video: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], api_key: str
) -> None:
    out = unwritable_folder(tmp_path)
    with FakeOpenAIServer() as server:
        status, _, err = run_cli(
            capsys, "build-memory", str(short_video), str(out), "--quiet", *build_options(server)
        )
    assert status == 2, err
    assert err.startswith(f"videotapestry: error: cannot build {short_video} into {out}"), err


def test_a_deeply_nested_longvideobench_subtitle_file_is_named(
    short_video: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], api_key: str
) -> None:
    subtitles = tmp_path / "deep.json"
    subtitles.write_text(DEEP_LIST)
    out = tmp_path / "memory"
    with FakeOpenAIServer() as server:
        status, _, err = run_cli(
            capsys, "build-memory", str(short_video), str(out), "--subtitles", str(subtitles),
            "--quiet", *build_options(server),
        )  # fmt: skip
        assert server.requests == []
    assert status == 2, err
    assert f"subtitle file {subtitles} nests JSON too deeply" in err, err


@pytest.mark.slow
def test_ask_prints_the_answer_before_a_trace_it_cannot_write(
    quiet_server: FakeOpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = unwritable_folder(tmp_path) / "trace.json"
    status, out, err = run_cli(
        capsys, "ask", "--memory", str(SAMPLE), "--question", QUESTION, *OPTION_ARGS,
        "--trace", str(trace), "--quiet", "--allow-degraded", *cli_args(quiet_server),
    )  # fmt: skip
    assert status == 2, err
    assert out.startswith("answer: ") and "trace: not written" in out, out
    assert f"videotapestry: error: the trace could not be written to {trace}" in err, err
    assert "the answer above stands" in err


@pytest.mark.slow
def test_chat_prints_the_turn_before_a_trace_it_cannot_write(
    quiet_server: FakeOpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "turns.txt"
    script.write_text(f"{QUESTION} | {' | '.join(OPTIONS)}\n")
    traces = unwritable_folder(tmp_path)
    status, out, err = run_cli(
        capsys, "chat", "--memory", str(SAMPLE), "--script", str(script), "--trace-dir",
        str(traces), "--quiet", "--allow-degraded", *cli_args(quiet_server),
    )  # fmt: skip
    assert status == 2, err
    assert "answer: " in out and "trace: not written" in out, out
    assert "videotapestry: error: the trace could not be written to" in err, err


@pytest.mark.slow
def test_reanswer_prints_the_answer_before_a_trace_it_cannot_write(
    quiet_server: FakeOpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "run.json"
    status, _, err = run_cli(
        capsys, "ask", "--memory", str(SAMPLE), "--question", QUESTION, *OPTION_ARGS,
        "--trace", str(trace), "--quiet", "--allow-degraded", *cli_args(quiet_server),
    )  # fmt: skip
    assert status in (0, 3), err
    (tmp_path / "run.refined_super_only.json").mkdir()  # where the variant's trace would go
    status, out, err = run_cli(
        capsys, "reanswer", str(trace), "--variant", "refined_super_only", "--allow-degraded",
        *cli_args(quiet_server),
    )  # fmt: skip
    assert status == 2, err
    assert out.startswith("answer: ") and "trace: not written" in out, out
    assert "the trace could not be written to" in err and "the answer above stands" in err, err
    assert "Traceback" not in err


# --------------------------------------------------------------------------- smaller


def test_eval_refuses_subtitles_with_no_video(
    quiet_server: FakeOpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    memories = tmp_path / "memories"
    memories.mkdir()
    os.symlink(SAMPLE, memories / "clip")
    annotations = tmp_path / "q.jsonl"
    row = {"id": "q1", "video": "clip.mp4", "question": QUESTION, "options": OPTIONS,
           "answer": "B"}  # fmt: skip
    annotations.write_text(json.dumps(row) + "\n")
    run = tmp_path / "run"
    status, _, err = run_cli(
        capsys, "eval", "--benchmark", "jsonl", "--annotations", str(annotations),
        "--memories", str(memories), "--out", str(run), "--no-video",
        "--subtitles", str(tmp_path), "--quiet", *cli_args(quiet_server),
    )  # fmt: skip
    assert status == 2, err
    assert "--subtitles" in err and "--no-video" in err
    assert not run.exists() and quiet_server.requests == []


def test_a_json_lines_chat_script_names_the_files_line(
    quiet_server: FakeOpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = {
        "broken.jsonl": ('{"question": "One?"}\n{"question": \n', ":2 is not valid JSON"),
        "no-question.jsonl": ('{"question": "One?"}\n\n{"question": 3}\n', ":3: turn 2 needs"),
    }
    for name, (text, said) in cases.items():
        script = tmp_path / name
        script.write_text(text)
        status, _, err = run_cli(
            capsys, "chat", "--memory", str(SAMPLE), "--script", str(script), "--quiet",
            *cli_args(quiet_server),
        )  # fmt: skip
        assert status == 2 and f"{script}{said}" in err, (name, err)
    assert quiet_server.requests == []


@pytest.mark.slow
def test_a_refused_scripted_turn_is_named(
    quiet_server: FakeOpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "turns.txt"
    script.write_text(
        f"{QUESTION} | {' | '.join(OPTIONS)}\n# the next one repeats an option\n"
        "Which gate? | A. Gate A | A. Gate A\n"
    )
    status, out, err = run_cli(
        capsys, "chat", "--memory", str(SAMPLE), "--script", str(script), "--trace-dir",
        str(tmp_path / "traces"), "--quiet", "--allow-degraded", *cli_args(quiet_server),
    )  # fmt: skip
    assert status == 2, err
    assert out.startswith("[1] ") and "[2]" not in out  # the first turn was answered and shown
    assert "    cost: " in out and " calls, " in out  # what the answered turn cost
    assert f"the chat script {script}, turn 2 ('Which gate?'): " in err, err


def test_a_byte_order_mark_is_no_part_of_the_first_question(tmp_path: Path) -> None:
    text, lines = tmp_path / "bom.txt", tmp_path / "bom.jsonl"
    text.write_bytes(b"\xef\xbb\xbfWhich gate?\nAnd then?\n")
    lines.write_bytes(b'\xef\xbb\xbf{"question": "Which gate?"}\n')
    assert [turn.question for turn in read_script(text)] == ["Which gate?", "And then?"]
    assert [turn.question for turn in read_script(lines)] == ["Which gate?"]
