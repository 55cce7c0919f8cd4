"""A hostile user's trial: every command fed bad inputs, in-process through ``cli.main``.

Each case must end with a clear one-line error (or a recorded failure) and the documented exit
status, never a traceback and never exit 0 in silence. The cases, by class:

subtitles (issue 23 item 12)
  ask, eval and build-memory given a subtitle file that is binary garbage, UTF-16 without a
  byte-order mark, or empty: an error naming the file (eval: the question's failed record).

numbers and questions (item 13)
  ask --subtitle-offset nan / inf / -inf: a usage error (exit 2); ask with two options of the
  same text, or an option over two lines: refused before any call (exit 2); ask with a
  memory that records no fingerprint and whose length is not the video's: refused (exit 2),
  naming the memory.

JSON (item 16)
  a document nested 100 000 levels deep, and a 5000-digit number (Python refuses to convert
  it), as: a MemDreamer graph and a subgraph file in a root import (the other video still
  imports; exit 2 naming the failed ones), a native memory.json read by inspect and ask, and
  an annotations line read by eval: exit 2 naming the file (and line).

command-line text and Ctrl-C (item 14)
  a Latin-1 byte in ask's --question, in eval's --ids and in config show's -o, in-process
  (as Python hands it over) and as real bytes in a subprocess: exit 2 naming the argument;
  SIGINT to ask and to build-memory while a model call is pending: one line, exit 130.

saved traces (item 17)
  inspect, inspect --html and reanswer given a saved trace edited by hand: a required field
  deleted (result.question_id, a level's agent), a value of the wrong type (result.answer,
  a usage count), no level at all (a partial trace), the file cut in half: exit 2 naming the
  field (or the JSON error), and reanswer makes no model call.

rotated videos (item 20)
  ask and eval given a video whose display matrix also mirrors it (only quarter turns are
  applied): the answer stands with a frames_not_upright degradation, printed by ask (exit 3)
  and kept in eval's record (exit 3); a plain quarter turn is read upright and is no degradation.

every command (items 14 and 16)
  each of the 13 commands given a non-UTF-8 argument: exit 2 naming it; chat given a script
  of deep JSON or of Latin-1 bytes, eval-report and compare given a run whose run.json nests
  too deeply: exit 2 naming the file.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from eval_support import record as result_record
from method_support import OPTIONS, QUESTION, SAMPLE, cli_args, run_cli

from videotapestry.cli import COMMANDS, build_parser, main
from videotapestry.testing import FakeOpenAIServer, FakeReply
from videotapestry.testing.media import make_test_video, set_display_rotation
from videotapestry.testing.scripted import ScriptedModel
from videotapestry.testing.scripted_builder import offline_build_overrides

SRT = "1\n00:00:01,000 --> 00:00:03,000\nThe oven is set to 220 degrees.\n"
#: name -> bytes of a subtitle file with no usable cue
BAD_SUBTITLES = {
    "garbage.srt": bytes(range(128, 256)) * 16,
    "utf16.srt": SRT.encode("utf-16-le"),  # no byte-order mark
    "empty.srt": b"",
}
OPTION_ARGS = [x for option in OPTIONS for x in ("--option", option)]


@pytest.fixture(scope="module")
def short_video(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("bad") / "short.mp4"
    make_test_video(path, 20, fps=2, size=(96, 54), scene_s=10)
    return path


@pytest.fixture
def bad_subtitles(tmp_path: Path) -> dict[str, Path]:
    paths = {}
    for name, data in BAD_SUBTITLES.items():
        paths[name] = tmp_path / name
        paths[name].write_bytes(data)
    return paths


def test_ask_refuses_subtitles_with_no_usable_cue(
    quiet_server: FakeOpenAIServer,
    video: Path,
    bad_subtitles: dict[str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for name, path in bad_subtitles.items():
        status, err = run_cli(
            capsys, "ask", str(video), "--memory", str(SAMPLE), "--question", QUESTION,
            *OPTION_ARGS, "--subtitles", str(path), "--trace", str(tmp_path / "t.json"),
            "--quiet", *cli_args(quiet_server),
        )  # fmt: skip
        assert status == 2, (name, err)
        assert err.startswith("videotapestry: error: subtitle file") and str(path) in err
    assert quiet_server.requests == []  # refused before any model call


def test_eval_records_each_bad_subtitle_file_by_name(
    quiet_server: FakeOpenAIServer,
    video: Path,
    bad_subtitles: dict[str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    memories = tmp_path / "memories"
    memories.mkdir()
    os.symlink(SAMPLE, memories / video.stem)
    annotations = tmp_path / "q.jsonl"
    rows = [
        {"id": f"q{n}", "video": video.name, "question": QUESTION, "options": OPTIONS,
         "answer": "B", "subtitles": name}
        for n, name in enumerate(bad_subtitles)
    ]  # fmt: skip
    annotations.write_text("".join(json.dumps(row) + "\n" for row in rows))
    run = tmp_path / "run"
    status, _ = run_cli(
        capsys, "eval", "--benchmark", "jsonl", "--annotations", str(annotations),
        "--videos", str(video.parent), "--memories", str(memories), "--out", str(run),
        "--subtitles", str(tmp_path), "--quiet", *cli_args(quiet_server),
    )  # fmt: skip
    assert status == 1  # every question failed, each with its own file named
    records = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    records = [r for r in records if "question_id" in r]
    assert sorted(r["status"] for r in records) == ["failed"] * len(bad_subtitles)
    by_id = sorted(records, key=lambda r: r["question_id"])
    for record, name in zip(by_id, bad_subtitles, strict=True):
        assert str(tmp_path / name) in record["error"]
    assert quiet_server.requests == []


def test_build_memory_stops_on_subtitles_with_no_usable_cue(
    short_video: Path,
    bad_subtitles: dict[str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    api_key: str,
) -> None:
    with FakeOpenAIServer() as server:
        overrides = offline_build_overrides(server.base_url, "cache.enabled=false")
        options = [x for override in overrides for x in ("-o", override)]
        for name, path in bad_subtitles.items():
            out = tmp_path / f"memory-{name}"
            status, err = run_cli(
                capsys, "build-memory", str(short_video), str(out), "--subtitles", str(path),
                "--quiet", *options,
            )  # fmt: skip
            assert status == 2, (name, err)
            assert str(path) in err
            assert not (out / "memory.json").exists() and not (out / "transcript.json").exists()
        assert server.requests == []


@pytest.fixture(scope="module")
def phone_videos(video: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Copies of the 20-minute video with a display matrix: turned 90°, and turned 90° and
    mirrored (the sample memory records no fingerprint, so it takes either)."""
    folder = tmp_path_factory.mktemp("phone")
    paths = {}
    for name, mirror in (("turned", False), ("mirrored", True)):
        paths[name] = folder / f"{name}.mp4"
        shutil.copy(video, paths[name])
        set_display_rotation(paths[name], 90, mirror=mirror)
    return paths


