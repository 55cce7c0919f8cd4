"""Setting up one question's run: its video decoders, memory, transcript and model session.

Part of the api layer, behind the ``VideoTapestry`` facade; ``agents.context.RunContext`` is
what it builds. Everything here is file and CPU work (probing and opening the video, loading
the memory), which the facade runs off the event loop. What made observation or ASR
unavailable is recorded on the context, never worked around silently: the agents record it as
a degradation of the run.

A memory directory may hold a frame proxy of its video (``builder.frame_proxy``): the
decoders then read it instead of the original, and the trace says so (``frame_proxy``). A
proxy that is not of this video is refused with a warning and the original is decoded: that
is the method's own input, so nothing of the method is lost (no degradation), but the trace
records the refusal (``frame_proxy_refused``) so the switch is never silent.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from videotapestry.agents.context import ProgressCallback, RunContext
from videotapestry.agents.relative_time import relative_time_for
from videotapestry.agents.state import QuestionInput
from videotapestry.asr import SubtitleSource, TranscriptSource, make_transcript_source
from videotapestry.llm.prefix_cache import video_cache_key
from videotapestry.memory import (
    LiveState,
    VideoMemory,
    check_duration,
    live_state,
    live_video,
    past_video_end,
)
from videotapestry.memory_cache import MemoryCache
from videotapestry.video import (
    FrameCache,
    FrameWorkers,
    ProxyLookup,
    ProxyReader,
    RenderCache,
    VideoInfo,
    VideoReader,
    find_proxy,
    has_proxy,
    open_video,
    probe,
    with_cache,
)

if TYPE_CHECKING:
    from videotapestry.asr.stored import StoredTranscript
    from videotapestry.config import AsrConfig, Config, VideoConfig
    from videotapestry.embeddings import Embedder
    from videotapestry.llm.service import ModelService
    from videotapestry.prompts import PromptRegistry

_log = logging.getLogger(__name__)


def open_run_context(
    video: str | Path | None,
    memory: str | Path | VideoMemory,
    item: QuestionInput,
    *,
    config: Config,
    prompts: PromptRegistry,
    service: ModelService,
    embedder: Embedder,
    memories: MemoryCache,
    no_video: bool,
    progress: ProgressCallback | None,
    readers: Sequence[VideoReader] = (),
    frames: FrameCache | None = None,
    renders: RenderCache | None = None,
    frame_workers: FrameWorkers | None = None,
) -> RunContext:
    """The context one question runs in; its decoders are the caller's to close
    (``RunContext.close_video``), and are closed here if setting up fails. ``readers``:
    decoders of ``video`` already open (a conversation's), used as they are and left open;
    ``frames``: the decoded frames new decoders share; ``frame_workers``: the processes
    observations decode in instead (they keep frames of their own)."""
    disabled = None
    owned = not readers
    decoders: list[VideoReader] = []
    if no_video:
        disabled = "disabled by the caller (--no-video)"
    elif video is None:
        disabled = "no video file was given; answering from the stored memory only"
    else:
        # A followed memory is asked with the source it follows: its recording is read.
        folder = memory_directory(memory)
        video = live_video(folder, video) if folder is not None else video
        decoders = list(readers) or open_decoders(video, config.video, frames, memory_dir=folder)
    reader = decoders[0] if decoders else None
    video_fp = reader.info.fingerprint if reader is not None else None
    try:
        transcripts, asr_unavailable = _transcripts(
            config.asr, memories, reader, memory, item, video_fp
        )
        asr_substituted = _substitution(config.asr, item, transcripts)
        subtitles_for_whisper = _subtitles_for_whisper(config.asr, item, transcripts)
        if isinstance(transcripts, SubtitleSource):
            # Read first, so a file with no usable cue stops the question before the memory
            # is loaded or any model is called.
            cues = len(transcripts.lines())
            if progress is not None:
                progress(
                    {
                        "level": "setup",
                        "step": "subtitles",
                        "file": str(transcripts.path),
                        "encoding": transcripts.encoding,
                        "cues": cues,
                    }
                )
        loaded = memories.load(memory, video_fingerprint=video_fp)
        past_end = None
        if reader is not None:
            origin = "the memory" if isinstance(memory, VideoMemory) else str(memory)
            check_duration(
                loaded.memory.manifest,
                loaded.memory.duration,
                reader.info.duration_s,
                origin=origin,
            )
            past_end = past_video_end(loaded.memory, reader.info.duration_s, origin=origin)
        # "In the last 10 minutes" is read against the time this version covers.
        live = _live_state_of(memory)
        relative = relative_time_for(
            item.question,
            loaded.memory.duration,
            mode=config.question.relative_time,
            recording=None if live is None else not live.ended,
        )
    except BaseException:
        for opened in decoders if owned else []:
            opened.close()
        raise
    session = service.session()
    # One prompt_cache_key per video: its file's fingerprint, else the one its memory names.
    manifest = loaded.memory.manifest
    identity = (
        reader.info.fingerprint
        if reader is not None
        else (manifest.video_fingerprint if manifest is not None else None)
    )
    session.cache_key = video_cache_key(identity) if identity else None
    ctx = RunContext(
        config=config,
        memory=loaded.memory,
        prompts=prompts,
        session=session,
        video=reader,
        extra_decoders=decoders[1:],
        frame_workers=frame_workers,
        renders=renders,
        transcripts=transcripts,
        embedder=embedder,
        locator=loaded.locator,
        evidence=loaded.evidence,
        observation_disabled=disabled,
        asr_unavailable=asr_unavailable,
        asr_substituted=asr_substituted,
        memory_past_end=past_end,
        subtitles_for_whisper=subtitles_for_whisper,
        vectors_replaced=loaded.vectors_replaced,
        relative_time=relative,
        live=live,
        progress=progress,
        owns_video=owned,
    )
    # Waits and retries of slow calls reach the same display as the level steps. The session
    # holds the context weakly: a strong link back would make the two a reference cycle, so a
    # finished question's context (its decoders, trace, images) would wait for the cyclic
    # collector's full pass instead of going at once.
    ctx.session.progress = _ReportTo(ctx)
    _note_frame_source(ctx, memory)
    return ctx


class _ReportTo:
    """A session's progress callback that forwards to a context it does not keep alive."""

    def __init__(self, ctx: RunContext) -> None:
        self._ctx = weakref.ref(ctx)

    def __call__(self, event: dict[str, Any]) -> None:
        ctx = self._ctx()
        if ctx is not None:
            ctx.report(**event)


def memory_directory(memory: str | Path | VideoMemory) -> Path | None:
    """The directory a memory was given as, where its frame proxy would be; None for a
    memory object or a file."""
    if isinstance(memory, VideoMemory):
        return None
    path = Path(memory)
    return path if path.is_dir() else None


def _live_state_of(memory: str | Path | VideoMemory) -> LiveState | None:
    """The pointer of ``memory`` when it is a followed folder (``memory.live``)."""
    folder = memory_directory(memory)
    return live_state(folder) if folder is not None else None


def _note_frame_source(ctx: RunContext, memory: str | Path | VideoMemory) -> None:
    """Record on the trace that frames come from a proxy, or that one was refused."""
    reader = ctx.video
    if isinstance(reader, ProxyReader):
        made = reader.manifest
        ctx.session.trace.note(
            "frame_proxy",
            path=str(reader.path),
            size=f"{made.width}x{made.height}",
            codec=made.codec,
            keyframe_interval=made.keyframe_interval,
        )
        return
    directory = memory_directory(memory)
    if reader is None or directory is None or not ctx.config.video.frame_proxy:
        return
    if has_proxy(directory):
        refused = find_proxy(directory, reader.info).refused
        if refused is not None:
            ctx.session.trace.note("frame_proxy_refused", reason=refused)


def open_decoders(
    video: str | Path,
    config: VideoConfig,
    frames: FrameCache | None = None,
    *,
    memory_dir: Path | None = None,
) -> list[VideoReader]:
    """``config.parallel_decoders`` readers of ``video``: the first probes it, the others
    reopen it with the same backend and probe (no second fingerprint, identical frames);
    all of them share ``frames``. When ``memory_dir`` holds a frame proxy of this video
    (and ``config.frame_proxy`` is on), they decode the proxy; one of another video is
    refused with a warning and the original is decoded."""
    reader: VideoReader
    reopen: Callable[[], VideoReader]
    proxy = _matching_proxy(video, config, memory_dir)
    if proxy is not None:
        lookup, info = proxy

        def reopen() -> VideoReader:
            return ProxyReader(lookup, info, config, frames)

        reader = reopen()
    else:
        reader = open_video(video, config, frame_cache=frames)
        backend: Callable[..., VideoReader] = type(reader)

        def reopen() -> VideoReader:
            return with_cache(backend(reader.info.path, config, info=reader.info), frames)

    decoders = [reader]
    try:
        decoders += [reopen() for _ in range(config.parallel_decoders - 1)]
    except BaseException:
        for opened in decoders:
            opened.close()
        raise
    return decoders


def _matching_proxy(
    video: str | Path, config: VideoConfig, memory_dir: Path | None
) -> tuple[ProxyLookup, VideoInfo] | None:
    """The memory directory's frame proxy of ``video`` (and the video's probe), if it has
    one made from this video and proxies are on; a refused one is logged as a warning.
    The video is probed here only when there is a proxy to check."""
    if memory_dir is None or not config.frame_proxy or not has_proxy(memory_dir):
        return None
    info = probe(video)
    lookup = find_proxy(memory_dir, info)
    if lookup.refused is not None:
        _log.warning("%s; decoding the original video instead", lookup.refused)
    return (lookup, info) if lookup.usable else None


def _transcripts(
    asr: AsrConfig,
    memories: MemoryCache,
    reader: VideoReader | None,
    memory: str | Path | VideoMemory,
    item: QuestionInput,
    video_fp: str | None,
) -> tuple[TranscriptSource | None, str | None]:
    """(source, why ASR is unavailable). The transcript a built memory stores, unless the
    question brings subtitles; else subtitles when the config says so (a question without
    subtitles then has no ASR, which is recorded as a degradation, never a silent switch
    to Whisper); else one shared Whisper (loaded once) for videos with audio; a video
    without audio simply has no transcript."""
    if reader is None:
        return None, None
    stored = _memory_transcript(asr, memory, item, video_fp)
    if stored is not None:
        return stored, None
    if asr.source == "subtitles":
        if not item.subtitle_path:
            return None, (
                "asr.source is 'subtitles' but this question has no subtitle file; pass "
                "--subtitles FILE (subtitle_path=) or set asr.source=whisper"
            )
        source = make_transcript_source(
            asr, subtitle_path=item.subtitle_path, subtitle_offset_s=item.subtitle_offset_s
        )
        return source, None
    if not reader.info.has_audio:
        return None, None
    return memories.whisper(), None


def _substitution(
    asr: AsrConfig, item: QuestionInput, transcripts: TranscriptSource | None
) -> str | None:
    """Why the transcript read is not the one ``asr.source`` names, or None when it is.

    A question without subtitles under ``asr.source: subtitles`` still reads the stored
    transcript of its memory; when that one was transcribed (not read from subtitles) the
    ASR tool sees other words at other times than the config asked for, which a comparison
    with subtitle-based results must know.
    """
    stored = _stored(item, transcripts)
    if asr.source != "subtitles" or stored is None or stored.transcript.source == "subtitles":
        return None
    made = f"{stored.transcript.source or 'an unrecorded source'}" + (
        f", {stored.transcript.detail}" if stored.transcript.detail else ""
    )
    return (
        "asr.source is 'subtitles' but this question has no subtitle file; the ASR tool "
        f"reads the memory's stored transcript instead ({stored.origin}, made by {made})"
    )


def _subtitles_for_whisper(
    asr: AsrConfig, item: QuestionInput, transcripts: TranscriptSource | None
) -> str | None:
    """Why the ASR tool reads subtitles' words under ``asr.source: whisper``, or None.

    A memory built with a benchmark's subtitles stores them as its transcript, and the
    stored transcript stands in for Whisper at question time. The user chose those
    subtitles when building, so nothing is lost (a warning, not a degradation), but a
    result compared with the paper's Video-MME "w/o subtitles" column must say so.
    """
    stored = _stored(item, transcripts)
    if asr.source != "whisper" or stored is None or stored.transcript.source != "subtitles":
        return None
    return (
        f"the memory's stored transcript ({stored.origin}) was read from subtitles when it "
        "was built; the ASR tool reads those words, not Whisper's (asr.memory_transcript=false "
        "transcribes the windows instead)"
    )


def _stored(item: QuestionInput, transcripts: TranscriptSource | None) -> StoredTranscript | None:
    from videotapestry.asr.stored import StoredTranscript

    if item.subtitle_path or not isinstance(transcripts, StoredTranscript):
        return None
    return transcripts


def _memory_transcript(
    asr: AsrConfig,
    memory: str | Path | VideoMemory,
    item: QuestionInput,
    video_fp: str | None,
) -> TranscriptSource | None:
    """The transcript a built memory stores (``transcript.json``), unless the config says
    otherwise or the question brings its own subtitles."""
    if isinstance(memory, VideoMemory) or item.subtitle_path:
        return None
    if not asr.memory_transcript:
        return None
    from videotapestry.asr.stored import StoredTranscript

    return StoredTranscript.for_memory(memory, expected_fingerprint=video_fp)
