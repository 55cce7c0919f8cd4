"""Draw one query's evidence selection: relevance, pick scores, declines and the chosen K*.

Matplotlib is an optional extra (``videotapestry[plot]``) and is imported only when a plot is
asked for. The figure is built without pyplot, so no global figure state is touched; in a
notebook the returned ``Figure`` displays itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from videotapestry.errors import OptionalDependencyError
from videotapestry.retrieval.selection import SelectionResult

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def plot_selection(result: SelectionResult, *, title: str | None = None) -> Figure:
    """Three panels: clip relevance over time (chosen clips highlighted); relevance of each
    pick next to its pick score m_k; raw and normalized declines with K* and [k_min, k_max]."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise OptionalDependencyError(
            "plotting a PACE-Mem selection needs matplotlib; install it with "
            "pip install 'videotapestry[plot]'"
        ) from None

    figure = Figure(figsize=(9, 8), layout="constrained")
    timeline, picks, declines = figure.subplots(3, 1)
    figure.suptitle(title or f"{result.method}: K* = {result.k_star} of {len(result.clip_ids)}")
    _draw_timeline(timeline, result)
    _draw_picks(picks, result)
    _draw_declines(declines, result)
    return figure


def _draw_timeline(ax: Any, result: SelectionResult) -> None:
    centers = (result.clip_starts + result.clip_ends) / 2
    widths = np.maximum(result.clip_ends - result.clip_starts, 1e-3) * 0.9
    chosen = np.zeros(len(result.clip_ids), dtype=bool)
    chosen[result.selected] = True
    colors = np.where(chosen, "tab:blue", "lightgray")
    ax.bar(centers, result.relevance, width=widths, color=colors)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("clip relevance")
    ax.set_title("relevance by clip (chosen in blue)")


def _draw_picks(ax: Any, result: SelectionResult) -> None:
    steps = np.arange(1, len(result.order) + 1)
    ax.plot(steps, result.relevance[result.order], "o-", label="relevance of pick")
    ax.plot(steps, result.order_scores, "s-", label="pick score m_k")
    _mark_k_star(ax, result)
    ax.set_xlabel("pick k")
    ax.set_ylabel("score")
    ax.legend(loc="best", fontsize="small")


def _draw_declines(ax: Any, result: SelectionResult) -> None:
    steps = np.arange(1, len(result.declines) + 1)
    raw = ax.plot(steps, result.declines, "o-", color="tab:blue", label="decline d_k")
    # The normalized values are a fraction of the raw ones; a second axis keeps their shape.
    twin = ax.twinx()
    normalized = twin.plot(
        steps, result.normalized_declines, "s-", color="tab:orange",
        label="normalized d_k L_k / L_n (right axis)",
    )  # fmt: skip
    twin.set_ylabel("normalized decline")
    k_min, k_max = result.settings.get("k_min"), result.settings.get("k_max")
    if k_min is not None and k_max is not None and len(steps):
        ax.axvspan(k_min - 0.5, min(k_max, len(steps)) + 0.5, color="0.93", zorder=0)
    _mark_k_star(ax, result)
    ax.set_xlabel("k (shaded: k_min..k_max)")
    ax.set_ylabel("decline")
    handles = raw + normalized + [line for line in ax.lines if line.get_label().startswith("K*")]
    ax.legend(handles=handles, loc="best", fontsize="small")


def _mark_k_star(ax: Any, result: SelectionResult) -> None:
    if result.k_star:
        ax.axvline(result.k_star, color="tab:red", linestyle="--", label=f"K* = {result.k_star}")
