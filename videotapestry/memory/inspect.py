"""Human views of a memory in text: an indented tree and a JSON summary.

Researchers check an imported or built memory before spending model calls on it: are the
counts plausible, are times absolute, does every MacroEvent have its subgraph? The JSON
summary is the machine-readable form (counts per kind; every node's id, kind, label, time
range and parent). The HTML page is ``videotapestry.views.memory_page``.
"""

from __future__ import annotations

from typing import Any

from videotapestry.memory.prompt_text import clock_range
from videotapestry.memory.types import AnyNode, EntityNode, node_label
from videotapestry.memory.video_memory import VideoMemory


def memory_tree(memory: VideoMemory, *, max_depth: int | None = None) -> str:
    """An indented tree, root first; ``max_depth`` 1 shows SuperEvents, 2 adds MacroEvents."""
    lines: list[str] = [_tree_label(memory.root)]

    def walk(node_id: str, prefix: str, depth: int) -> None:
        if max_depth is not None and depth > max_depth:
            return
        children = memory.child_ids(node_id)
        for index, child_id in enumerate(children):
            last = index == len(children) - 1
            lines.append(f"{prefix}{'└─ ' if last else '├─ '}{_tree_label(memory.node(child_id))}")
            walk(child_id, prefix + ("   " if last else "│  "), depth + 1)

    walk(memory.root.id, "", 1)
    return "\n".join(lines)


def _tree_label(node: AnyNode) -> str:
    return f"{node.id} [{clock_range(node.time_range)}] {node.kind}: {node_label(node)}".rstrip()


def memory_summary(memory: VideoMemory) -> dict[str, Any]:
    """JSON-ready summary: counts per kind, manifest, embeddings, and every node in brief
    (with an Entity's keyframe path when it has one, to check an import found the images)."""
    embeddings = memory.embeddings
    return {
        "root_id": memory.root.id,
        "title": memory.root.title,
        "duration_s": memory.duration,
        "counts": memory.counts(),
        "manifest": memory.manifest.model_dump(mode="json") if memory.manifest else None,
        "embeddings": (
            {"model": embeddings.model_name, "count": len(embeddings), "dim": embeddings.dimension}
            if embeddings is not None
            else None
        ),
        "unification": [g.model_dump(mode="json") for g in memory.unification],
        "nodes": [_node_summary(node) for node in _tree_order(memory)],
    }


def _node_summary(node: AnyNode) -> dict[str, Any]:
    summary: dict[str, Any] = {
        "id": node.id,
        "kind": node.kind,
        "label": node_label(node),
        "time_range": [node.time_range.start, node.time_range.end],
        "parent": node.parent_id,
    }
    if isinstance(node, EntityNode) and node.keyframe_path is not None:
        summary["keyframe_path"] = node.keyframe_path
    return summary


def _tree_order(memory: VideoMemory) -> list[AnyNode]:
    ordered: list[AnyNode] = []

    def walk(node_id: str) -> None:
        ordered.append(memory.node(node_id))
        for child_id in memory.child_ids(node_id):
            walk(child_id)

    walk(memory.root.id)
    return ordered
