"""Human views of a memory: a text tree, a JSON summary and a standalone HTML page.

Researchers check an imported or built memory before spending model calls on it: are the
counts plausible, are times absolute, does every MacroEvent have its subgraph? The JSON
summary is the machine-readable form (counts per kind; every node's id, kind, label, time
range and parent). The HTML page needs no network or scripts and escapes all memory text,
which comes from models and videos and must never be interpreted as markup.
"""

from __future__ import annotations

import html
import json
from typing import Any

from videotapestry.memory.schema import NODE_KINDS, AnyNode, EntityNode, VideoMemory, node_label
from videotapestry.memory.serialize import clock_range, node_line, relation_line
from videotapestry.views.page import html_page


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


_CSS = """
.vt ul.rel { margin: .2em 0 .6em 1.2em; font: 12px ui-monospace, monospace; }
"""


def memory_html(memory: VideoMemory, *, title: str | None = None) -> str:
    """A standalone, browsable page: SuperEvents → MacroEvents → subgraph tables."""
    e = html.escape
    root = memory.root
    heading = title or root.title or root.id
    counts = ", ".join(f"{v} {k}" for k, v in memory.counts().items() if k in NODE_KINDS and v)
    parts = [
        f"<h1>{e(heading)}</h1>",
        f'<p class="muted"><code>{e(root.id)}</code> [{e(clock_range(root.time_range))}] '
        f"· {e(counts)}</p>",
        f"<p>{e(root.description)}</p>",
    ]
    if memory.manifest is not None:
        manifest = json.dumps(memory.manifest.model_dump(mode="json"), indent=1)
        parts.append(f"<details><summary>Manifest</summary><pre>{e(manifest)}</pre></details>")
    if memory.unification:
        items = "".join(
            f"<li>{e(g.canonical_name)} ← {e(', '.join(g.variants))}</li>"
            for g in memory.unification
        )
        parts.append(f"<details><summary>Entity unification</summary><ul>{items}</ul></details>")
    super_ids = [s.id for s in memory.super_events()]
    level_relations = memory.relations(super_ids)
    if level_relations:
        parts.append(_relations_html(level_relations, "SuperEvent relations"))
    for super_event in memory.super_events():
        parts.append(
            f"<details open><summary>{_summary_html(super_event)}</summary>"
            f"<p>{e(super_event.description)}</p>"
        )
        for macro in memory.macro_events(super_event.id):
            subgraph = memory.subgraph(macro.id)
            parts.append(
                f"<details><summary>{_summary_html(macro)} "
                f'<span class="muted">({len(subgraph.nodes)} nodes)</span></summary>'
                f"<p>{e(macro.summary)}</p>"
            )
            if subgraph.nodes:
                rows = "".join(
                    f'<tr><td><code>{e(n.id)}</code></td><td class="kind">{e(n.kind)}</td>'
                    f"<td>{e(clock_range(n.time_range))}</td><td>{e(node_line(n))}</td></tr>"
                    for n in subgraph.nodes
                )
                parts.append(
                    "<table><tr><th>id</th><th>kind</th><th>time</th><th>text</th></tr>"
                    f"{rows}</table>"
                )
            if subgraph.relations:
                parts.append(_relations_html(subgraph.relations, None))
            parts.append("</details>")
        parts.append("</details>")
    return html_page(heading, "\n".join(parts), css=_CSS)


def _summary_html(node: AnyNode) -> str:
    e = html.escape
    return (
        f"<code>{e(node.id)}</code> [{e(clock_range(node.time_range))}] "
        f"<b>{e(node_label(node))}</b>"
    )


def _relations_html(relations: Any, caption: str | None) -> str:
    items = "".join(f"<li>{html.escape(relation_line(r))}</li>" for r in relations)
    block = f'<ul class="rel">{items}</ul>'
    if caption:
        return f"<details><summary>{html.escape(caption)}</summary>{block}</details>"
    return block
