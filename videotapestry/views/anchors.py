"""The ids of a question page's linkable parts, so links and their targets agree.

A citation links to its marks on the timeline and to the thumbnails of the frames it cites,
and each of those links back; both ends are written by different sections, so their ids are
made in one place. A notebook shows several results in one document, and a link there jumps
to the first element with its id, so a fragment's ids carry a prefix of their own
(``scoped``); a standalone page holds one question and keeps them short (``vt-cite-2``).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass


@dataclass(frozen=True)
class Anchors:
    """Id makers for one question's page; numbers are 1-based, positions 0-based."""

    prefix: str = "vt"

    @classmethod
    def scoped(cls, *keys: str) -> Anchors:
        """Ids of their own for one result among others on a notebook's page."""
        digest = hashlib.sha256("\x1f".join(keys).encode("utf-8")).hexdigest()[:8]
        return cls(f"vt-{digest}")

    def level(self, level: str) -> str:
        return f"{self.prefix}-level-{level}"

    def citations(self) -> str:
        return f"{self.prefix}-citations"

    def claim(self, number: int) -> str:
        """A citation's entry in the Citations section."""
        return f"{self.prefix}-claim-{number}"

    def source(self, number: int, source: int) -> str:
        """One source of a citation, in its entry."""
        return f"{self.prefix}-src-{number}-{source}"

    def cite(self, number: int) -> str:
        """A citation's row in the timeline's cited lane."""
        return f"{self.prefix}-cite-{number}"

    def mark(self, number: int, source: int) -> str:
        """One source's mark in that row."""
        return f"{self.prefix}-cite-{number}-{source}"

    def figure(self, level: int, observation: int, image: int) -> str:
        """A thumbnail of what a level saw, by its place in the trace."""
        return f"{self.prefix}-fig-{level}-{observation}-{image}"

    def frame(self, number: int, source: int) -> str:
        """A cited frame pictured in the Citations section (no level's thumbnail shows it)."""
        return f"{self.prefix}-frame-{number}-{source}"
