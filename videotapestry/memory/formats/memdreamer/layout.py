"""Where the files of a MemDreamer memory are, in every variant of its layout (SPEC §3).

MemDreamer's construction scripts and its released memories put the same documents in
different places::

    scripts                                       release (one folder per video under a root)
    phase3/hierarchical_graph_final.json          phase4/hierarchical_graph_final.json
    phase3/intermediate/step2p5_entity_unification.json   (the same under phase4/)
    phase2/episode_X/step5_subgraph.json          phase2_topdown/episode_X/episode_X/step5_...
                                                  .../episode_X/features/<local id>/best_frame.jpg
                                                  embeddings.json

Reading accepts every mix of them seen in the wild (a non-final ``hierarchical_graph.json``
when the final one is missing, flat or nested episode folders, either phase folder name);
writing picks one variant, a ``MemDreamerLayout``. Nothing here opens a file's content: this
module only says where things are.

Only what lies inside the memory's directory is found: a memory is often downloaded or
shared, and a symlink in it (or a ``keyframe_path`` naming ``../`` or an absolute path) must
not make an import read, or a later step copy, a file from elsewhere on the machine. A
graph or phase2 folder that leaves the directory is an error; an episode, the optional
documents and a keyframe that leave it are dropped with a warning.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from videotapestry.errors import MemoryFormatError

logger = logging.getLogger(__name__)

#: Names of the phase-3 hierarchy file, best first (the second is an unfinished draft).
GRAPH_NAMES = ("hierarchical_graph_final.json", "hierarchical_graph.json")
UNIFICATION_NAME = Path("intermediate") / "step2p5_entity_unification.json"
SUBGRAPH_FILE = "step5_subgraph.json"
EMBEDDINGS_FILE = "embeddings.json"
FEATURES_DIR = "features"
KEYFRAME_FILE = "best_frame.jpg"


@dataclass(frozen=True)
class MemDreamerLayout:
    """One variant of the layout, as a writer lays a memory out.

    ``features_as_list`` is the one convention that differs in the documents themselves: the
    released reader wants an Entity's ``visual_grounding.distinctive_features`` as a list of
    strings, where the scripts' memories may hold one text.
    """

    phase3: str
    phase2: str
    episode_digits: int
    nested_episodes: bool
    features_as_list: bool

    @property
    def graph_file(self) -> Path:
        return Path(self.phase3) / GRAPH_NAMES[0]

    @property
    def unification_file(self) -> Path:
        return Path(self.phase3) / UNIFICATION_NAME

    def episode_dir(self, slot: int) -> Path:
        name = f"episode_{slot:0{self.episode_digits}d}"
        folder = Path(self.phase2) / name
        return folder / name if self.nested_episodes else folder

    def subgraph_file(self, slot: int) -> Path:
        return self.episode_dir(slot) / SUBGRAPH_FILE

    def keyframe_file(self, slot: int, local_id: str) -> Path:
        return self.episode_dir(slot) / FEATURES_DIR / local_id / KEYFRAME_FILE


#: The layout of MemDreamer's construction scripts; ``export_memdreamer`` writes it by default.
SCRIPTS_LAYOUT = MemDreamerLayout(
    phase3="phase3",
    phase2="phase2",
    episode_digits=3,
    nested_episodes=False,
    features_as_list=False,
)
#: The layout of MemDreamer's released memories, the one its released reader loads.
RELEASED_LAYOUT = MemDreamerLayout(
    phase3="phase4",
    phase2="phase2_topdown",
    episode_digits=4,
    nested_episodes=True,
    features_as_list=True,
)
#: Phase-3 and subgraph folder names, in order of preference when a memory has both.
PHASE3_DIRS = (SCRIPTS_LAYOUT.phase3, RELEASED_LAYOUT.phase3)
PHASE2_DIRS = (SCRIPTS_LAYOUT.phase2, RELEASED_LAYOUT.phase2)
#: Files or folders that mark a directory as one video's MemDreamer memory.
_MARKERS = (*PHASE3_DIRS, *PHASE2_DIRS, EMBEDDINGS_FILE)


@dataclass(frozen=True)
class MemDreamerFiles:
    """Where one video's files are, whichever variant of the layout the memory uses."""

    root: Path
    graph_file: Path
    phase2: Path
    unification_file: Path | None
    embeddings_file: Path | None


def inside(root: Path, path: Path) -> bool:
    """Whether ``path`` (links followed, ``..`` resolved) lies within ``root``."""
    return path.resolve().is_relative_to(root.resolve())


def _outside(root: Path, path: Path | None, what: str) -> bool:
    """Warn about (and say so) a ``path`` that leaves ``root``; None is not outside."""
    if path is None or inside(root, path):
        return False
    logger.warning("%s: %s %s leads outside the memory directory; not read", root, what, path)
    return True


