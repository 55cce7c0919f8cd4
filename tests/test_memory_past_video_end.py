"""Issue 38, item 6 (c): a memory whose nodes lie past its video's end is not answered from as
if nothing were wrong. A 27 s video is paired with a 36 s memory of it (a longer cut: its
fingerprint is this video's), so its last MacroEvent and that MacroEvent's subgraph start
after the video ends: ``ask`` answers, names those nodes in a ``memory_past_video_end``
degradation and exits 3; the agents that open that MacroEvent find no frame to sample and
say so (``visual_lost``) instead of failing. A memory all of whose nodes lie past the end is
of another video and refused before any model call, naming its first node. Without
a video there is nothing to compare with. Real video, real decoding, the scripted model
behind the fake server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from method_support import OPTIONS, QUESTION, ask, cli_args, make_vt, run_cli

from videotapestry.errors import FingerprintMismatchError
from videotapestry.memory import PAST_END_TOLERANCE_S, open_memory, past_video_end, save_memory
from videotapestry.testing import FakeOpenAIServer
from videotapestry.testing.media import make_test_video
from videotapestry.testing.memories import synthetic_memory
from videotapestry.testing.scripted import ScriptedModel
from videotapestry.video import fingerprint

VIDEO_S = 27.0
MEMORY_S = 36.0  # two SuperEvents of three 6 s MacroEvents: macro_0005 is [30, 36]
OPTION_ARGS = [x for option in OPTIONS for x in ("--option", option)]


@pytest.fixture(scope="module")
def paired(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the 27 s video, a native memory of a 36 s cut of it)."""
    folder = tmp_path_factory.mktemp("past-end")
    video = folder / "short.mp4"
    make_test_video(video, VIDEO_S, fps=2, size=(160, 90), scene_s=6)
    memory = synthetic_memory(
        duration_s=MEMORY_S, supers=2, macros_per_super=3, fingerprint=fingerprint(video)
    )
    save_memory(memory, folder / "memory")
    return video, folder / "memory"


def shifted(memory: Path, to: Path, seconds: float) -> Path:
    """A copy of ``memory`` with every node's time range moved ``seconds`` later."""
    to.mkdir()
    for name in ("memory.json", "manifest.json"):
        (to / name).write_bytes((memory / name).read_bytes())
    document = json.loads((to / "memory.json").read_text())
    for node in document["nodes"]:
        node["time_range"] = [t + seconds for t in node["time_range"]]
    (to / "memory.json").write_text(json.dumps(document))
    return to


@pytest.mark.slow
def test_ask_answers_and_names_the_nodes_past_the_videos_end(
    api_key: str, paired: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    video, memory = paired
    model = ScriptedModel()
    model.macro_choice = ["macro_0005"]  # Skim opens the MacroEvent past the end
    trace = tmp_path / "t.json"
    with FakeOpenAIServer() as server:
        server.on(None, model)
        status, err = run_cli(
            capsys, "ask", str(video), "--memory", str(memory), "--question", QUESTION,
            *OPTION_ARGS, "--trace", str(trace), "--quiet", *cli_args(server),
        )  # fmt: skip
    assert status == 3, err
    assert (
        "degraded: setup: the memory's nodes past the video's end (memory_past_video_end): "
        f"22 nodes of {memory} lie past the video's end (00:27): macro_0005 [00:30-00:36], "
    ) in err
    assert "and 17 more; they cannot be observed in this video" in err
    result = json.loads(trace.read_text())["result"]
    assert result["answer"] == "B"
    degraded = {d["kind"]: d for d in result["degraded"]}
    assert degraded["memory_past_video_end"]["level"] == "setup"
    # Focus was asked to look at [30, 36] only: no frame there, a recorded loss, no traceback.
    assert degraded["visual_lost"]["level"] == "subgraph"
    assert "no frames could be sampled" in degraded["visual_lost"]["why"]


@pytest.mark.slow
def test_memory_only_answering_has_no_video_end_to_check(
    api_key: str, paired: tuple[Path, Path], embedder
) -> None:
    _, memory = paired
    with FakeOpenAIServer() as server:
        server.on(None, ScriptedModel())
        result = ask(make_vt(server, embedder), None, memory)
    assert result.answer == "B"
    assert "memory_past_video_end" not in [d.kind for d in result.degraded]


def test_a_memory_wholly_past_the_videos_end_is_refused(
    api_key: str, paired: tuple[Path, Path], tmp_path: Path, embedder
) -> None:
    video, memory = paired
    elsewhere = shifted(memory, tmp_path / "memory", 100.0)
    with FakeOpenAIServer() as server:
        server.on(None, ScriptedModel())
        with pytest.raises(FingerprintMismatchError) as refused:
            ask(make_vt(server, embedder), video, elsewhere)
        assert server.requests == []
    message = str(refused.value)
    assert f"{elsewhere} describes nothing in this video" in message
    assert "its first node, super_01 [01:40-01:58], starts after the video's end (00:27" in message
    assert "the memory covers 136.0 s" in message


def test_only_nodes_that_start_past_the_end_beyond_the_tolerance_count(
    paired: tuple[Path, Path], tmp_path: Path
) -> None:
    _, folder = paired
    memory = open_memory(folder)
    # The last node to start: inside a video that ends less than the tolerance before it,
    # past one that ends earlier; nodes that merely run on past the end (the root, super_02,
    # macro_0005 all end at 36 s) never count.
    last = max(memory.nodes(), key=lambda node: node.time_range.start)
    start = last.time_range.start
    assert past_video_end(memory, start - PAST_END_TOLERANCE_S + 0.1) is None
    assert past_video_end(memory, MEMORY_S - 1.0) is None
    said = past_video_end(memory, start - PAST_END_TOLERANCE_S - 0.1, origin="the memory")
    assert said is not None and said.startswith("1 node of the memory lies past the video's end")
    assert f": {last.id} [" in said
    said = past_video_end(memory, 29.0, origin="the memory")
    assert said is not None and said.startswith(
        "22 nodes of the memory lie past the video's end (00:29): macro_0005 [00:30-00:36], "
    )
    # A builder clip past the end is named too.
    document = json.loads((folder / "memory.json").read_text())
    document["clips"] = [
        {"id": "clip_0001", "time_range": [0.0, 6.0], "macro_id": "macro_0000"},
        {"id": "clip_0009", "time_range": [29.8, 34.0], "macro_id": "macro_0005"},
    ]
    with_clips = shifted(folder, tmp_path / "clips", 0.0)
    (with_clips / "memory.json").write_text(json.dumps(document))
    said = past_video_end(open_memory(with_clips), 29.0)
    assert said is not None and said.startswith(
        "22 nodes and 1 clip of memory lie past the video's end (00:29): "
        "clip_0009 [00:29-00:34], macro_0005 [00:30-00:36], "
    )
    with pytest.raises(FingerprintMismatchError, match="its first node, super_01 "):
        past_video_end(open_memory(shifted(folder, tmp_path / "far", 100.0)), VIDEO_S)
