"""The library index: every memory under some roots, searchable as one (SPEC §15).

The engine is LanceDB, embedded (no server): one table of moments with a full-text index and
a vector column, searched by both at once and fused by reciprocal rank (its hybrid search),
and one table of videos. It was chosen over SQLite FTS5 with sqlite-vec because this
machine's Python, like many distribution builds, cannot load SQLite extensions, so the
vectors would have had to be searched by hand; LanceDB keeps text and vectors in one engine
with an ANN index for the large libraries (docs/how-to/library.md has the measurements).

Updates are per memory and atomic: a memory's rows are replaced in one LanceDB commit (a
merge that inserts, updates and deletes that memory's rows together), and only then is its
version recorded, so a process killed mid-update leaves the previous index readable and a
rerun re-indexes exactly the memories whose commit did not finish. One writer at a time
(a lock file in the library directory); readers read the last committed version while it
writes.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np

from videotapestry.asr import StoredTranscript
from videotapestry.embeddings import Embedder
from videotapestry.errors import (
    LibraryError,
    MemoryFormatError,
    OptionalDependencyError,
    VideoTapestryError,
)
from videotapestry.library.moments import (
    IndexedVideo,
    Moment,
    memory_key,
    memory_moments,
    memory_version,
)
from videotapestry.memory import (
    VideoMemory,
    detect_format,
    live_state,
    open_memory,
    recording_path,
)

log = logging.getLogger(__name__)

MOMENTS = "moments"
VIDEOS = "videos"
LOCK_FILE = ".write.lock"
#: LanceDB's names of the indices it makes on the text and vector columns.
TEXT_INDEX = "text_idx"
VECTOR_INDEX = "vector_idx"
KEY_INDEX = "video_key_idx"
#: Versions older than this are removed when the indices are refreshed; a reader holding
#: one longer than this (a very long search) may then fail and is asked again.
KEEP_VERSIONS = timedelta(minutes=10)
#: The vector index is trained again once the library holds this many times the rows it was
#: trained on (its partitions are sized for the rows it saw).
RETRAIN_GROWTH = 2.0
STATE_FILE = "library.json"
#: From this many rows on, vectors are searched through an IVF-PQ index instead of scanned.
ANN_FROM_ROWS = 100_000
#: The builder's report beside a memory (``memory_builders.output.REPORT_FILE``).
BUILD_REPORT = "build_report.json"
#: Moments embedded per call to the embedder.
EMBED_BATCH = 256


@dataclass(frozen=True)
class SearchHit:
    """A moment found: which video, when, at which level, what it says, how well it fits."""

    video_key: str
    memory: str
    video: str | None
    title: str
    level: str
    node_id: str
    start_s: float
    end_s: float
    text: str
    score: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "video_key": self.video_key,
            "memory": self.memory,
            "video": self.video,
            "title": self.title,
            "level": self.level,
            "node_id": self.node_id,
            "start_s": self.start_s,
            "end_s": self.end_s,
            "text": self.text,
            "score": self.score,
        }


@dataclass
class UpdateReport:
    """What one ``update`` did, memory by memory."""

    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unchanged: int = 0
    rows_written: int = 0
    #: (memory directory, why it could not be indexed): the rest are indexed all the same.
    failed: list[tuple[str, str]] = field(default_factory=list)


ProgressCallback = Callable[[str, int, int], None]


def _lancedb() -> Any:
    try:
        import lancedb
    except ImportError:
        raise OptionalDependencyError(
            "a video library needs LanceDB; install it with pip install 'videotapestry[library]'"
        ) from None
    return lancedb


def find_memories(roots: Iterable[str | Path]) -> list[Path]:
    """Every memory directory under ``roots`` (a root may be a memory itself), sorted; a
    memory's own subdirectories are not searched."""
    found: list[Path] = []
    for root in roots:
        root = Path(root).expanduser()
        if not root.exists():
            raise LibraryError(f"library root {root} does not exist")
        if detect_format(root) is not None:
            found.append(root.resolve())
            continue
        for current, dirs, _ in os.walk(root):
            here = Path(current)
            kept = []
            for name in sorted(dirs):
                child = here / name
                if name.startswith("."):
                    continue
                if detect_format(child) is not None:
                    found.append(child.resolve())
                else:
                    kept.append(name)
            dirs[:] = kept
    return sorted(dict.fromkeys(found))


