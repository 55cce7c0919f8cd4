"""The selection plot draws the trajectory, and says which extra to install without matplotlib."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from videotapestry.config import EvidenceConfig
from videotapestry.errors import OptionalDependencyError
from videotapestry.retrieval import Clip, EvidenceRecord, select_evidence
from videotapestry.retrieval.plot import plot_selection


def a_result():
    rng = np.random.default_rng(0)
    clips = []
    for i in range(12):
        vectors = rng.normal(size=(3, 16)).astype(np.float32)
        records = tuple(EvidenceRecord(f"c{i}_{j}", "x", 30.0 * i + j, None, j) for j in range(3))
        clips.append(Clip(f"c{i}", 30.0 * i, 30.0 * i + 30, records, vectors))
    return select_evidence(rng.normal(size=16), clips, EvidenceConfig())


def test_plot_draws_relevance_scores_declines_and_k_star(tmp_path) -> None:
    pytest.importorskip("matplotlib")
    result = a_result()
    figure = plot_selection(result, title="query 1")
    timeline, picks, declines = figure.axes[:3]
    assert len(timeline.patches) == len(result.clip_ids)
    chosen_colors = {tuple(p.get_facecolor()) for i, p in enumerate(timeline.patches)
                     if i in set(result.selected.tolist())}  # fmt: skip
    assert len(chosen_colors) == 1
    plotted = [line.get_ydata() for line in picks.lines]
    assert any(np.allclose(y, result.order_scores) for y in plotted if len(y) == len(result.order))
    lines = [line.get_ydata() for axes in figure.axes[2:] for line in axes.lines]
    for expected in (result.declines, result.normalized_declines):
        assert any(np.allclose(y, expected) for y in lines if len(y) == len(expected))
    k_star_lines = [line for line in declines.lines if line.get_label().startswith("K*")]
    assert k_star_lines and k_star_lines[0].get_xdata()[0] == result.k_star
    figure.savefig(tmp_path / "selection.png")
    assert (tmp_path / "selection.png").stat().st_size > 1000


def test_plot_without_matplotlib_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(OptionalDependencyError, match=r"videotapestry\[plot\]"):
        plot_selection(a_result())