def test_ask_reports_frames_it_cannot_show_upright(
    quiet_server: FakeOpenAIServer,
    phone_videos: dict[str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    trace = tmp_path / "t.json"
    common = ["--memory", str(SAMPLE), "--question", QUESTION, *OPTION_ARGS, "--trace", str(trace),
              "--quiet", *cli_args(quiet_server)]  # fmt: skip
    status, err = run_cli(capsys, "ask", str(phone_videos["mirrored"]), *common)
    assert status == 3, err
    assert "degraded: setup: the frames the agents see (frames_not_upright): the display " \
        "matrix asks for a mirror image" in err  # fmt: skip
    kinds = [d["kind"] for d in json.loads(trace.read_text())["result"]["degraded"]]
    assert kinds == ["frames_not_upright"]
    sent = [image for request in quiet_server.requests for image in request.images]
    assert sent and all(portrait(image) for image in sent)
    quiet_server.requests.clear()
    status, err = run_cli(capsys, "ask", str(phone_videos["turned"]), *common)
    assert status == 0, err
    sent = [image for request in quiet_server.requests for image in request.images]
    assert sent and all(portrait(image) for image in sent)


def portrait(jpeg: bytes) -> bool:
    """Whether a JPEG the model was sent is taller than wide (frames of a turned landscape
    video, or grids of them, are)."""
    import cv2
    import numpy as np

    image = cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_GRAYSCALE)
    return bool(image.shape[0] > image.shape[1])


def test_eval_records_frames_it_cannot_show_upright(
    quiet_server: FakeOpenAIServer,
    phone_videos: dict[str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    memories = tmp_path / "memories"
    memories.mkdir()
    annotations = tmp_path / "q.jsonl"
    rows = []
    for name, path in phone_videos.items():
        os.symlink(SAMPLE, memories / path.stem)
        rows.append({"id": name, "video": path.name, "question": QUESTION, "options": OPTIONS,
                     "answer": "B"})  # fmt: skip
    annotations.write_text("".join(json.dumps(row) + "\n" for row in rows))
    run = tmp_path / "run"
    status, err = run_cli(
        capsys, "eval", "--benchmark", "jsonl", "--annotations", str(annotations),
        "--videos", str(phone_videos["turned"].parent), "--memories", str(memories),
        "--out", str(run), "--quiet", *cli_args(quiet_server),
    )  # fmt: skip
    assert status == 3 and "1 answer(s) lost part of the method" in err, err
    records = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    degraded = {r["question_id"]: r["degraded"] for r in records if "question_id" in r}
    assert degraded == {"mirrored": ["frames_not_upright"], "turned": []}


@pytest.mark.parametrize("offset", ["nan", "inf", "-inf", "ten"])
def test_ask_refuses_an_offset_that_is_not_finite(
    offset: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["ask", "v.mp4", "--memory", str(SAMPLE), "--question", QUESTION,
              "--subtitles", "s.srt", f"--subtitle-offset={offset}"])  # fmt: skip
    assert caught.value.code == 2
    err = capsys.readouterr().err
    assert "--subtitle-offset" in err and offset in err and "Traceback" not in err


BAD_OPTIONS = {
    "same text": ["A. Paris", "B. London", "C. paris"],
    "two lines": ["A. Paris\nB. London", "C. Rome"],
}


def test_ask_refuses_options_that_are_not_distinct_single_lines(
    quiet_server: FakeOpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for problem, options in BAD_OPTIONS.items():
        status, err = run_cli(
            capsys, "ask", "--memory", str(SAMPLE), "--question", QUESTION,
            *[x for option in options for x in ("--option", option)], "--quiet",
            *cli_args(quiet_server),
        )  # fmt: skip
        assert status == 2, problem
        assert ("same text" if problem == "same text" else "several lines") in err
    assert quiet_server.requests == []


def test_a_memory_of_another_length_without_fingerprint_is_refused(
    quiet_server: FakeOpenAIServer,
    short_video: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # SAMPLE covers 20 minutes and records no fingerprint; the video lasts 20 s.
    status, err = run_cli(
        capsys, "ask", str(short_video), "--memory", str(SAMPLE), "--question", QUESTION,
        *OPTION_ARGS, "--quiet", *cli_args(quiet_server),
    )  # fmt: skip
    assert status == 2
    assert str(SAMPLE) in err and "records no video fingerprint" in err and "20.0 s" in err
    assert quiet_server.requests == []


DEEP = "[" * 100_000 + "]" * 100_000
HUGE = '{"version": ' + "7" * 5000 + "}"
RELEASED = Path(__file__).parent / "fixtures" / "memdreamer_released"


def test_a_root_import_survives_deep_and_huge_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "release"
    shutil.copytree(RELEASED, root)
    shutil.copytree(RELEASED / "kitchen_0001", root / "kitchen_0003")
    (root / "harbour_0002" / "phase4" / "hierarchical_graph.json").write_text(DEEP)
    subgraph = "phase2_topdown/episode_0001/episode_0001/step5_subgraph.json"
    (root / "kitchen_0003" / subgraph).write_text(HUGE)
    dest = tmp_path / "natives"
    status, err = run_cli(capsys, "import-memdreamer", str(root), str(dest))
    assert status == 2
    lines = err.splitlines()
    assert lines[0].startswith("failed harbour_0002: ") and "hierarchical_graph.json" in lines[0]
    assert "too deeply" in lines[0]
    assert lines[1].startswith("failed kitchen_0003: ") and "step5_subgraph.json" in lines[1]
    assert "4300 digits" in lines[1]
    assert (dest / "kitchen_0001" / "memory.json").is_file()  # the good video imported
    assert not (dest / "harbour_0002").exists() and not (dest / "kitchen_0003").exists()


@pytest.mark.parametrize("document", [DEEP, HUGE], ids=["deep", "huge"])
def test_a_native_memory_of_bad_json_is_named(
    document: str,
    quiet_server: FakeOpenAIServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    memory = tmp_path / "memory"
    assert main(["import-memdreamer", str(RELEASED / "kitchen_0001"), str(memory)]) == 0
    (memory / "memory.json").write_text(document)
    capsys.readouterr()
    status, err = run_cli(capsys, "inspect", str(memory))
    assert status == 2 and str(memory / "memory.json") in err
    status, err = run_cli(
        capsys, "ask", "--memory", str(memory), "--question", QUESTION, *OPTION_ARGS,
        "--quiet", *cli_args(quiet_server),
    )  # fmt: skip
    assert status == 2 and str(memory / "memory.json") in err
    assert quiet_server.requests == []


def test_an_annotation_line_of_bad_json_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name, line in (("deep", DEEP), ("huge", HUGE)):
        annotations = tmp_path / f"{name}.jsonl"
        good = {"id": "q0", "video": "v.mp4", "question": QUESTION, "options": OPTIONS}
        annotations.write_text(json.dumps(good) + "\n" + line + "\n")
        status, err = run_cli(
            capsys, "eval", "--benchmark", "jsonl", "--annotations", str(annotations), "--list"
        )
        assert status == 2 and f"{annotations}:2" in err, err


LATIN1 = os.fsdecode(b"caf\xe9?")  # how Python passes a byte that is not UTF-8


@pytest.mark.parametrize(
    "args",
    [
        ["ask", "--memory", str(SAMPLE), "--question", LATIN1],
        ["eval", "--benchmark", "jsonl", "--annotations", "q.jsonl", "--ids", LATIN1],
        ["config", "show", "-o", f"agents.focus.note={LATIN1}"],
    ],
    ids=["ask", "eval", "config"],
)
def test_command_line_text_that_is_not_utf8_is_refused(
    args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    status, err = run_cli(capsys, *args)
    assert status == 2
    assert "is not UTF-8 text (byte 0xe9)" in err and "caf\\xe9?" in err
    assert err.count("\n") == 1


ROOT = Path(__file__).resolve().parents[1]


def _as_from_a_terminal() -> None:
    """Ctrl-C back at its default in the child, as a terminal starts a command.

    A background job started without job control (CI's ``.ci/run &``, for one) ignores SIGINT,
    and the ignored disposition is inherited through exec: Python then installs no handler,
    the child never sees the signal, and the test would be about the shell, not the CLI.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def cli_process(*args: bytes | str, key: str) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_BASE_URL"}
    env.update(OPENAI_API_KEY=key, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1")
    return subprocess.Popen(
        [sys.executable, "-m", "videotapestry.cli", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=_as_from_a_terminal,  # sets a signal disposition only; takes no lock
    )


def test_real_latin1_bytes_on_the_command_line(api_key: str) -> None:
    process = cli_process("ask", "--memory", str(SAMPLE), "--question", b"caf\xe9?", key=api_key)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 2
    assert err.decode().strip() == (
        'videotapestry: error: argument 5 ("caf\\xe9?") is not UTF-8 text (byte 0xe9); give '
        "command-line text in UTF-8 (check the terminal's or the script's encoding)"
    )


def interrupt_when_asked(
    runs: list[tuple[FakeOpenAIServer, subprocess.Popen[bytes]]],
) -> list[str]:
    """SIGINT to each process once it waits on its first model call; their stderr after."""
    waiting = list(runs)
    deadline = time.monotonic() + 120
    while waiting and time.monotonic() < deadline:
        for server, process in list(waiting):
            if server.requests or process.poll() is not None:
                process.send_signal(signal.SIGINT)
                waiting.remove((server, process))
        time.sleep(0.1)
    assert not waiting, "no model call within 120 s"
    # Generous: on a loaded machine the interpreter's own shutdown can take a while; the
    # assertions are about what is printed and the status, not how fast.
    return [process.communicate(timeout=150)[1].decode() for _, process in runs]


@pytest.mark.slow
def test_ctrl_c_in_ask_and_build_memory_ends_with_one_line_and_130(
    short_video: Path, tmp_path: Path, api_key: str
) -> None:
    with FakeOpenAIServer() as for_ask, FakeOpenAIServer() as for_build:
        for server in (for_ask, for_build):
            server.on(None, lambda _request: FakeReply.stall(120))
        overrides = offline_build_overrides(
            for_build.base_url,
            "cache.enabled=false",
            "builder.ocr.engine=none",
            "models.default.timeout_s=120",
        )
        # Both start at once: most of each one's time is loading models before its first call.
        ask = cli_process(
            "ask", "--memory", str(SAMPLE), "--question", QUESTION, *OPTION_ARGS, "--quiet",
            "--trace", str(tmp_path / "t.json"), *cli_args(for_ask), key=api_key,
        )  # fmt: skip
        build = cli_process(
            "build-memory", str(short_video), str(tmp_path / "memory"), "--quiet",
            *[x for override in overrides for x in ("-o", override)], key=api_key,
        )  # fmt: skip
        ask_err, err = interrupt_when_asked([(for_ask, ask), (for_build, build)])
        assert for_ask.requests and for_build.requests  # interrupted while a call was pending
        assert ask.returncode == 130, ask_err
        assert ask_err.strip() == "videotapestry: interrupted; nothing was saved for this question"
        assert build.returncode == 130, err
        assert err.strip().splitlines()[-1] == (
            "videotapestry: interrupted; the finished stages are checkpointed, run the same "
            "command again to resume"
        )
        assert "Traceback" not in err


@pytest.fixture(scope="module")
def saved_trace(video: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One real ask's trace (the scripted model over the fake server)."""
    trace = tmp_path_factory.mktemp("trace") / "q.json"
    with pytest.MonkeyPatch.context() as patch, FakeOpenAIServer() as server:
        patch.setenv("OPENAI_API_KEY", "sk-test-bad-inputs-0123456789abcdef")
        server.on(None, ScriptedModel())
        status = main(["ask", str(video), "--memory", str(SAMPLE), "--question", QUESTION,
                       *OPTION_ARGS, "--trace", str(trace), "--quiet", "--allow-degraded",
                       *cli_args(server)])  # fmt: skip
    assert status == 0
    yield trace


def _edited(data: dict, edit: str) -> dict | str:
    if edit == "no question_id":
        del data["result"]["question_id"]
    elif edit == "no agent":
        del data["levels"][0]["agent"]
    elif edit == "answer is a number":
        data["result"]["answer"] = 5
    elif edit == "usage count is text":
        data["result"]["usage"]["calls"] = "many"
    elif edit == "no level":
        data["levels"] = []
    return data


TRACE_EDITS = {
    "no question_id": "result.question_id: Field required",
    "no agent": "levels.0.agent: Field required",
    "answer is a number": "result.answer: Input should be a valid string",
    "usage count is text": "result.usage.calls: Input should be a valid integer",
    "no level": "levels: List should have at least 1 item",
    "cut in half": "is not valid JSON",
}


def test_hand_edited_traces_are_refused_naming_the_field(
    saved_trace: Path,
    quiet_server: FakeOpenAIServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    original = saved_trace.read_text(encoding="utf-8")
    for edit, problem in TRACE_EDITS.items():
        trace = tmp_path / f"{edit.replace(' ', '-')}.json"
        if edit == "cut in half":
            trace.write_text(original[: len(original) // 2], encoding="utf-8")
        else:
            trace.write_text(json.dumps(_edited(json.loads(original), edit)), encoding="utf-8")
        for command in (
            ["inspect", str(trace)],
            ["inspect", str(trace), "--html", str(tmp_path / "page.html")],
            ["reanswer", str(trace), "--variant", "refined_super_only", "--memory", str(SAMPLE),
             *cli_args(quiet_server)],
        ):  # fmt: skip
            status, err = run_cli(capsys, *command)
            assert status == 2, (edit, command[0], err)
            assert str(trace) in err and problem in err, (edit, err)
        assert not (tmp_path / "page.html").exists()
    assert quiet_server.requests == []  # nothing answered from a trace that fails validation


def _command_names() -> list[str]:
    subparsers = build_parser()._subparsers
    assert subparsers is not None
    [action] = [a for a in subparsers._group_actions if a.choices]
    assert isinstance(action.choices, dict)
    return list(action.choices)


def test_every_command_refuses_an_argument_that_is_not_utf8(
    capsys: pytest.CaptureFixture[str],
) -> None:
    names = _command_names()
    assert len(names) == len(COMMANDS) == 16
    for name in names:
        status, err = run_cli(capsys, name, LATIN1)
        assert status == 2 and "argument 2" in err and "not UTF-8 text" in err, name


def test_chat_scripts_and_run_directories_of_bad_json(
    quiet_server: FakeOpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    deep, latin = tmp_path / "deep.json", tmp_path / "latin.txt"
    deep.write_text(DEEP)
    latin.write_bytes(b"Which caf\xe9 opens first?\n")
    for script, problem in ((deep, "nests JSON too deeply"), (latin, "not UTF-8 text")):
        status, err = run_cli(
            capsys, "chat", "--memory", str(SAMPLE), "--script", str(script), "--quiet",
            *cli_args(quiet_server),
        )  # fmt: skip
        assert status == 2 and str(script) in err and problem in err, err
    run = tmp_path / "run"
    run.mkdir()
    (run / "run.json").write_text(DEEP)
    good = result_record("q1", "A", "A").model_dump_json()
    (run / "results.jsonl").write_text(good + "\n" + HUGE + "\n" + good + "\n")
    for command in (["eval-report", str(run)], ["compare", str(run), str(run)]):
        status, err = run_cli(capsys, *command)
        assert status == 2 and str(run / "run.json") in err, (command, err)
    assert quiet_server.requests == []
