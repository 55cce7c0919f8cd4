"""Localization hints over a memory: where in the video might the question's anchors be?

The Overview agent uses these results only to choose where to look (SPEC §3, paper B.3.1);
they are never evidence. Searches:

* ``find_entities`` – Entity nodes by name: exact name or unified canonical/variant name
  first; only if nothing matches, whole-word substrings of names and variants.
* ``find_ocr_text`` – OCRText nodes: exact text (ignoring case, Unicode width and spacing),
  then substring, then substring with OCR's usual confusions folded (``R00M`` is ``ROOM``).
* ``find_text`` – whole-word phrase in any subgraph node's label or description.
* ``semantic_search`` – cosine similarity over Entity/Event/OCRText node embeddings.
* ``at_time`` – nodes overlapping a time span.
* ``locate`` – the multi-anchor locator: search each atomic anchor, then return
  ``candidate_windows`` (joint hypotheses holding one grounded match per anchor, temporally
  compact, best first) and ``unresolved_anchors``. Windows are only formed when every anchor
  has a match, because a window missing an anchor is not a complete hypothesis.

Every hit names its node, kind, MacroEvent, SuperEvent and time range.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from videotapestry.embeddings import Embedder
from videotapestry.memory.embedding_index import ensure_embeddings, top_k
from videotapestry.memory.locator_hits import (
    LEXICAL_SCORES,
    CandidateWindow,
    LocatorHit,
    MatchKind,
    MultiAnchorResult,
)
from videotapestry.memory.multi_anchor import candidate_windows, split_anchors
from videotapestry.memory.types import (
    NODE_KINDS,
    SUBGRAPH_KINDS,
    AnyNode,
    node_description,
    node_label,
)
from videotapestry.memory.video_memory import VideoMemory

#: Characters OCR reads for one another (after casefolding), mapped to one of each group.
_OCR_CONFUSIONS = str.maketrans({"0": "o", "1": "l", "i": "l", "|": "l"})


def fold(text: str) -> str:
    """Case-, width- and spacing-insensitive form used by every lexical comparison."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


_WORD = re.compile(r"\w")


def _phrase(text: str) -> re.Pattern[str]:
    """Whole-word occurrences of ``text`` (a boundary is required only at word characters)."""
    folded = fold(text)
    head = r"(?<!\w)" if _WORD.match(folded[:1]) else ""
    return re.compile(head + _phrase_tail(folded).pattern)


def _phrase_tail(text: str) -> re.Pattern[str]:
    """Like ``_phrase`` without the leading boundary, so the regex can skip by its literal."""
    folded = fold(text)
    return re.compile(re.escape(folded) + (r"(?!\w)" if _WORD.match(folded[-1:]) else ""))


@dataclass(frozen=True)
class _Entry:
    """A node with what every search compares and every hit reports, computed once."""

    node: AnyNode
    label: str
    description: str
    macro_id: str | None
    super_id: str | None
    folded_label: str
    folded_text: str


