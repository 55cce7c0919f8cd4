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

import pytest

from videotapestry.api import VideoTapestry
from videotapestry.cli import main
from videotapestry.config import EmbeddingConfig
from videotapestry.embeddings import SentenceTransformerEmbedder
from videotapestry.testing import FakeOpenAIServer
from videotapestry.testing.fake_openai import RecordedRequest
from videotapestry.testing.media import make_test_video
from videotapestry.testing.scripted import ScriptedModel, section

RELEASED = Path(__file__).parent / "fixtures" / "memdreamer_released"
QUESTION = "What temperature did the oven display show?"
OPTIONS = ["A. 160°C", "B. 175°C", "C. 190°C", "D. 205°C"]
MINILM = "packaged:all-MiniLM-L6-v2"


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
    # memory was re-embedded with the configured model.
    embeddings = vt.load_memory(memory_dir).memory.embeddings
    assert embeddings is not None and embeddings.model_name == MINILM
    assert embeddings.dimension == 384
