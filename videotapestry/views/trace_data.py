"""An answered question as the HTML view reads it: a live ``Result`` or one read back from
its saved trace, with the times its picture needs.

Both sources give the view the same ``Result`` (``load_result`` reads a trace back into
one), so what a notebook shows and what ``inspect`` writes from the saved file cannot drift
apart. Traces saved before the video and node times were recorded still draw: their node
times are read back from the composite memory's headers.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

from videotapestry.agents.state import LevelOutcome
from videotapestry.result import Result, load_result
from videotapestry.views.composite import times_from_memory_text


def examined_ids(levels: Sequence[LevelOutcome]) -> set[str]:
    return {node for outcome in levels for node in (*outcome.candidate_ids, *outcome.refined)}


def with_node_times(result: Result) -> Result:
    """``result``, with the node times and video duration of its composite memory's headers
    when it recorded none."""
    if result.node_times:
        return result
    duration, node_times = times_from_memory_text(result.memory_text, examined_ids(result.levels))
    return dataclasses.replace(
        result, node_times=node_times, video_duration_s=result.video_duration_s or duration
    )


def load_question_trace(path: str | Path) -> Result:
    """A trace saved by ``Result.save_trace``, ready to draw; a clear error for anything else."""
    return with_node_times(load_result(path))