def _graph_files(root: Path) -> list[Path]:
    """Existing graph files, best first: a final one in either phase-3 folder before a draft."""
    return [
        root / folder / name
        for name in GRAPH_NAMES
        for folder in PHASE3_DIRS
        if (root / folder / name).is_file()
    ]


def is_memdreamer_memory(path: str | Path) -> bool:
    return bool(_graph_files(Path(path)))


def find_memdreamer_files(source: str | Path) -> MemDreamerFiles:
    """Find the files of one video's memory; errors name what is missing and where."""
    root = Path(source)
    if not root.is_dir():
        raise MemoryFormatError(f"MemDreamer memory directory {root} does not exist")
    graphs = _graph_files(root)
    if not graphs:
        expected = " or ".join(f"{folder}/{GRAPH_NAMES[0]}" for folder in PHASE3_DIRS)
        raise MemoryFormatError(
            f"{root} is not a MemDreamer memory: neither {expected} (nor a non-final "
            f"{GRAPH_NAMES[1]}) exists"
        )
    graph_file = graphs[0]
    for needed in (graph_file, *(root / name for name in PHASE2_DIRS if (root / name).exists())):
        if not inside(root, needed):
            raise MemoryFormatError(
                f"{needed} is a link that leads outside the memory directory {root}; "
                "an import reads nothing outside it"
            )
    if len(graphs) > 1 and graphs[1].name == graph_file.name:
        logger.warning("%s and %s both exist; reading %s", graph_file, graphs[1], graph_file)
    folders = [root / name for name in PHASE2_DIRS if (root / name).is_dir()]
    with_episodes = [f for f in folders if any(f.glob("episode_*"))]
    if len(with_episodes) > 1:
        first, second = with_episodes[:2]
        logger.warning("%s and %s both hold episodes; reading %s", first, second, first)
    if not folders:
        raise MemoryFormatError(
            f"{root}: the phase2 folder is missing (expected {' or '.join(PHASE2_DIRS)}/"
            f"episode_*/{SUBGRAPH_FILE} with the MacroEvent subgraphs)"
        )
    # Beside the graph that is read, else in the other phase-3 folder.
    unifications = [
        d / UNIFICATION_NAME for d in (graph_file.parent, *(root / n for n in PHASE3_DIRS))
    ]
    unification = next((f for f in unifications if f.is_file()), None)
    if _outside(root, unification, "the unification file"):
        unification = None
    embeddings = root / EMBEDDINGS_FILE
    found = embeddings.is_file() and not _outside(root, embeddings, "the embeddings file")
    return MemDreamerFiles(
        root=root,
        graph_file=graph_file,
        phase2=(with_episodes or folders)[0],
        unification_file=unification,
        embeddings_file=embeddings if found else None,
    )


def memdreamer_videos(root: str | Path) -> dict[str, Path]:
    """The per-video folders of a release root (``<root>/<video_key>/``), by video key.

    A folder counts when it holds any part of the layout (a phase folder or embeddings.json),
    so a video whose memory is incomplete is reported by the import instead of ignored.
    """
    root = Path(root)
    if not root.is_dir():
        return {}
    return {
        child.name: child
        for child in sorted(root.iterdir())
        if child.is_dir()
        and any((child / marker).exists() for marker in _MARKERS)
        and not _outside(root, child, "the video folder")
    }


def subgraph_files(phase2: Path, root: Path) -> list[tuple[Path, Path]]:
    """(episode folder, its subgraph file) for every episode, flat or nested one level, that
    lies inside ``root``."""
    files = []
    for episode in sorted(p for p in phase2.glob("episode_*") if p.is_dir()):
        flat, nested = episode / SUBGRAPH_FILE, episode / episode.name / SUBGRAPH_FILE
        if _outside(root, episode, "the episode") or _outside(
            root, flat if flat.is_file() else nested, "the subgraph"
        ):
            continue
        if flat.is_file():
            files.append((episode, flat))
        elif nested.is_file():
            files.append((episode, nested))
        else:
            logger.warning("%s holds no %s; skipped", episode, SUBGRAPH_FILE)
    return files


def keyframe_on_disk(episode: Path, local_ids: tuple[str, ...], root: Path) -> Path | None:
    """An Entity's ``best_frame.jpg`` in its episode, under any of its local ids, inside
    ``root``.

    The release keeps it in ``episode_X/episode_X/features/<local_id>/``; a flat
    ``episode_X/features/`` is looked in too.
    """
    for folder in (episode / episode.name, episode):
        for local in local_ids:
            candidate = folder / FEATURES_DIR / local / KEYFRAME_FILE
            if candidate.is_file() and not _outside(root, candidate, "the keyframe"):
                return candidate
    return None
