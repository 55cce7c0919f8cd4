"""The serve layer's own rules, without a server: the job database, the event log a stream
follows, which progress events reach the timeline, and who may bind where."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from videotapestry.errors import VideoTapestryError
from videotapestry.serve.access import bind_token
from videotapestry.serve.jobs import JobStore, UnknownJobError
from videotapestry.serve.operations import JobCancelledError, ReportingProgress, level_event
from videotapestry.serve.runner import EventLog


def test_jobs_survive_a_new_connection_and_unfinished_ones_are_found(tmp_path: Path) -> None:
    store = JobStore(tmp_path)
    first = store.create("build", {"video": "/r/a.mp4", "out": "/r/memories/a"})
    second = store.create("ask", {"question": "why?", "options": []})
    store.update(first.id, state="running", progress={"stage": "scan", "done": 3, "total": 9})
    store.update(second.id, state="done", result={"answer": "B"})
    store.close()

    again = JobStore(tmp_path)  # what a restarted server opens
    assert [job.id for job in again.unfinished()] == [first.id]
    resumed = again.get(first.id)
    assert resumed.state == "running" and resumed.progress["done"] == 3
    assert again.get(second.id).result == {"answer": "B"}
    assert {job.id for job in again.all()} == {first.id, second.id}


def test_a_finished_job_keeps_its_final_state(tmp_path: Path) -> None:
    store = JobStore(tmp_path)
    job = store.create("ask", {})
    store.update(job.id, state="cancelled", error="cancelled by the client")
    assert store.update(job.id, state="done", result={"answer": "A"}).state == "cancelled"
    assert store.get(job.id).result is None
    with pytest.raises(UnknownJobError, match="no such job"):
        store.get("nope")


def test_a_follower_gets_past_and_new_events_then_the_end() -> None:
    async def scenario() -> list[int]:
        log = EventLog()
        log.add({"n": 1})
        seen: list[int] = []

        async def follow() -> None:
            async for event in log.follow():
                seen.append(event["n"])

        task = asyncio.create_task(follow())
        await asyncio.sleep(0)
        log.add({"n": 2})
        await asyncio.sleep(0)
        log.add({"n": 3})
        log.close()
        await asyncio.wait_for(task, 5)
        return seen

    assert asyncio.run(scenario()) == [1, 2, 3]


def test_only_finished_levels_reach_the_timeline() -> None:
    assert level_event({"level": "super", "step": "plan", "agent": "Overview"}) is None
    done = level_event({"level": "macro", "step": "done", "stop": False, "selected": ["m1"]})
    assert done == {"level": "macro", "step": "done", "stop": False, "selected": ["m1"]}
    assert level_event({"level": "answer", "step": "answer"}) is not None


def test_build_progress_is_reported_and_a_cancel_stops_the_build() -> None:
    seen: list[tuple[str, float, float | None]] = []
    cancel = threading.Event()
    progress = ReportingProgress(lambda *figures: seen.append(figures), cancel)
    bar = progress.stage("perception", 4)
    bar.update()
    bar.update(2)
    assert seen == [("perception", 0.0, 4), ("perception", 1.0, 4), ("perception", 3.0, 4)]
    cancel.set()
    with pytest.raises(JobCancelledError):
        bar.update()


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.5", "::"])
def test_a_bind_beyond_loopback_needs_a_token(host: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VIDEOTAPESTRY_SERVE_TOKEN", raising=False)
    with pytest.raises(VideoTapestryError, match="--token"):
        bind_token(host, None)
    assert bind_token(host, "a-token") == "a-token"
    assert bind_token("127.0.0.1", None) is None
    monkeypatch.setenv("VIDEOTAPESTRY_SERVE_TOKEN", "from-env")
    assert bind_token(host, None) == "from-env"
