"""A memory as one standalone HTML page: SuperEvents → MacroEvents → subgraph tables.

The page needs no network or scripts and escapes all memory text, which comes from models
and videos and must never be interpreted as markup.
"""

from __future__ import annotations

import html
import json
from typing import Any

from videotapestry.memory.prompt_text import clock_range, node_line, relation_line
from videotapestry.memory.types import NODE_KINDS, AnyNode, node_label
from videotapestry.memory.video_memory import VideoMemory
from videotapestry.views.page import html_page

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
