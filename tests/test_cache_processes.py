"""One response cache file shared by several processes at once, as the workers of a Ray
executor on one machine share it (SQLite in WAL mode): no lost or locked writes, and every
process's usage says exactly which of its calls the server answered."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
from pathlib import Path
from typing import Any

from videotapestry.config import load_config
from videotapestry.contracts.method import FinalAnswer
from videotapestry.llm import ModelService
from videotapestry.prompts import PromptRegistry
from videotapestry.testing import FakeOpenAIServer, FakeReply

PROMPTS = 12
PROCESSES = 3
KEY = "sk-test-cache-processes-0123456789"


def _prompt(k: int) -> object:
    return PromptRegistry().render(
        "final_answer",
        question=f"Which door is number {k}?",
        options=["A. Red", "B. Blue"],
        handoff_trace="",
        memory=f"super_01 [00:00-01:00] Door {k} is blue.",
    )


def ask_all(base_url: str, cache: str, start: Any = None, results: Any = None) -> tuple[int, int]:
    """Every prompt once (in a child process: after ``start``, a barrier, into ``results``);
    returns (calls, calls served from the cache)."""
    os.environ["OPENAI_API_KEY"] = KEY
    config = load_config(
        overrides=[
            f"models.default.base_url={base_url}",
            "models.default.harness_headers=true",
            "models.default.model=fake-vlm",
            "models.default.max_retries=0",
            f"cache.path={cache}",
        ]
    )

    async def run() -> tuple[int, int]:
        service = ModelService(config)
        session = service.session()
        try:
            if start is not None:  # every process starts on the fresh file together
                await asyncio.to_thread(start.wait, 60)
            await asyncio.gather(
                *(session.complete_json("answer", _prompt(k), FinalAnswer) for k in range(PROMPTS))
            )
        finally:
            await service.aclose()
            service.close()
        summary = session.usage.summary()
        return summary.calls, summary.cached_calls

    usage = asyncio.run(run())
    if results is not None:
        results.put(usage)
    return usage


def test_processes_share_one_cache_file_and_count_their_own_usage(tmp_path: Path) -> None:
    cache = tmp_path / "shared" / "responses.sqlite"
    with FakeOpenAIServer(latency_s=0.05) as server:
        server.on("answer", lambda _: FakeReply.json({"reasoning": "It is blue.", "answer": "B"}))
        context = multiprocessing.get_context("spawn")
        start, results = context.Barrier(PROCESSES), context.Queue()
        children = [
            context.Process(target=ask_all, args=(server.base_url, str(cache), start, results))
            for _ in range(PROCESSES)
        ]
        for child in children:
            child.start()
        usages = [results.get(timeout=120) for _ in children]
        for child in children:
            child.join(timeout=30)
            assert child.exitcode == 0
        asked = len(server.requests)
        # A prompt two processes missed at the same moment is asked twice; each is asked once
        # at least, and no process counted a reply it got over HTTP as cached (or the reverse).
        assert PROMPTS <= asked <= PROMPTS * PROCESSES
        assert all(calls == PROMPTS for calls, _ in usages)
        assert sum(calls - cached for calls, cached in usages) == asked

        server.reset()
        server.on("answer", lambda _: FakeReply.json({"reasoning": "never", "answer": "A"}))
        again = ask_all(server.base_url, str(cache))
        assert again == (PROMPTS, PROMPTS)  # every reply is in the file
        assert server.requests == []


def test_a_full_cache_disk_names_its_directory_and_keeps_the_stored_entries(
    tmp_path: Path,
) -> None:
    """SQLite's own "database or disk is full" (its page limit reached) is a full disk."""
    import pytest

    from videotapestry.errors import DiskFullError
    from videotapestry.kvstore import SqliteStore

    store = SqliteStore(
        tmp_path / "cache" / "c.sqlite", table="t", schema="CREATE TABLE t (key TEXT, v TEXT)"
    )
    store.put("kept", {"v": "x"})
    pages = store._conn.execute("PRAGMA page_count").fetchone()[0]
    store._conn.execute(f"PRAGMA max_page_count={pages}")
    with pytest.raises(DiskFullError, match=f"while writing in {tmp_path / 'cache'};"):
        store.put("big", {"v": "y" * 100_000})
    assert store.get("kept") == {"key": "kept", "v": "x"} and store.get("big") is None
    store.close()