class MemoryLocator:
    """Search indexes over one memory, built once; every query is read-only.

    With an ``embedder``, node vectors come from the memory when they were made by the same
    model, otherwise they are computed here (see ``ensure_embeddings``). Without one,
    ``semantic_search`` is unavailable and ``locate`` uses lexical matches only.
    ``min_semantic_score`` is the cosine below which a semantic match does not ground an
    anchor; ``compactness_s`` is the span at which a window's score has dropped to 1/e.
    """

    def __init__(
        self,
        memory: VideoMemory,
        embedder: Embedder | None = None,
        *,
        min_semantic_score: float = 0.35,
        compactness_s: float = 600.0,
    ) -> None:
        if embedder is not None:
            memory = ensure_embeddings(memory, embedder)
        self.memory = memory
        self.embedder = embedder
        self.min_semantic_score = min_semantic_score
        self.compactness_s = compactness_s
        nodes = memory.nodes([k for k in NODE_KINDS if k != "RootEvent"])
        self._entries = [self._entry(n) for n in nodes]
        self._starts = np.array([e.node.time_range.start for e in self._entries], dtype=np.float64)
        self._ends = np.array([e.node.time_range.end for e in self._entries], dtype=np.float64)
        kinds = [e.node.kind for e in self._entries]
        self._kinds = np.array(kinds)
        self._by_id = {e.node.id: i for i, e in enumerate(self._entries)}
        self._subgraph_rows = [i for i, kind in enumerate(kinds) if kind in SUBGRAPH_KINDS]
        self._entity_rows = [i for i in self._subgraph_rows if kinds[i] == "Entity"]
        self._ocr_rows = [i for i in self._subgraph_rows if kinds[i] == "OCRText"]
        self._ocr_compact = {
            i: self._entries[i].folded_label.replace(" ", "") for i in self._ocr_rows
        }
        # One newline-joined string of all subgraph texts: a phrase search is then a single
        # regex scan instead of thousands (folded texts contain no newlines).
        self._text_blob = "\n".join(self._entries[i].folded_text for i in self._subgraph_rows)
        lengths = [len(self._entries[i].folded_text) + 1 for i in self._subgraph_rows]
        self._text_offsets = np.cumsum([0, *lengths[:-1]]) if lengths else np.zeros(0)
        self._entity_by_name: dict[str, list[int]] = {}
        for i in self._entity_rows:
            self._entity_by_name.setdefault(self._entries[i].folded_label, []).append(i)
        self._groups = [
            tuple(dict.fromkeys(fold(n) for n in (g.canonical_name, *g.variants)))
            for g in memory.unification
        ]
        self._vectors: np.ndarray | None = None
        self._vector_rows = np.zeros(0, dtype=np.int64)
        if memory.embeddings is not None and embedder is not None:
            embeddings = memory.embeddings
            self._vectors = embeddings.vectors
            self._vector_rows = np.array(
                [self._by_id[node_id] for node_id in embeddings.ids], dtype=np.int64
            )
            self._vector_kinds = self._kinds[self._vector_rows]

    def _entry(self, node: AnyNode) -> _Entry:
        label, description = node_label(node), node_description(node)
        return _Entry(
            node=node,
            label=label,
            description=description,
            macro_id=self.memory.macro_id_of(node.id),
            super_id=self.memory.super_id_of(node.id),
            folded_label=fold(label),
            folded_text=fold(f"{label} {description}"),
        )

    def _hit(self, row: int, match: MatchKind, score: float | None = None) -> LocatorHit:
        entry = self._entries[row]
        # Built from already-validated memory data, so pydantic's validation is skipped.
        return LocatorHit.model_construct(
            node_id=entry.node.id,
            kind=entry.node.kind,
            label=entry.label,
            description=entry.description,
            time_range=entry.node.time_range,
            macro_id=entry.macro_id,
            super_id=entry.super_id,
            match=match,
            score=LEXICAL_SCORES[match] if score is None else round(float(score), 6),
        )

    def _ranked(self, scored: dict[int, MatchKind], limit: int | None) -> list[LocatorHit]:
        def key(row: int) -> tuple[float, float, str]:
            entry = self._entries[row]
            return (-LEXICAL_SCORES[scored[row]], entry.node.time_range.start, entry.node.id)

        rows = sorted(scored, key=key)
        return [self._hit(row, scored[row]) for row in (rows if limit is None else rows[:limit])]

    # ------------------------------------------------------------------ searches

    def find_entities(self, name: str, *, limit: int | None = 20) -> list[LocatorHit]:
        """Entity nodes named ``name`` or a unified variant of it; else whole-word substrings."""
        query = fold(name)
        if not query:
            return []
        found: dict[int, MatchKind] = {}
        for row in self._entity_by_name.get(query, ()):
            found[row] = "exact"
        for group in self._groups:
            if query in group:
                for alias in group:
                    for row in self._entity_by_name.get(alias, ()):
                        found.setdefault(row, "alias")
        if not found:
            pattern = _phrase(query)
            names = {
                alias
                for group in self._groups
                if any(pattern.search(n) for n in group)
                for alias in group
            }
            for folded, rows in self._entity_by_name.items():
                if folded in names or pattern.search(folded):
                    for row in rows:
                        found[row] = "substring"
        return self._ranked(found, limit)

    def find_ocr_text(self, text: str, *, limit: int | None = 20) -> list[LocatorHit]:
        """OCRText nodes whose text equals ``text`` (case and spacing ignored), else contains
        it, else contains it once OCR's confusions (``0``/``o``, ``1``/``l``/``i``) are folded."""
        query = fold(text)
        if not query:
            return []
        compact = query.replace(" ", "")
        found: dict[int, MatchKind] = {}
        for row in self._ocr_rows:
            if self._entries[row].folded_label == query or self._ocr_compact[row] == compact:
                found[row] = "ocr_exact"
        if not found:
            for row in self._ocr_rows:
                if query in self._entries[row].folded_label or compact in self._ocr_compact[row]:
                    found[row] = "ocr_substring"
        if not found:  # a sign read as "R00M72" still names room 72
            confused = compact.translate(_OCR_CONFUSIONS)
            for row in self._ocr_rows:
                if confused in self._ocr_compact[row].translate(_OCR_CONFUSIONS):
                    found[row] = "ocr_confusable"
        return self._ranked(found, limit)

    def find_text(self, phrase: str, *, limit: int | None = 20) -> list[LocatorHit]:
        """Subgraph nodes whose label or description contains ``phrase`` as whole words."""
        if not fold(phrase):
            return []
        blob = self._text_blob
        # The literal-first pattern lets the regex engine jump between occurrences; the
        # word boundary before the phrase is checked here.
        check_head = bool(_WORD.match(fold(phrase)[:1]))
        starts = [
            m.start()
            for m in _phrase_tail(phrase).finditer(blob)
            if not check_head or m.start() == 0 or not _WORD.match(blob, m.start() - 1)
        ]
        positions = np.searchsorted(self._text_offsets, starts, side="right") - 1
        found: dict[int, MatchKind] = {
            self._subgraph_rows[int(i)]: "text" for i in np.unique(positions)
        }
        return self._ranked(found, limit)

    def semantic_search(
        self,
        query: str,
        *,
        kinds: Iterable[str] | None = None,
        limit: int = 10,
        min_score: float | None = None,
    ) -> list[LocatorHit]:
        """Entity/Event/OCRText nodes by cosine similarity to ``query``, best first."""
        if self.embedder is None or self._vectors is None:
            raise ValueError("semantic search needs a MemoryLocator built with an embedder")
        vector = self.embedder.embed([query], query=True)[0]
        return self.search_vector(vector, kinds=kinds, limit=limit, min_score=min_score)

    def search_vector(
        self,
        vector: np.ndarray,
        *,
        kinds: Iterable[str] | None = None,
        limit: int = 10,
        min_score: float | None = None,
    ) -> list[LocatorHit]:
        """``semantic_search`` for a query the caller already embedded (same model)."""
        if self._vectors is None:
            raise ValueError("semantic search needs a MemoryLocator built with an embedder")
        scores = self._vectors @ np.asarray(vector, dtype=np.float32)
        if kinds is not None:
            wanted = set(kinds)
            scores = np.where(np.isin(self._vector_kinds, list(wanted)), scores, -np.inf)
        hits = []
        for index in top_k(scores, limit):
            score = float(scores[index])
            if not math.isfinite(score) or (min_score is not None and score < min_score):
                break
            hits.append(self._hit(int(self._vector_rows[index]), "semantic", score))
        return hits

    def at_time(
        self,
        start: float,
        end: float | None = None,
        *,
        kinds: Iterable[str] | None = None,
        limit: int | None = None,
    ) -> list[LocatorHit]:
        """Nodes (SuperEvent down to OCRText) whose time range overlaps [start, end]."""
        end = start if end is None else end
        if end < start:
            raise ValueError(f"at_time: end {end} is before start {start}")
        mask = (self._starts <= end) & (self._ends >= start)
        if kinds is not None:
            mask &= np.isin(self._kinds, list(kinds))
        rows = np.flatnonzero(mask)
        hits = [self._hit(int(row), "time") for row in rows]
        return hits if limit is None else hits[:limit]

    # ------------------------------------------------------------------ multi-anchor

    def anchor_hits(
        self, anchor: str, *, max_lexical: int = 200, max_semantic: int = 10
    ) -> list[LocatorHit]:
        """Grounded matches of one anchor: lexical first; semantic only if nothing lexical.

        Semantic matches must reach ``min_semantic_score`` to ground an anchor.
        """
        best: dict[str, LocatorHit] = {}
        for hit in (
            *self.find_entities(anchor, limit=None),
            *self.find_ocr_text(anchor, limit=None),
            *self.find_text(anchor, limit=None),
        ):
            if hit.node_id not in best or hit.score > best[hit.node_id].score:
                best[hit.node_id] = hit
        hits = sorted(best.values(), key=lambda h: (-h.score, h.time_range.start, h.node_id))
        if hits:
            return hits[:max_lexical]
        if self.embedder is None or self._vectors is None:
            return []
        return self.semantic_search(anchor, limit=max_semantic, min_score=self.min_semantic_score)

    def locate(
        self,
        anchors: Sequence[str] | str,
        *,
        max_windows: int = 5,
        max_overlap: float = 0.5,
    ) -> MultiAnchorResult:
        """Search every anchor and return compact joint windows (see the module docstring).

        A string is split with ``split_anchors``; a sequence is used as given. Returned windows
        compete: one overlapping a better window by more than ``max_overlap`` (intersection
        over union of their time ranges) is left out.
        """
        names = split_anchors(anchors) if isinstance(anchors, str) else list(anchors)
        names = list(dict.fromkeys(a.strip() for a in names if a and a.strip()))
        hits = {a: tuple(self.anchor_hits(a)) for a in names}
        unresolved = tuple(a for a in names if not hits[a])
        windows: list[CandidateWindow] = []
        if names and not unresolved:
            windows = candidate_windows(
                hits,
                compactness_s=self.compactness_s,
                limit=max_windows,
                max_overlap=max_overlap,
            )
        return MultiAnchorResult(
            anchors=tuple(names),
            candidate_windows=tuple(windows),
            unresolved_anchors=unresolved,
            anchor_hits=hits,
        )
