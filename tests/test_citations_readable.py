"""Issue 39 item 2, must show: no rendered citation (CLI, HTML, web app) holds an internal
node id or a glued OCR token from the sample, and the web app's times equal the trace
page's. One ``ask`` of the shipped sample's door-code question, free-form, with the offline
model, whose claim quotes the memory's lines (``- slot3_o7 [03:32-04:18] "Door code 4417"
(scene_text): read by OCR``): its printout, its trace page and what the web app is sent."""

from __future__ import annotations

import contextlib
import html
import io
import re
from pathlib import Path

import pytest

from videotapestry.cli import main
from videotapestry.demo import sample_questions, sample_video_path
from videotapestry.demo.runner import demo_memory_dir
from videotapestry.result import load_result
from videotapestry.serve.operations import ServedAnswer
from videotapestry.views.citation_text import moment_text, span_text
from videotapestry.views.trace_html import result_html

pytestmark = pytest.mark.slow

#: The ids the shipped builder gives the sample's stored nodes (its memory.json), and the
#: ids of observed frames and lines (``F4``, ``T2``).
NODE_ID = re.compile(r"\b(slot\d+_[a-z]+\d+|macro_\d+|super_\d+|clip_\d+|root_\d+)\b")
REF_ID = re.compile(r"\b[SKFTD]\d+\b")
#: The memory's prompt markup, and the sample's texts as OCR glued them.
MARKUP = re.compile(r"\[@?\d+:\d\d|\(scene_text\)|read by OCR")
GLUED = ("Doorcode4417", "Doorcode", "GateB:")
GATE_B = next(q for q in sample_questions()["questions"] if q["id"] == "gate_b_code")


@pytest.fixture(scope="module")
def asked(demo_cache: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[list[str], Path]:
    """The printed citation lines of the door-code question and its trace."""
    trace = tmp_path_factory.mktemp("readable") / "q.json"
    memory = demo_memory_dir(sample_video_path(), demo_cache)
    out = io.StringIO()  # module-scoped: no capsys, the printout is redirected instead
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        status = main([
            "ask", str(sample_video_path()), "--memory", str(memory),
            "--question", GATE_B["question"], "--profile", "offline",
            "-o", "cache.enabled=false", "--trace", str(trace), "--quiet",
        ])  # fmt: skip
    assert status == 0, out.getvalue()
    trace.with_name("printed.txt").write_text(out.getvalue(), encoding="utf-8")
    lines = out.getvalue().splitlines()
    cited = [line for line in lines if line.startswith(("claim ", "  cites ", "cites"))]
    return cited, trace


def test_the_printed_citations_hold_no_id_markup_or_glued_text(asked) -> None:
    cited, trace = asked
    assert cited and cited[0].startswith("claim 1: "), cited
    for line in cited:
        assert not NODE_ID.search(line) and not REF_ID.search(line), line
        assert not MARKUP.search(line) and not any(g in line for g in GLUED), line
    assert "4417" in cited[0]
    # Each source as its kind and the time a click seeks to (a frame's own timestamp).
    result = load_result(trace)
    sources = [s for c in result.citations for s in c.sources]
    assert sources and all(moment_text(s) in "\n".join(cited) for s in sources)
    assert re.fullmatch(r"  cites (frames? at|said at|on screen at|memory,) .+", cited[1])


def test_the_trace_page_and_the_web_app_show_the_same_readable_citations(asked) -> None:
    _, trace = asked
    result = load_result(trace)
    page = result_html(result)
    section = page[page.index('<section class="vt-citations"') :]
    section = section[: section.index("</section>")]
    # What a reader sees: everything but the closed detail view of each source's ids.
    visible = html.unescape(re.sub(r"<details.*?</details>|<[^>]+>", " ", section, flags=re.S))
    assert not NODE_ID.search(visible) and not REF_ID.search(visible), visible
    assert not MARKUP.search(visible) and not any(g in visible for g in GLUED), visible
    assert "<details" in section and "<code>" in section  # the ids stay, folded away
    # The web app is sent each source's time as the page writes it, and where to seek.
    served = ServedAnswer.of(result, trace=None)
    page_times = re.findall(r'title="its mark on the timeline">([^<]+)</a>', section)
    shown = [s for c in served.citations_shown for s in c.sources]
    assert [s.when for s in shown] == [html.unescape(t) for t in page_times]
    for source, ref in zip(shown, [s for c in result.citations for s in c.sources], strict=True):
        assert source.seek_s == (ref.at_s if ref.at_s is not None else ref.start_s)
        assert source.shown.startswith(("frame at", "said at", "on screen at", "memory,"))
        assert not NODE_ID.search(source.shown) and not REF_ID.search(source.shown)
    assert not NODE_ID.search(served.citations_shown[0].claim)
    assert not NODE_ID.search(served.text().split("\ntrace:")[0])


#: The pattern issue 39 names for an internal node id in what ``ask`` prints.
PRINTED_ID = re.compile(r"\b(slot\d+_[a-z]\d+|super_\d+|macro_\d+|clip_\d+)\b")


def test_the_level_lines_name_the_chosen_parts_by_time_not_by_id(asked) -> None:
    """Issue 39: ``-> super_01`` reads as the node's span and first words; the trace keeps
    the ids. (The reasoning line's ids are tested with hand-made text in
    test_citation_text.py: the offline model's wording is not this test's to pin.)"""
    _, trace = asked
    printed = trace.with_name("printed.txt").read_text(encoding="utf-8").splitlines()
    agents = ("  Overview Agent", "  Skim Agent", "  Focus Agent")
    levels = [line for line in printed if line.startswith(agents)]
    assert len(levels) >= 2, printed
    for line in levels:
        assert not PRINTED_ID.search(line), line
    result = load_result(trace)
    chosen = [o for o in result.levels if o.selected_ids and not o.stop]
    assert chosen and all(o.selected_ids[0].startswith(("super_", "macro_")) for o in chosen)
    for outcome, line in zip(result.levels, levels, strict=False):
        if outcome.selected_ids and not outcome.stop:
            start, end = result.node_times[outcome.selected_ids[0]]
            assert f"-> {span_text(start, end)} “" in line, line
