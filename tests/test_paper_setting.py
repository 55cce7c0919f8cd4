"""Issue 37: the paper's exact setting as one shipped config (``--config paper``), every key where
the default differs from it named with a reason on a generated page, and the Video-MME recipe
of docs/how-to/reproduce.md answering without the benchmark's subtitles."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from videotapestry.config import load_config
from videotapestry.config.paper import (
    DEFAULT_REASONS,
    PAPER_CONFIG,
    leaves,
    paper_differences,
    stale,
    unexplained,
)

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("docs_reference", ROOT / "scripts/docs_reference.py")
assert _spec is not None and _spec.loader is not None
reference: Any = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("docs_reference", reference)
_spec.loader.exec_module(reference)

RECIPE = re.compile(
    r"^<!-- runs offline in tests/test_paper_setting.py -->\n```bash\n(?P<body>.*?)\n```",
    re.M | re.S,
)


def test_every_key_where_the_default_differs_from_the_paper_has_a_reason() -> None:
    differences = paper_differences(load_config(), load_config(PAPER_CONFIG))
    keys = [d.key for d in differences]
    # What the paper fixes and the default does otherwise (more come as switches land).
    assert {"agents.focus.evidence", "agents.composite_macros", "answer.citations"} <= set(keys)
    assert unexplained(differences) == [] and stale(differences) == []
    page = reference.paper_page()
    for difference in differences:
        assert f"`{difference.key}`" in page and DEFAULT_REASONS[difference.key][:40] in page
    assert page.count("\n| `") == len(differences)


def test_a_difference_without_a_reason_stops_the_page() -> None:
    planted = load_config(PAPER_CONFIG, overrides=["images.jpeg_quality=70"])
    assert unexplained(paper_differences(load_config(), planted)) == ["images.jpeg_quality"]
    with pytest.raises(ValueError, match=r"images\.jpeg_quality with no reason"):
        reference.paper_page(planted)


def test_a_reason_for_a_key_that_no_longer_differs_is_named() -> None:
    differences = paper_differences(load_config(), load_config(PAPER_CONFIG))
    reasons = {**DEFAULT_REASONS, "images.jpeg_quality": "sharper frames"}
    assert stale(differences, reasons) == ["images.jpeg_quality"]


def test_leaves_walk_sections_and_keep_lists_and_empty_mappings_whole() -> None:
    tree = {"a": {"b": 1, "c": {"d": [1, 2]}}, "e": {}, "f": None}
    assert dict(leaves(tree)) == {"a.b": 1, "a.c.d": [1, 2], "e": {}, "f": None}


def test_the_paper_config_composes_with_any_model_profile() -> None:
    for profile in ("offline", "local"):
        paper = load_config(PAPER_CONFIG, profile=profile)
        ours = load_config(profile=profile)
        assert paper.models == ours.models and paper.profile == profile
        assert paper.agents.focus.evidence == "whole_subgraphs"
        assert paper.answer.citations is False
    # A key the command line sets still wins over the paper's file.
    assert load_config(PAPER_CONFIG, overrides=["answer.citations=true"]).answer.citations


@pytest.mark.slow
def test_the_video_mme_recipe_answers_from_whisper_not_from_the_subtitles(
    demo_cache: Path, tmp_path: Path
) -> None:
    """The page's command, as written, on one Video-MME row about the sample video whose
    subtitle file (beside the annotations, where a run looks for it) names another place."""
    from videotapestry.demo import sample_video_path
    from videotapestry.demo.runner import demo_memory_dir

    [block] = RECIPE.findall((ROOT / "docs/how-to/reproduce.md").read_text(encoding="utf-8"))
    words = shlex.split(re.sub(r"\\\n\s*", " ", block))
    assert words[:2] == ["videotapestry", "eval"] and "--subtitles" not in words
    (tmp_path / "videotapestry" / "demo").mkdir(parents=True)
    (tmp_path / "videotapestry" / "demo" / "data").symlink_to(ROOT / "videotapestry/demo/data")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "fixtures").symlink_to(ROOT / "tests" / "fixtures")
    shutil.copytree(demo_memory_dir(sample_video_path(), demo_cache), tmp_path / "memories/sample")
    environment = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "HF_HUB_OFFLINE": "1"}
    environment.pop("OPENAI_API_KEY", None)

    def run(*extra: str) -> tuple[dict[str, Any], list[Any]]:
        done = subprocess.run(
            [sys.executable, "-m", "videotapestry.cli", *words[1:], *extra],
            cwd=tmp_path,
            env=environment,
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        out = tmp_path / (extra[-1] if extra else words[words.index("--out") + 1])
        [record] = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
        trace = json.loads(next((out / "traces").rglob("*.json")).read_text())
        heard = [
            line
            for level in trace["levels"]
            for observation in level["observations"]
            if observation["kind"] == "asr"
            for line in observation["evidence_lines"]
        ]
        return record, heard

    record, heard = run()
    assert record["prediction"] == "B", record  # the green tent, as said; the subtitles: A
    assert record["degraded"] == [] and record["status"] == "answered"
    # The ASR tool read the memory's Whisper transcript: the subtitles' words never appear ...
    assert heard and not any("main office" in str(line) for line in heard), heard
    # ... which they do when the run is told to read them (the "with subtitles" row).
    fixture = "tests/fixtures/eval/videomme-sample"
    _, heard = run("--subtitles", fixture, "--out", "runs/with-subtitles")
    assert any("main office" in str(line) for line in heard), heard


# ------------------------------------------------------------ a question under --config paper


def answer_keys(request: Any) -> set[str]:
    schema = (request.response_format or {}).get("json_schema", {}).get("schema", {})
    return set(schema.get("properties", {}))


def uniform_centres(start: float, end: float, count: int) -> list[float]:
    step = (end - start) / count
    return [start + (k + 0.5) * step for k in range(count)]


def asked(server: Any, embedder: Any, video: Path, config: str | None) -> dict[str, Any]:
    """The method's question and the Direct baseline's under ``config``: the results and what
    the fake server was sent (real HTTP, real frames of the generated 20-minute video)."""
    from method_support import OPTIONS, QUESTION, SAMPLE

    from videotapestry.api import VideoTapestry
    from videotapestry.testing.scripted import ScriptedModel

    seen: dict[str, Any] = {}
    for variant in ("full", "direct"):
        server.reset()
        server.on(None, ScriptedModel())
        vt = VideoTapestry(
            config,
            overrides=[
                f"models.default.base_url={server.base_url}",
                "models.default.harness_headers=true",
                "models.default.max_retries=0",
                "cache.enabled=false",
                f"variant={variant}",
            ],
            embedder=embedder,
        )
        seen[variant] = vt.answer(video, SAMPLE, QUESTION, OPTIONS, keep_images=True)
        seen[f"{variant}_requests"] = server.requests
    return seen


@pytest.mark.long_video
def test_a_question_under_the_paper_config_is_asked_as_the_paper_asks_it(
    server: Any, embedder: Any, video: Path
) -> None:
    seen = asked(server, embedder, video, PAPER_CONFIG)
    full, direct = seen["full"], seen["direct"]
    [answer] = [r for r in seen["full_requests"] if r.role == "answer"]
    [direct_call] = [r for r in seen["direct_requests"] if r.role == "direct"]
    # The final calls: exactly the paper's keys, no citation instruction, no refs: lines.
    for request in (answer, direct_call):
        assert answer_keys(request) == {"reasoning", "answer"}
        assert "citations" not in request.text and "cite" not in request.text.lower()
    assert not re.search(r"^\s*refs: ", answer.text, re.M)
    assert not full.citations and not direct.citations
    assert not full.citations_asked and not direct.citations_asked  # shown as "not asked for"
    # Only the selected MacroEvents go into the composite.
    macro = full.levels[1]
    shown = set(re.findall(r"\bmacro_\d+\b", full.memory_text))
    assert shown and shown <= set(macro.selected_ids) < set(macro.candidate_ids)
    # Focus reads the whole local subgraphs: PACE-Mem selected nothing.
    assert full.levels[2].level == "subgraph" and full.levels[2].evidence_selection is None
    # Uniform samples at their exact centres (no keyframe snapping).
    times = [image.timestamps[0] for image in direct.images]
    assert times == pytest.approx(uniform_centres(0.0, 1200.0, len(times)), abs=0.51)
    # Skim and Focus frames as decoded: each JPEG is the one the frame alone encodes to.
    from test_paper_switches import decoded_frames, level_looks

    from videotapestry.video import encode_jpeg
    from videotapestry.video.encoding import frame_side, resize_to_fit

    config = load_config(PAPER_CONFIG)
    side, quality = frame_side(config.images), config.images.jpeg_quality
    for level, outcome in (("macro", full.levels[1]), ("subgraph", full.levels[2])):
        looks = level_looks(seen["full_requests"], level)
        assert looks and len(looks) == len(outcome.observations)
        for images, observation in zip(looks, outcome.observations, strict=True):
            frames = decoded_frames(video, observation.frame_times)
            assert images == [encode_jpeg(resize_to_fit(f, side), max_side=side, quality=quality)
                              for f in frames]  # fmt: skip


@pytest.mark.long_video
def test_the_default_config_asks_for_citations_and_keeps_the_candidates(
    server: Any, embedder: Any, video: Path
) -> None:
    seen = asked(server, embedder, video, None)
    full = seen["full"]
    [answer] = [r for r in seen["full_requests"] if r.role == "answer"]
    [direct_call] = [r for r in seen["direct_requests"] if r.role == "direct"]
    for request in (answer, direct_call):
        assert answer_keys(request) == {"reasoning", "answer", "citations"}
    assert re.search(r"^\s*refs: ", answer.text, re.M)
    assert full.citations_asked and full.to_dict()["citations_asked"]
    macro = full.levels[1]
    shown = set(re.findall(r"\bmacro_\d+\b", full.memory_text))
    assert set(macro.candidate_ids) <= shown
    assert full.levels[2].evidence_selection is not None  # PACE-Mem chose the leaf evidence
    # Samples may snap to a keyframe (video.keyframe_snap): not every one at its centre.
