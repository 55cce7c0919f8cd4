"""Which of a memory's nodes lie past the end of the video it is answered with.

A memory checked against its video (the fingerprint, or for a memory without one its
length) can still hold nodes the video does not reach: a memory edited by hand, or built
from a longer cut of the same recording. The rule, per node (SuperEvent, MacroEvent,
subgraph Entity, Event and OCRText, and builder clip; the root spans the whole memory and
says nothing of its own):

- A node that **starts** past the video's end, by more than ``PAST_END_TOLERANCE_S``, has
  no frame and no spoken line in the video: an agent that selects it observes nothing, and
  an answer citing it points at a moment the video does not have. The memory is still read
  (its other nodes are the video's), but the run has lost part of the method, so it is a
  degradation that names the nodes, their spans and the video's duration.
- A node that starts inside the video and ends past it can be observed over the part the
  video has (observation windows are clipped to the video), so it costs the method nothing.
  The tolerance absorbs what a container's duration and a builder's clip grid disagree on
  (a frame interval, a rounded end), so a memory built from this video is never flagged.
- When every node starts past the end, nothing the memory describes is in the video: it
  was made from another video, and answering from it is refused.

Stored transcript lines need no check: the ASR tool reads only the lines inside its
windows, which are clipped to the video. Without a video there is nothing to check.
"""

from __future__ import annotations

from videotapestry.errors import FingerprintMismatchError
from videotapestry.memory.prompt_text import clock, clock_range
from videotapestry.memory.types import TimeRange
from videotapestry.memory.video_memory import VideoMemory

#: How far past the video's end a node may start before it is past the end: more than a
#: frame interval at the frame rates memories are built from, and than a rounded end.
PAST_END_TOLERANCE_S = 0.5
#: How many of the nodes past the end a message names (the earliest ones).
NAMED = 5
#: Higher levels first among nodes that start together: the SuperEvent names the stretch.
_RANK = {"SuperEvent": 0, "MacroEvent": 1, "Entity": 2, "Event": 2, "OCRText": 2}


def past_video_end(
    memory: VideoMemory, video_duration_s: float, *, origin: str = "memory"
) -> str | None:
    """What of ``memory`` lies past the video's end, said for a degradation, or None when
    nothing does. Raises ``FingerprintMismatchError`` when everything does (the memory is
    of another video), naming its first node and both durations."""
    spans = [
        (node.time_range, _RANK[node.kind], node.id)
        for node in memory.nodes()
        if node.kind != "RootEvent"
    ]
    spans += [(clip.time_range, 3, clip.id) for clip in memory.clips]
    if not spans:
        return None
    bound = video_duration_s + PAST_END_TOLERANCE_S
    past = sorted(
        (span for span in spans if span[0].start > bound),
        key=lambda span: (span[0].start, span[1], span[2]),
    )
    if not past:
        return None
    first_range, _, first_id = past[0]
    if len(past) == len(spans):
        raise FingerprintMismatchError(
            f"{origin} describes nothing in this video: its first node, {first_id} "
            f"[{clock_range(first_range)}], starts after the video's end "
            f"({clock(video_duration_s)}, {video_duration_s:.1f} s; the memory covers "
            f"{memory.duration:.1f} s); it was made from another video, so build or import "
            "the memory for this video"
        )
    named = ", ".join(f"{node_id} [{clock_range(span)}]" for span, _, node_id in past[:NAMED])
    more = f" and {len(past) - NAMED} more" if len(past) > NAMED else ""
    lie, they, are = ("lies", "it", "is") if len(past) == 1 else ("lie", "they", "are")
    return (
        f"{_count(past)} of {origin} {lie} past the video's end ({clock(video_duration_s)}): "
        f"{named}{more}; {they} cannot be observed in this video and {are} read as stored"
    )


def _count(past: list[tuple[TimeRange, int, str]]) -> str:
    clips = sum(rank == 3 for _, rank, _ in past)
    nodes = len(past) - clips
    counted = ((nodes, "node"), (clips, "clip"))
    return " and ".join(f"{n} {word}{'' if n == 1 else 's'}" for n, word in counted if n)
