"""The shell every HTML view shares: one self-contained page, or a fragment for notebooks.

Pages are opened from disk, mailed around and embedded in notebooks, so they carry their
own CSS, load nothing from the network, and scope every rule under ``.vt`` so a fragment
never restyles the notebook around it. Everything shown comes from memories, videos and
models and is escaped with ``esc`` (quotes included, so it is safe inside attributes too).
"""

from __future__ import annotations

import html

BASE_CSS = """
.vt { font: 14px/1.45 system-ui, sans-serif; color: #222; max-width: 75em; }
.vt h1 { font-size: 1.4em; margin-bottom: .2em; }
.vt h2 { font-size: 1.15em; margin: 1.2em 0 .3em; border-bottom: 1px solid #ddd; }
.vt h3 { font-size: 1em; margin: .8em 0 .2em; }
.vt .muted { color: #666; }
.vt details { margin: .25em 0 .25em 1.2em; }
.vt summary { cursor: pointer; }
.vt code { font: 12px ui-monospace, monospace; background: #f2f2f2; padding: 0 .25em; }
.vt pre { font: 12px/1.4 ui-monospace, monospace; white-space: pre-wrap; margin: .2em 0; }
.vt table { border-collapse: collapse; margin: .3em 0 .6em 1.2em; }
.vt td, .vt th { border-bottom: 1px solid #ddd; padding: .15em .6em; text-align: left; }
.vt td { vertical-align: top; }
.vt .kind { font-size: 11px; color: #555; text-transform: uppercase; }
"""


def esc(value: object) -> str:
    """Text as HTML, safe both between tags and inside quoted attributes."""
    return html.escape(str(value), quote=True)


def html_page(title: str, body: str, *, css: str = "", script: str = "") -> str:
    """A standalone page: ``body`` inside ``<div class="vt">``, styles (and a script) inline."""
    head_script = f"<script>{script}</script>" if script else ""
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{esc(title)}</title>{head_script}",
            f"<style>body {{ margin: 2em; }}{BASE_CSS}{css}</style></head><body>",
            f'<div class="vt">{body}</div>',
            "</body></html>",
        ]
    )


def html_fragment(body: str, *, css: str = "") -> str:
    """The same content for a notebook cell: scoped styles, no script, no document."""
    return f'<div class="vt"><style>{BASE_CSS}{css}</style>{body}</div>'
