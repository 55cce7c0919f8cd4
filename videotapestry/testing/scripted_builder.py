"""A scripted stand-in for the memory builder's models, served by the fake OpenAI server.

It answers every builder prompt with plausible JSON computed from the request, so tests can
show that the *video* drives the memory: the perception reply reads the frame index burned
into each image it was sent (``videotapestry.testing.media``), maps it to the generated
video's scene schedule, and describes those scenes; it quotes the speech lines and the OCR
text the prompt carries. The text stages read the captions and node lines of their prompts.
It is a harness, not a model: it knows the test video's scenes, which a VLM would see.

``garbage_clips`` names clips whose perception reply is not JSON (both the first reply and
the repair), for failure tests; ``on_request`` is called with each request first (a test can
count requests or kill a build from there).
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from PIL import Image

from videotapestry.testing.fake_openai import FakeReply, RecordedRequest
from videotapestry.testing.media import Scene, read_frame_index
from videotapestry.timecode import format_timestamp
from videotapestry.video.grids import CELL_GAP

Reply = dict | FakeReply | str

#: The two names the scripted model uses for its one recurring person (unification tests).
GUIDE_NAMES = ("Guide Anna", "Anna")

_CLIP = re.compile(r"Clip (clip_\d+): ")
_GRID = re.compile(r"a grid of (\d+) frames in (\d+) columns and (\d+) rows")
_SPEECH = re.compile(r"^\[(\d+:\d\d(?::\d\d)?)-(\d+:\d\d(?::\d\d)?)\] (.+)$", re.M)
_CAPTION = re.compile(r"^(clip_\d+) \[[^\]]+\] (.*)$", re.M)
_NODE = re.compile(r"^(slot\d+_[evo]\d+) \[([^\]]+)\] (.*)$", re.M)
_MACRO_LINE = re.compile(r"^(macro_\d+) \[([^\]]+)\] ([^:]*):", re.M)


def seconds(clock: str) -> float:
    parts = [float(p) for p in clock.split(":")]
    value = 0.0
    for part in parts:
        value = value * 60 + part
    return value


@dataclass
class SeenFrame:
    index: int
    time_s: float
    scene: Scene


class ScriptedBuilderModel:
    """``server.on(None, ScriptedBuilderModel(fps, scenes))`` (or per builder role)."""

    def __init__(
        self,
        fps: float,
        scenes: Sequence[Scene],
        *,
        garbage_clips: Iterable[str] = (),
        on_request: Callable[[RecordedRequest], None] | None = None,
        overrides: dict[str, Reply | Callable[[RecordedRequest], Reply]] | None = None,
    ) -> None:
        self.fps = fps
        self.scenes = tuple(scenes)
        self.garbage_clips = set(garbage_clips)
        self.on_request = on_request
        self.overrides = overrides or {}

    def __call__(self, request: RecordedRequest) -> Reply:
        if self.on_request is not None:
            self.on_request(request)
        name = request.prompt or ""
        override = self.overrides.get(name)
        if override is not None:
            return override(request) if callable(override) else override
        return getattr(self, f"_{name}")(request)

    # -- perception ------------------------------------------------------------------------

    def scene_at(self, t: float) -> Scene:
        for scene in self.scenes:
            if scene.start_s <= t < scene.end_s:
                return scene
        return self.scenes[-1]

    def frames_seen(self, request: RecordedRequest) -> list[SeenFrame]:
        """Every frame in the request's images, identified by its burned-in code; for videos
        made without the code, by the frame times the prompt lists for its images."""
        grid = _GRID.search(request.text)
        seen = []
        for jpeg in request.images:
            image = np.asarray(Image.open(io.BytesIO(jpeg)).convert("RGB"))
            cells = [image]
            if grid:
                count, columns, rows = (int(g) for g in grid.groups())
                cells = _grid_cells(image, count, columns, rows)
            for cell in cells:
                try:
                    index = read_frame_index(cell)
                except ValueError:
                    continue
                t = index / self.fps
                seen.append(SeenFrame(index, t, self.scene_at(t)))
        if not seen:
            for line in re.findall(r"^Image \d+: .* at (.+)$", request.text, re.M):
                for clock in re.findall(r"\d+:\d\d(?::\d\d)?(?:\.\d+)?", line):
                    t = seconds(clock)
                    seen.append(SeenFrame(round(t * self.fps), t, self.scene_at(t)))
        return seen

    @staticmethod
    def clip_of(request: RecordedRequest) -> str | None:
        match = _CLIP.search(request.text)
        return match.group(1) if match else None

    def _builder_clip(self, request: RecordedRequest) -> Reply:
        clip = self.clip_of(request) or "clip_0000"
        if clip in self.garbage_clips:
            return FakeReply.text("I watched the clip and it was lovely.")
        frames = self.frames_seen(request)
        if not frames:
            return FakeReply.text("no frames")
        number = int(clip.split("_")[1])
        guide = GUIDE_NAMES[number % 2]
        by_scene: dict[str, list[SeenFrame]] = {}
        for frame in frames:
            by_scene.setdefault(frame.scene.text, []).append(frame)
        main = max(by_scene.values(), key=len)[0].scene
        word = main.text.split()[-1]
        entities: list[dict[str, Any]] = [
            {
                "id": "e1",
                "name": guide,
                "type": "person",
                "description": "the guide who walks through every place",
                "attributes": {"role": "guide"},
                "seen_at": format_timestamp(frames[0].time_s),
            }
        ]
        events = []
        texts = []
        for k, group in enumerate(by_scene.values(), start=2):
            scene = group[0].scene
            place = scene.text.split()[-1].title()
            entities.append(
                {
                    "id": f"e{k}",
                    "name": place,
                    "type": "place",
                    "description": f"a room whose sign reads {scene.text}",
                    "attributes": {"colour": _colour_name(scene.color)},
                    "seen_at": format_timestamp(group[0].time_s),
                }
            )
            events.append(
                {
                    "action": f"walks through the {place.lower()}",
                    "description": f"{guide} walks through the {place.lower()}",
                    "type": "action",
                    "subject_ids": ["e1"],
                    "object_ids": [f"e{k}"],
                    "time_range": [
                        format_timestamp(group[0].time_s),
                        format_timestamp(group[-1].time_s),
                    ],
                }
            )
            texts.append(
                {
                    "text": scene.text,
                    "type": "sign",
                    "description": "white letters at the top of the frame",
                    "seen_at": format_timestamp(group[0].time_s),
                }
            )
        # A prompt without the speech section (builder.perception.transcript off) heard none.
        _, _, heard = request.text.partition("Speech during the clip:")
        speech = _SPEECH.findall(heard.split("Text read on screen by OCR:", 1)[0])
        caption = f"{guide} is in the {word.lower()} under the sign {main.text}."
        for start, end, text in speech[:2]:
            caption += f' Someone says "{text.strip()}"'
            events.append(
                {
                    "action": "speaks",
                    "description": text.strip(),
                    "type": "speech",
                    "subject_ids": ["e1"],
                    "object_ids": [],
                    "time_range": [start, end],
                }
            )
        return {"caption": caption, "entities": entities, "events": events, "on_screen_text": texts}

    # -- text stages -----------------------------------------------------------------------

    def _builder_macro_boundaries(self, request: RecordedRequest) -> Reply:
        boundaries = []
        previous = None
        for clip, caption in _CAPTION.findall(request.text):
            match = re.search(r"under the sign (SCENE \d+ \w+)", caption)
            scene = match.group(1) if match else previous
            if previous is not None and scene != previous:
                boundaries.append(clip)
            previous = scene
        return {"boundaries": boundaries}

    def _builder_macro(self, request: RecordedRequest) -> Reply:
        text = request.text
        signs = re.findall(r"under the sign (SCENE \d+ (\w+))", text)
        word = signs[0][1].title() if signs else "Somewhere"
        nodes = _NODE.findall(text)
        entity_lines = re.findall(r"^(slot\d+_e\d+) \[[^\]]+\] ([^(:]+?) \((\w+)\)", text, re.M)
        places = [i for i, _name, kind in entity_lines if kind == "place"]
        names = [name.strip() for _i, name, _kind in entity_lines]
        relations = []
        for node_id, _when, _rest in nodes:
            if "_v" in node_id and places:
                relations.append(
                    {
                        "source": node_id,
                        "target": places[0],
                        "type": "spatial",
                        "label": "happens in",
                        "reason": "the action takes place there",
                    }
                )
        texts = [n for n, _w, _r in nodes if "_o" in n]
        if texts and places:
            relations.append(
                {
                    "source": places[0],
                    "target": texts[0],
                    "type": "ATTRIBUTIVE",
                    "label": "SHOWS_TEXT",
                }
            )
        # One relation to a node that does not exist: the builder must drop it.
        relations.append(
            {"source": "slot999_e1", "target": places[0] if places else "x", "type": "CAUSAL"}
        )
        return {
            "label": f"Visit to the {word.lower()}",
            "summary": f"The guide spends time in the {word.lower()}. "
            + " ".join(f"The sign reads {s}." for s, _ in dict.fromkeys(signs)),
            "key_entities": names[:3],
            "relations": relations,
        }

    def _builder_entity_merge(self, request: RecordedRequest) -> Reply:
        decisions = {}
        for pair_id, a, a_type, b, b_type in re.findall(
            r'^(p\d+): "([^"]+)"(?: \((\w+)\))?[^|]*\| "([^"]+)"(?: \((\w+)\))?',
            request.text,
            re.M,
        ):
            words_a, words_b = set(a.lower().split()), set(b.lower().split())
            decisions[pair_id] = a_type == b_type and (words_a <= words_b or words_b <= words_a)
        return {"decisions": decisions}

    def _builder_super(self, request: RecordedRequest) -> Reply:
        macros = _MACRO_LINE.findall(request.text)
        stages = []
        for k in range(0, len(macros), 2):
            group = macros[k : k + 2]
            stages.append(
                {
                    "first_macro_id": group[0][0],
                    "label": " and ".join(label.strip() for _i, _t, label in group),
                    "description": f"Stage {k // 2 + 1} of the tour.",
                    "key_entities": [GUIDE_NAMES[0]],
                    "transition": "The guide moves on to the next rooms.",
                }
            )
        return {"stages": stages}

    def _builder_root(self, request: RecordedRequest) -> Reply:
        stages = re.findall(r"^(super_\d+) \[[^\]]+\] ([^:]+):", request.text, re.M)
        return {
            "title": f"A guided tour in {len(stages)} stages",
            "description": "The guide visits: " + "; ".join(label for _i, label in stages) + ".",
            "themes": ["tour", "rooms"],
            "key_entities": [GUIDE_NAMES[0]],
            "emotional_tone": "calm",
        }


def _grid_cells(image: np.ndarray, count: int, columns: int, rows: int) -> list[np.ndarray]:
    height, width = image.shape[:2]
    cell_w = (width - CELL_GAP * (columns - 1)) / columns
    cell_h = (height - CELL_GAP * (rows - 1)) / rows
    cells = []
    for position in range(count):
        row, column = divmod(position, columns)
        left = round(column * (cell_w + CELL_GAP))
        top = round(row * (cell_h + CELL_GAP))
        cells.append(image[top : top + round(cell_h), left : left + round(cell_w)])
    return cells


def _colour_name(rgb: tuple[int, int, int]) -> str:
    names = {
        (200, 40, 40): "red",
        (40, 150, 60): "green",
        (40, 70, 200): "blue",
        (210, 160, 30): "yellow",
        (140, 50, 170): "purple",
        (30, 160, 170): "teal",
        (220, 100, 150): "pink",
        (110, 110, 110): "grey",
    }
    return names.get(rgb, "plain")


def perception_requests(requests: Sequence[RecordedRequest]) -> dict[str, int]:
    """Perception requests per clip id (repair retries included)."""
    counts: dict[str, int] = {}
    for request in requests:
        if request.prompt == "builder_clip":
            clip = ScriptedBuilderModel.clip_of(request)
            if clip:
                counts[clip] = counts.get(clip, 0) + 1
    return counts


def offline_build_overrides(base_url: str, *extra: str) -> list[str]:
    """Config overrides for builds against the fake server with the packaged offline models
    (no network): MiniLM embeddings, Whisper tiny.en, quick retries."""
    return [
        f"models.default.base_url={base_url}",
        "models.default.harness_headers=true",
        "models.default.model=fake-vlm",
        "models.default.timeout_s=10",
        "models.default.max_retries=1",
        "embedding.model=packaged:all-MiniLM-L6-v2",
        "embedding.query_prompt_name=null",
        "asr.whisper_model=packaged:tiny.en",
        "asr.compute_type=int8",
        "asr.beam_size=1",
        *extra,
    ]