class LibraryIndex:
    """A library directory: open it, ``update`` it from roots, ``search`` it."""

    def __init__(self, path: str | Path, embedder: Embedder) -> None:
        self.path = Path(path).expanduser()
        self.embedder = embedder
        self._db: Any = None

    # -- reading ---------------------------------------------------------------------------

    def _connect(self) -> Any:
        if self._db is None:
            self.path.mkdir(parents=True, exist_ok=True)
            self._db = _lancedb().connect(str(self.path))
        return self._db

    def _table(self, name: str) -> Any | None:
        db = self._connect()
        if name not in _table_names(db):
            return None
        return db.open_table(name)

    def videos(self) -> list[IndexedVideo]:
        """The indexed memories, by title."""
        table = self._table(VIDEOS)
        if table is None:
            return []
        videos = [_video_of(row) for row in table.to_arrow().to_pylist()]

        return sorted(videos, key=lambda v: (v.title.lower(), v.memory))

    def _videos_of(self, keys: set[str]) -> dict[str, IndexedVideo]:
        """The indexed videos of ``keys`` (a search's hits), read by key, not the whole table."""
        table = self._table(VIDEOS)
        if table is None or not keys:
            return {}
        listed = ", ".join(f"'{_quoted(k)}'" for k in sorted(keys))
        rows = table.search().where(f"key IN ({listed})").limit(len(keys)).to_list()
        return {row["key"]: _video_of(row) for row in rows}

    def count(self, video_key: str | None = None) -> int:
        table = self._table(MOMENTS)
        if table is None:
            return 0
        return int(table.count_rows(None if video_key is None else _where_video(video_key)))

    def search(
        self, query: str, top_k: int = 10, *, levels: Sequence[str] | None = None
    ) -> list[SearchHit]:
        """The ``top_k`` moments that fit ``query`` best, by words and by meaning at once."""
        query = query.strip()
        if not query:
            raise LibraryError("a library search needs some words")
        if top_k < 1:
            raise LibraryError(f"top_k must be at least 1, got {top_k}")
        table = self._table(MOMENTS)
        if table is None or table.count_rows() == 0:
            return []
        vector = np.asarray(self.embedder.embed([query], query=True)[0], dtype=np.float32)
        if TEXT_INDEX in {i.name for i in table.list_indices()}:
            search = table.search(query_type="hybrid").vector(vector).text(query)
        else:  # a writer killed between making the table and its text index: by meaning only
            search = table.search(vector).distance_type("cosine")
        if levels:
            search = search.where(" OR ".join(f"level = '{_quoted(level)}'" for level in levels))
        rows = search.limit(top_k).to_list()
        titles = self._videos_of({row["video_key"] for row in rows})
        hits = []
        for row in rows:
            video = titles.get(row["video_key"])
            hits.append(
                SearchHit(
                    video_key=row["video_key"],
                    memory=video.memory if video else "",
                    video=video.video if video else None,
                    title=video.title if video else "",
                    level=row["level"],
                    node_id=row["node_id"],
                    start_s=float(row["start_s"]),
                    end_s=float(row["end_s"]),
                    text=row["text"],
                    score=float(row.get("_relevance_score", 1.0 - row.get("_distance", 1.0))),
                )
            )
        return hits

    # -- writing ---------------------------------------------------------------------------

    def update(
        self,
        roots: Sequence[str | Path],
        *,
        progress: ProgressCallback | None = None,
        prune: bool = True,
    ) -> UpdateReport:
        """Index every memory under ``roots``: new and changed ones are (re)indexed, those no
        longer there removed, the rest left alone. One writer at a time.

        ``prune=False`` removes nothing: the memories under ``roots`` are added to (or
        updated in) a library that also holds others, as a build with ``--library`` adds the
        memory it has just built without forgetting the rest."""
        from filelock import FileLock, Timeout

        memories = find_memories(roots)
        self.path.mkdir(parents=True, exist_ok=True)
        lock = FileLock(str(self.path / LOCK_FILE))
        try:
            lock.acquire(timeout=0)
        except Timeout:
            raise LibraryError(
                f"{self.path} is being updated by another process; wait for it to finish"
            ) from None
        try:
            return self._update(memories, progress, prune)
        finally:
            lock.release()

    def _update(
        self, memories: list[Path], progress: ProgressCallback | None, prune: bool
    ) -> UpdateReport:
        report = UpdateReport()
        known = {v.key: v for v in self.videos()}
        present = {memory_key(m): m for m in memories}
        for key in sorted(set(known) - set(present) if prune else ()):
            self._remove(key)
            report.removed.append(known[key].memory)
        for done, memory_dir in enumerate(memories, 1):
            key = memory_key(memory_dir)
            try:
                version = memory_version(memory_dir)
                if key in known and known[key].version == version:
                    report.unchanged += 1
                else:
                    report.rows_written += self._index_memory(key, memory_dir, version)
                    (report.updated if key in known else report.added).append(str(memory_dir))
            except (MemoryFormatError, OSError) as exc:
                report.failed.append((str(memory_dir), str(exc)))
                log.warning("not indexed: %s: %s", memory_dir, exc)
            if progress is not None:
                progress(str(memory_dir), done, len(memories))
        moments = self._table(MOMENTS)
        if moments is not None and (report.added or report.updated or report.removed):
            self._refresh_indices(moments)
        return report

    def _index_memory(self, key: str, memory_dir: Path, version: str) -> int:
        memory = open_memory(memory_dir)
        stored = StoredTranscript.for_memory(memory_dir)
        lines = stored.transcript.lines if stored is not None else []
        moments = memory_moments(memory, lines)
        vectors = self._vectors(memory, moments)
        rows = _moment_rows(key, moments, vectors)
        table = self._moments_table(vectors.shape[1] if len(vectors) else self._dimension())
        if table.count_rows(_where_video(key)) == 0:
            table.add(rows)  # a new memory: one append, ten times cheaper than the merge
        else:
            # Its old rows replaced in one commit: updated, inserted and deleted together.
            (
                table.merge_insert("row_id")
                .when_matched_update_all()
                .when_not_matched_insert_all()
                .when_not_matched_by_source_delete(_where_video(key))
                .execute(rows)
            )
        self._record_video(_indexed_video(key, memory_dir, memory, version))
        return len(moments)

    def _remove(self, key: str) -> None:
        moments = self._table(MOMENTS)
        if moments is not None:
            moments.delete(_where_video(key))
        videos = self._table(VIDEOS)
        if videos is not None:
            videos.delete(f"key = '{_quoted(key)}'")

    def _record_video(self, video: IndexedVideo) -> None:
        import pyarrow as pa

        data = pa.Table.from_pylist([video.__dict__], schema=_videos_schema())
        table = self._table(VIDEOS)
        if table is None:
            self._connect().create_table(VIDEOS, data=data)
            return
        table.merge_insert("key").when_matched_update_all().when_not_matched_insert_all().execute(
            data
        )

    def _vectors(self, memory: VideoMemory, moments: Sequence[Moment]) -> np.ndarray:
        """The memory's own node vectors where they are of the library's model, the rest
        embedded now (identical texts once)."""
        stored = memory.embeddings
        reuse = stored is not None and stored.model_name == self.embedder.model_name
        embedded = set(stored.ids) if reuse and stored is not None else set()
        out: list[np.ndarray | None] = []
        missing: dict[str, list[int]] = {}
        for i, moment in enumerate(moments):
            if stored is not None and moment.node_id in embedded:
                out.append(stored.vector(moment.node_id))
            else:
                out.append(None)
                missing.setdefault(moment.text, []).append(i)
        texts = list(missing)
        for batch in _batches(texts, EMBED_BATCH):
            vectors = np.asarray(self.embedder.embed(batch), dtype=np.float32)
            for text, vector in zip(batch, vectors, strict=True):
                for i in missing[text]:
                    out[i] = vector
        filled = [v for v in out if v is not None]
        dimension = filled[0].shape[0] if filled else self._dimension()
        return np.asarray(filled, dtype=np.float32).reshape(len(filled), dimension)

    def _dimension(self) -> int:
        return int(np.asarray(self.embedder.embed(["dimension"])).shape[1])

    def _moments_table(self, dimension: int) -> Any:
        """The moments table, made with its full-text index before any row is in it, so a
        reader never meets rows it cannot search by their words."""
        from lancedb.index import FTS, BTree

        table = self._table(MOMENTS)
        if table is None:
            table = self._connect().create_table(MOMENTS, schema=_moments_schema(dimension))
        indices = {i.name for i in table.list_indices()}
        if TEXT_INDEX not in indices:
            table.create_index("text", config=FTS(), replace=True)
        if KEY_INDEX not in indices:  # what finds a memory's rows to replace or delete
            table.create_index("video_key", config=BTree(), replace=True)
        return table

    def _refresh_indices(self, table: Any) -> None:
        """Full-text index over the texts (built once, then kept up by ``optimize``), and an
        ANN index over the vectors once the library is large enough to need one, trained
        again when it has grown ``RETRAIN_GROWTH`` times; old versions are cleaned up."""
        from lancedb.index import FTS, IvfPq

        indices = {i.name for i in table.list_indices()}
        if TEXT_INDEX not in indices:
            table.create_index("text", config=FTS(), replace=True)
        rows = table.count_rows()
        state = self._state()
        trained = int(state.get("ann_trained_rows", 0))
        grown = trained and rows >= RETRAIN_GROWTH * trained
        if rows >= ANN_FROM_ROWS and (VECTOR_INDEX not in indices or grown):
            # Trained (again) on what the library holds now: one commit replaces the index.
            table.create_index(
                "vector",
                config=IvfPq(distance_type="cosine", num_partitions=_partitions(rows)),
                replace=True,
            )
            state["ann_trained_rows"] = rows
        table.optimize(cleanup_older_than=KEEP_VERSIONS)
        videos = self._table(VIDEOS)
        if videos is not None:
            videos.optimize(cleanup_older_than=KEEP_VERSIONS)
        self._save_state(state)

    def _state(self) -> dict[str, Any]:
        try:
            data = json.loads((self.path / STATE_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _save_state(self, state: Mapping[str, Any]) -> None:
        from videotapestry.files import write_atomic

        write_atomic(self.path / STATE_FILE, json.dumps(dict(state)))


def index_built(
    index: LibraryIndex, memories: Sequence[Path], *, named: Callable[[Path], str] = str
) -> dict[str, Any]:
    """``memories``, just built or given a new version, indexed into ``index`` (the other
    memories it holds left as they are): what was done in brief, ``named`` naming each
    memory, or why it could not be done. Shared by ``build-memory --library`` (after each
    build, and after each version of a followed source) and a served follow job, so both
    keep a library current the same way.

    It never raises for a library that cannot be written now (another process updating it,
    LanceDB missing, a memory that cannot be read): the memory just built stands whatever
    its index does, the report says why, and the next version or ``library index`` catches
    up. ``indexed`` is true when every memory was indexed (or was already, unchanged)."""
    try:
        report = index.update(memories, prune=False)
    except (VideoTapestryError, OSError) as exc:
        return {"indexed": False, "why": str(exc)}
    brief: dict[str, Any] = {
        "indexed": not report.failed,
        "added": [named(Path(m)) for m in report.added],
        "updated": [named(Path(m)) for m in report.updated],
        "unchanged": report.unchanged,
        "failed": [{"memory": named(Path(m)), "why": why} for m, why in report.failed],
    }
    if report.failed:
        brief["why"] = "; ".join(why for _, why in report.failed)
    return brief


def _partitions(rows: int) -> int:
    """IVF partitions for ``rows`` vectors: about the square root, at least 16."""
    return max(16, int(rows**0.5) // 4)


def _video_of(row: Mapping[str, Any]) -> IndexedVideo:
    return IndexedVideo(**{name: row[name] for name in IndexedVideo.__dataclass_fields__})


def _table_names(db: Any) -> set[str]:
    listed = db.list_tables() if hasattr(db, "list_tables") else db.table_names()
    names = getattr(listed, "tables", listed)
    return set(names)


def _batches(items: Sequence[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield list(items[start : start + size])


def _quoted(text: str) -> str:
    return text.replace("'", "''")


def _where_video(key: str) -> str:
    return f"video_key = '{_quoted(key)}'"


def _moments_schema(dimension: int) -> Any:
    import pyarrow as pa

    return pa.schema(
        [
            ("row_id", pa.string()),
            ("video_key", pa.string()),
            ("node_id", pa.string()),
            ("level", pa.string()),
            ("start_s", pa.float64()),
            ("end_s", pa.float64()),
            ("text", pa.string()),
            ("vector", pa.list_(pa.float32(), dimension)),
        ]
    )


def _videos_schema() -> Any:
    import pyarrow as pa

    return pa.schema(
        [
            ("key", pa.string()),
            ("memory", pa.string()),
            ("video", pa.string()),
            ("title", pa.string()),
            ("duration_s", pa.float64()),
            ("summary", pa.string()),
            ("version", pa.string()),
        ]
    )


def _moment_rows(key: str, moments: Sequence[Moment], vectors: np.ndarray) -> Any:
    import pyarrow as pa

    dimension = vectors.shape[1]
    return pa.table(
        {
            "row_id": [f"{key}:{m.node_id}" for m in moments],
            "video_key": [key] * len(moments),
            "node_id": [m.node_id for m in moments],
            "level": [m.level for m in moments],
            "start_s": [float(m.start_s) for m in moments],
            "end_s": [float(m.end_s) for m in moments],
            "text": [m.text for m in moments],
            "vector": pa.FixedSizeListArray.from_arrays(
                pa.array(vectors.astype(np.float32).ravel()), dimension
            ),
        },
        schema=_moments_schema(dimension),
    )


def _built_from(memory_dir: Path) -> str | None:
    """The video a memory was built from, as its build report names it (an imported memory
    has none), or a followed memory's recording (its versions are built from it); None when
    unknown or no longer there."""
    try:
        state = live_state(memory_dir)
    except VideoTapestryError:
        state = None
    if state is not None:
        recording = recording_path(memory_dir, state)
        return str(recording) if recording.is_file() else None
    try:
        named = json.loads((memory_dir / BUILD_REPORT).read_text(encoding="utf-8")).get("video")
    except (OSError, ValueError, AttributeError):
        return None
    return str(named) if isinstance(named, str) and Path(named).is_file() else None


def _indexed_video(key: str, memory_dir: Path, memory: VideoMemory, version: str) -> IndexedVideo:
    root = memory.root
    return IndexedVideo(
        key=key,
        memory=str(memory_dir),
        video=_built_from(memory_dir),
        title=root.title or memory_dir.name,
        duration_s=float(memory.duration),
        summary=root.description,
        version=version,
    )
