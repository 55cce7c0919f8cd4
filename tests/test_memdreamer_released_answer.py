"""A question answered end to end over a memory imported from MemDreamer's released layout.

The root of two videos (tests/fixtures/memdreamer_released) is imported with the CLI, then one
video's memory answers a question through the whole method (fake server, scripted model, real
frames, embeddings and PACE-Mem). The scripted Answer agent picks the option whose text is in
the memory it is shown, and the rewrite steps keep node texts, so the letter is "C" only if
the oven display read from ``phase2_topdown/`` reached the Answer agent.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import numpy as np
import pytest

from videotapestry.api import VideoTapestry
from videotapestry.cli import main
from videotapestry.config import EmbeddingConfig
from videotapestry.embeddings import SentenceTransformerEmbedder
from videotapestry.memory import load_memory
from videotapestry.testing import FakeOpenAIServer
from videotapestry.testing.fake_openai import RecordedRequest
from videotapestry.testing.media import make_test_video
from videotapestry.testing.scripted import ScriptedModel, section

RELEASED = Path(__file__).parent / "fixtures" / "memdreamer_released"
QUESTION = "What temperature did the oven display show?"
OPTIONS = ["A. 160°C", "B. 175°C", "C. 190°C", "D. 205°C"]
MINILM = "packaged:all-MiniLM-L6-v2"
QWEN_8B = "Qwen/Qwen3-Embedding-8B"


def answer_from_memory(request: RecordedRequest) -> dict:
    memory = section(request.text, "Video memory:")
    found = [option[0] for option in OPTIONS if option[3:] in memory]
    return {"reasoning": "read from the memory", "answer": found[0] if len(found) == 1 else "A"}


def keep_texts(request: RecordedRequest) -> dict:
    """A rewrite that keeps every memory's text (entries start with ``id [time]``)."""
    block = section(request.text, "Memories to rewrite:", "Observations at this level:")
    updates = {}
    for entry in re.split(r"^(?=\w+ \[)", block.strip(), flags=re.M):
        head, _, text = entry.partition("] ")
        if text:
            updates[head.split(" [")[0]] = {"updated_text": text.strip(), "is_relevant": True}
    return {"updated_memories": updates}


OVERVIEW_PLAN = {
    "thought": "The oven is preheated in the baking stage.",
    "observation_needed": True,
    "observation_instruction": "Read the oven display.",
    "candidate_memory_ids": ["super_02"],
    "time_ranges": [[130, 170]],
    "locator_time_hints_used": [],
}


@pytest.fixture(scope="module")
def video(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("video") / "kitchen.mp4"
    make_test_video(path, 240, fps=2, size=(320, 180), scene_s=30)  # as long as the memory
    return path


def test_question_over_a_memory_imported_from_the_released_layout(
    tmp_path: Path, video: Path, api_key: str
) -> None:
    assert main(["import-memdreamer", str(RELEASED), str(tmp_path / "natives")]) == 0
    memory_dir = tmp_path / "natives" / "kitchen_0001"
    embedder = SentenceTransformerEmbedder(EmbeddingConfig(model=MINILM, query_prompt_name=None))
    model = ScriptedModel(
        overview_planning=OVERVIEW_PLAN, level_update=keep_texts, final_answer=answer_from_memory
    )
    with FakeOpenAIServer() as server:
        server.on(None, model)
        vt = VideoTapestry(
            overrides=[
                f"models.default.base_url={server.base_url}",
                "models.default.harness_headers=true",
                "models.default.max_retries=0",
                "cache.enabled=false",
            ],
            embedder=embedder,
        )

        async def run():
            try:
                return await vt.aanswer(video, memory_dir, QUESTION, OPTIONS)
            finally:
                await vt.aclose()

        result = asyncio.run(run())
    assert result.answer == "C" and result.answer_source == "answer"
    assert result.levels_visited == ["super", "macro", "subgraph"]
    assert '"190°C"' in result.memory_text
    # The imported Qwen3-Embedding-8B vectors were not scored against MiniLM queries: the
    # memory was re-embedded with the configured model, and the result says so.
    embeddings = vt.load_memory(memory_dir).memory.embeddings
    assert embeddings is not None and embeddings.model_name == MINILM
    assert embeddings.dimension == 384
    assert [w.kind for w in result.warnings] == ["memory_vectors_replaced"]
    assert not result.degraded
    note = result.warnings[0].why
    assert f"({QWEN_8B}, 8 values) were replaced by {MINILM}'s (384 values)" in note
    assert f"embedding.model={QWEN_8B} uses the stored ones" in note
    assert result.to_dict()["warnings"][0]["kind"] == "memory_vectors_replaced"


class NamedEmbedder:
    """Vectors of the model the memory's were made with, by name and length (no model to
    load), counting the texts it embeds."""

    def __init__(self, model_name: str, dimension: int) -> None:
        self.model_name = model_name
        self.dimension = dimension
        self.texts = 0

    def embed(self, texts, *, query: bool = False) -> np.ndarray:
        self.texts += len(texts)
        rng = np.random.default_rng(len(texts))
        rows = rng.normal(size=(len(texts), self.dimension)).astype(np.float32)
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)


@pytest.mark.parametrize("setting", ["use_when_same_model", "recompute"])
def test_the_memorys_own_vectors_serve_their_model_unless_told_to_recompute(
    tmp_path: Path, setting: str, api_key: str
) -> None:
    assert main(["import-memdreamer", str(RELEASED / "kitchen_0001"), str(tmp_path / "m")]) == 0
    imported = load_memory(tmp_path / "m").embeddings
    embedder = NamedEmbedder(QWEN_8B, 8)
    vt = VideoTapestry(overrides=[f"embedding.stored_vectors={setting}"], embedder=embedder)
    loaded = vt.load_memory(tmp_path / "m")
    assert imported is not None and loaded.memory.embeddings is not None
    if setting == "use_when_same_model":
        assert loaded.vectors_replaced is None and embedder.texts == 0
        assert loaded.memory.embeddings.vectors.tobytes() == imported.vectors.tobytes()
    else:
        assert loaded.vectors_replaced is not None
        assert loaded.vectors_replaced.because == "recompute" and embedder.texts > 0
