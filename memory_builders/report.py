"""What a build did: failed clips, lost spans of the video, degradations, per-stage usage
and timings, and its errors.

The report is written to ``build_report.json`` beside the memory (and into the manifest's
``build`` entry), printed as a one-screen summary at the end of ``build-memory``, and kept in
the build directory when a build stops, so the user can see why and resume. Both are
scrubbed of secrets (``trace.scrub``): a failure's reason may quote a server's error body.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

from videotapestry.errors import VideoTapestryError
from videotapestry.llm import UsageSummary
from videotapestry.timecode import format_timestamp
from videotapestry.trace import scrub

BUILDER_VERSION = "1"


class BuildError(VideoTapestryError):
    """A build cannot go on; its checkpoints stay in the build directory for a resume."""


class BuildStoppedError(BuildError):
    """A model error that every further call would repeat (no key, unknown model, server
    unreachable, a parameter the server rejects): the build stops at the first such call."""


class TooManyFailuresError(BuildError):
    """More clips failed than ``builder.max_failed_share`` allows."""


@dataclass(frozen=True)
class ClipFailure:
    """One clip left out of the memory, and why."""

    clip_id: str
    start_s: float
    end_s: float
    stage: str  # "frames" or "perception"
    reason: str


@dataclass(frozen=True)
class LostSpan:
    """A stretch of the video no frame could be decoded from (a truncated file, a corrupt
    tail or middle), and the clips it cuts into: the memory says nothing of it, and a rerun
    cannot bring it back, as the file itself lacks it."""

    start_s: float
    end_s: float
    reason: str
    clips: list[str] = field(default_factory=list)

    def describe(self) -> str:
        where = f"from {format_timestamp(self.start_s)} to {format_timestamp(self.end_s)}"
        clips = f" (clips {', '.join(self.clips)})" if self.clips else ""
        return f"video undecodable {where}{clips}: {self.reason}"


@dataclass(frozen=True)
class Degradation:
    """Part of the method that was lost or replaced by its fallback (what, where, why)."""

    what: str
    where: str
    why: str


class Timings:
    """Seconds spent per named activity, summed over threads (for the framework-cost bench)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.seconds: dict[str, float] = {}

    def add(self, name: str, seconds: float) -> None:
        with self._lock:
            self.seconds[name] = self.seconds.get(name, 0.0) + seconds

    @contextmanager
    def measure(self, name: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.add(name, time.perf_counter() - started)

    def to_json(self) -> dict[str, float]:
        with self._lock:
            return {k: round(v, 4) for k, v in sorted(self.seconds.items())}


@dataclass
class StageReport:
    """One stage: wall time, checkpoints reused, and the model usage it caused."""

    name: str
    wall_s: float = 0.0
    reused: int = 0
    computed: int = 0
    usage: dict[str, Any] = field(default_factory=dict)


@dataclass
class BuildReport:
    video: str
    out: str
    duration_s: float = 0.0
    fingerprint: str = ""
    clips: int = 0
    stages: dict[str, StageReport] = field(default_factory=dict)
    failures: list[ClipFailure] = field(default_factory=list)
    lost_spans: list[LostSpan] = field(default_factory=list)
    degradations: list[Degradation] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    usage: dict[str, Any] = field(default_factory=dict)
    wall_s: float = 0.0
    status: str = "running"  # running | complete | partial | stopped
    message: str = ""

    @property
    def partial(self) -> bool:
        return bool(self.failures or self.lost_spans)

    def stage(self, name: str) -> StageReport:
        if name not in self.stages:
            self.stages[name] = StageReport(name)
        return self.stages[name]

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["partial"] = self.partial
        data["builder_version"] = BUILDER_VERSION
        per_hour = usage_per_video_hour(self)
        data["usage_per_video_hour"] = None if per_hour is None else usage_dict(per_hour)
        scrubbed: dict[str, Any] = json.loads(scrub(json.dumps(data, ensure_ascii=False)))
        return scrubbed


def usage_dict(summary: UsageSummary) -> dict[str, Any]:
    data = summary.to_dict()
    data.pop("by_role", None)
    return data


def usage_per_video_hour(report: BuildReport) -> UsageSummary | None:
    """The build's usage scaled to one hour of video, the figure builds are compared by
    (None for a video of unknown length)."""
    if report.duration_s <= 0:
        return None
    return UsageSummary.from_dict(report.usage or {}).scaled(3600.0 / report.duration_s)


def summary_text(report: BuildReport) -> str:
    """The one-screen summary printed at the end of a build."""
    minutes = report.duration_s / 60
    lines = [
        f"memory: {report.out}  ({report.status})",
        f"video: {report.video}  {minutes:.1f} min, {report.clips} clips",
    ]
    if report.counts:
        shown = ("SuperEvent", "MacroEvent", "Entity", "Event", "OCRText", "relations")
        lines.append("nodes: " + ", ".join(f"{report.counts.get(k, 0)} {k}" for k in shown))
    lines.append(
        f"{'stage':<14}{'wall s':>8}{'reused':>8}{'calls':>7}{'cached':>8}{'failed':>8}"
        f"{'images':>8}{'tokens in/out':>17}{'cost $':>9}"
    )
    for stage in report.stages.values():
        u = UsageSummary.from_dict(stage.usage or {})
        tokens = f"{u.prompt_tokens}/{u.completion_tokens}"
        cost = "-" if u.unpriced_calls else f"{u.cost_usd:.4f}"
        lines.append(
            f"{stage.name:<14}{stage.wall_s:>8.1f}{stage.reused:>8}{u.calls:>7}"
            f"{u.cached_calls:>8}{u.failed_calls:>8}{u.images:>8}{tokens:>17}{cost:>9}"
        )
    total = UsageSummary.from_dict(report.usage or {})
    lines.append(f"total: {report.wall_s:.1f} s, {total.describe()}")
    per_hour = usage_per_video_hour(report)
    if per_hour is not None:
        lines.append(f"per video-hour: {per_hour.describe()}")
    if report.failures:
        lines.append(f"PARTIAL: {len(report.failures)} of {report.clips} clips failed:")
        lines += [
            f"  {f.clip_id} [{f.start_s:.1f}-{f.end_s:.1f} s] {f.stage}: {f.reason}"
            for f in report.failures[:10]
        ]
        if len(report.failures) > 10:
            lines.append(f"  ... and {len(report.failures) - 10} more (build_report.json)")
    lines += [f"PARTIAL: {span.describe()}" for span in report.lost_spans[:10]]
    for item in report.degradations[:10]:
        lines.append(f"degraded: {item.what} ({item.where}): {item.why}")
    if report.message:
        lines.append(report.message)
    return scrub("\n".join(lines))
