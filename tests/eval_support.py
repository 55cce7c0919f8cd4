"""Hand-made run directories for the report and compare tests (no runner involved)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from videotapestry.eval.records import RecordUsage, ResultRecord


def record(
    qid: str,
    gold: str | None,
    prediction: str | None,
    *,
    variant: str = "full",
    status: str | None = None,
    categories: tuple[str, ...] = (),
    duration: str | None = None,
    usage: dict[str, Any] | None = None,
    **fields: Any,
) -> ResultRecord:
    """One results.jsonl record; answered when there is a prediction, else failed."""
    if status is None:
        status = "answered" if prediction is not None else "failed"
    correct = None if prediction is None or gold is None else prediction == gold
    return ResultRecord(
        question_id=qid,
        variant=variant,
        video_id=f"video-{qid}",
        status=status,
        prediction=prediction,
        gold=gold,
        correct=correct,
        categories=list(categories),
        duration_group=duration,
        usage=RecordUsage(**(usage or {})),
        **fields,
    )


def header(**fields: Any) -> dict[str, Any]:
    base = {
        "format": 1,
        "benchmark": "videomme",
        "annotations": "/data/videomme/test.json",
        "variants": ["full"],
        "config": {"variant": "full"},
        "config_hash": "c0ffee",
        "prompt_hashes": {},
        "models": {},
        "created": "2026-05-01T12:00:00+00:00",
        "command": ["videotapestry", "eval"],
    }
    return {**base, **fields}


def write_run(
    path: Path,
    records: list[ResultRecord],
    run_json: dict[str, Any] | None = None,
    *,
    tail: bytes = b"",
) -> Path:
    """A run directory as the runner leaves it: run.json and one line per record."""
    path.mkdir(parents=True, exist_ok=True)
    if run_json is not None:
        (path / "run.json").write_text(json.dumps(run_json), encoding="utf-8")
    lines = b"".join((r.to_json_line() + "\n").encode("utf-8") for r in records)
    (path / "results.jsonl").write_bytes(lines + tail)
    return path
