"""Issue 21 item 3: an answer's citations on its HTML page and in the notebook view.

One real question (scripted model over the fake server, the generated video, subtitles for
a transcript line) whose answer cites a frame of an Overview grid, a Skim frame, a transcript
line, a stored node and an id that names nothing, with markup in a claim. Its page lists
each source with its time and text, draws a mark per source where the timeline puts that
time, and links claims, marks and thumbnails both ways; the Direct baseline's cited frames,
which no level's thumbnail shows, get pictures of their own.
"""

from __future__ import annotations

import html
import re
from collections import Counter
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
from browser_support import browse, longest_run, root_element
from method_support import ask, make_vt
from PIL import Image

from videotapestry.agents.state import Citation, EvidenceRef
from videotapestry.cli import main
from videotapestry.result import Result
from videotapestry.testing import FakeOpenAIServer
from videotapestry.testing.scripted import ScriptedModel
from videotapestry.timecode import format_timestamp
from videotapestry.views.citation_text import span_text
from videotapestry.views.timeline import CITED_TINT, TimelineLayout
from videotapestry.views.trace_data import load_question_trace
from videotapestry.views.trace_html import question_page, result_html, thumbnails_for

HOSTILE = '<script>document.documentElement.dataset.pwned="claim"</script> The display reads it.'
SAID = 'Now the oven goes to "220" degrees & stays there.'
CLAIMS = [
    {"claim": HOSTILE, "ids": ["S1", "K3"]},
    {"claim": "The chef says it.", "ids": ["T1"]},
    {"claim": "It is set while the bird roasts.", "ids": ["macro_0002", "Z9"]},
]


class Tags(HTMLParser):
    """Every start tag with its attributes and the ``href`` of the link around it."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str], str | None]] = []
        self._links: list[str | None] = []
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {key: value or "" for key, value in attrs}
        self.tags.append((tag, values, self._links[-1] if self._links else None))
        if tag == "a":
            self._links.append(values.get("href"))

    def handle_endtag(self, tag: str) -> None:
        if tag == "a" and self._links:
            self._links.pop()

    def by_id(self) -> dict[str, tuple[str, dict[str, str], str | None]]:
        return {attrs["id"]: (tag, attrs, link) for tag, attrs, link in self.tags if "id" in attrs}


def _entry(page: str, anchor: str) -> str:
    """The source entry ``anchor`` (its ``<li>``, which holds no other)."""
    found = re.search(rf'<li id="{re.escape(anchor)}">(.*?)</li>', page, re.S)
    assert found, anchor
    return found.group(1)


@pytest.fixture(scope="module")
def cited(embedder, video: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    """A real question whose answer cites one source of every kind; its result and trace."""
    folder = tmp_path_factory.mktemp("cited")
    subtitles = folder / "subs.srt"
    subtitles.write_text(f"1\n00:10:12,000 --> 00:10:15,000\n{SAID}\n", encoding="utf-8")
    answer = {"reasoning": "The display and the chef agree.", "answer": "B", "citations": CLAIMS}
    with pytest.MonkeyPatch.context() as patch, FakeOpenAIServer() as server:
        patch.setenv("OPENAI_API_KEY", "sk-test-0123456789")
        patch.delenv("OPENAI_BASE_URL", raising=False)
        server.on(None, ScriptedModel(final_answer=answer))
        vt = make_vt(server, embedder, "asr.source=subtitles")
        result = ask(vt, video, subtitle_path=subtitles)
    kinds = [[source.kind for source in c.sources] for c in result.citations]
    assert kinds == [["frame", "frame"], ["transcript_line"], ["stored_node"]]
    yield result, result.save_trace(folder / "q.json")


def _direct(embedder, video: Path, answer: dict, *, keep_images: bool) -> Result:
    with pytest.MonkeyPatch.context() as patch, FakeOpenAIServer() as server:
        patch.setenv("OPENAI_API_KEY", "sk-test-0123456789")
        server.on(None, ScriptedModel(direct_answer=answer))
        return ask(make_vt(server, embedder, "variant=direct"), video, keep_images=keep_images)


def test_the_section_lists_every_source_with_its_time_level_and_text(cited) -> None:
    result, _ = cited
    page = result_html(result)
    section = page[page.index('<section class="vt-citations"') :]
    section = section[: section.index("</section>")]
    assert f"<b>The answer in words:</b> {html.escape(result.answer_text)}" in section
    assert result.answer_text == "220°C"
    [[s1, k3], [line], [node]] = [c.sources for c in result.citations]
    tags = Tags(page).by_id()
    for m, frame, agent in ((1, s1, "Overview Agent (super)"), (2, k3, "Skim Agent (macro)")):
        entry = _entry(page, f"vt-src-1-{m}")
        assert f"<code>{frame.id}</code>" in entry and f"from {agent}" in entry
        # Its time reads as the thumbnail it links to labels it.
        shown = re.search(r'title="its mark on the timeline">([^<]+)</a>', entry).group(1)
        assert shown.startswith(format_timestamp(frame.at_s))
        figure = re.search(r'<a href="#(vt-fig-[\d-]+)">its thumbnail</a>', entry).group(1)
        assert shown in tags[figure][1]["title"].split(", ")
        assert tags[figure][1]["class"] == "vt-cited"
    entry = _entry(page, "vt-src-2-1")
    assert "said at" in entry and (line.start_s, line.end_s) == (612.0, 615.0)
    assert span_text(612.0, 615.0) == "10:12–10:15" and span_text(612.0, 615.0) in entry
    assert f"“{html.escape(SAID)}”" in entry and "from Overview Agent (super)" in entry
    entry = _entry(page, "vt-src-3-1")
    assert (node.start_s, node.end_s) == result.node_times["macro_0002"]
    assert span_text(node.start_s, node.end_s) in entry
    assert f"<code>{node.id}</code>" in entry and "from Skim Agent (macro)" in entry
    # The id that named nothing is dropped, said here and among the warnings (the run is
    # not degraded by it).
    assert "Dropped: citations of Z9" in section
    alerts = page[: page.index('<section class="vt-citations"')]
    assert "<b>Warnings</b>" in alerts and "citation_invalid" in alerts
    assert "Degraded run" not in alerts and not result.degraded
    # The claim's markup is shown as text, never run, on the page and in the timeline.
    assert html.escape(HOSTILE) in section and "<script>document" not in page
    assert page.count("<script") == 1
    assert f"citation 1: {html.escape(HOSTILE)}" in page


#: A claim as the offline model quotes the memory (issue 39): ids and prompt markup.
MEMORY_CLAIM = '- slot3_o7 [03:32-04:18] "Door code 4417" (scene_text): read by OCR'
NODE_ID = re.compile(r"\b(slot\d+_[a-z]+\d+|macro_\d+|super_\d+|clip_\d+|root_\d+)\b")


def test_the_section_reads_without_ids_which_stay_in_a_closed_detail_view(cited) -> None:
    result, _ = cited
    [[s1, _k3], [line], [node]] = [c.sources for c in result.citations]
    ocr = EvidenceRef(id="slot3_o7", kind="stored_node", level="subgraph", start_s=212.0,
                      end_s=258.0, text="Door code 4417", node_kind="OCRText")  # fmt: skip
    claims = [Citation(claim=MEMORY_CLAIM, sources=[s1, ocr]), *result.citations[1:]]
    page = result_html(Result(**{**result.__dict__, "citations": claims}))
    section = page[page.index('<section class="vt-citations"') :]
    section = section[: section.index("</section>")]
    visible = html.unescape(re.sub(r"<details.*?</details>|<[^>]+>", " ", section, flags=re.S))
    assert not NODE_ID.search(visible) and "(scene_text)" not in visible, visible
    assert not re.search(r"\b[SKFT]\d+\b", visible), visible
    assert "Door code 4417" in visible and "on screen at 03:32–04:18" in " ".join(visible.split())
    assert f"frame at {format_timestamp(s1.at_s)}" in " ".join(visible.split())
    assert "said at 10:12–10:15" in " ".join(visible.split())
    # A stored span shows its own words, not its title (issue 39).
    assert (
        "memory, " in visible and "Maria rubs the chicken" in visible and node.text not in visible
    )
    # The ids are there for whoever opens the detail view.
    details = re.findall(r"<details.*?</details>", section, flags=re.S)
    assert any("<code>slot3_o7</code>" in d for d in details)
    assert any(f"<code>{line.id}</code>" in d for d in details)
    # The timeline's marks say the same, without ids.
    titles = re.findall(r"<title>(citation 1: [^<]*)</title>", page)
    assert titles and not any(NODE_ID.search(t) for t in titles), titles


def test_the_cited_lane_marks_each_span_where_the_timeline_puts_it(cited) -> None:
    result, _ = cited
    tags = Tags(result_html(result)).by_id()
    layout, duration = TimelineLayout(), result.video_duration_s
    assert duration == 1200.0
    roles = {"frame": "vt-cited_frame", "transcript_line": "vt-cited_line"}
    rows = []
    for n, citation in enumerate(result.citations, 1):
        tag, row, link = tags[f"vt-cite-{n}"]
        assert (tag, link, row["class"]) == ("rect", f"#vt-claim-{n}", "vt-cited_row")
        top, height = float(row["y"]), float(row["height"])
        rows.append(top)
        for m, source in enumerate(citation.sources, 1):
            tag, mark, link = tags[f"vt-cite-{n}-{m}"]
            assert tag == "rect" and link == f"#vt-src-{n}-{m}"
            assert mark["class"] == roles.get(source.kind, "vt-cited_node")
            left, right = layout.x(source.start_s, duration), layout.x(source.end_s, duration)
            assert float(mark["x"]) == pytest.approx(left, abs=0.06)
            assert float(mark["width"]) == pytest.approx(
                max(right - left, layout.min_width), abs=0.06
            )
            assert top <= float(mark["y"]) and float(mark["height"]) <= height
    assert rows == sorted(rows) and len(set(rows)) == 3  # one row per citation, in order
    marks = [i for i in tags if re.fullmatch(r"vt-cite-\d+-\d+", i)]
    assert len(marks) == sum(len(c.sources) for c in result.citations) == 4


def _links_resolve(page: str) -> set[str]:
    """The ids the page's links lead to, each of them on the page once."""
    tags = Tags(page)
    ids = Counter(attrs["id"] for _, attrs, _ in tags.tags if "id" in attrs)
    assert [i for i, count in ids.items() if count > 1] == []
    targets = {attrs["href"][1:] for tag, attrs, _ in tags.tags if tag == "a"}
    assert targets and targets <= set(ids), targets - set(ids)
    return targets


def test_links_resolve_both_ways_on_the_page_and_in_the_notebook_view(
    cited, tmp_path: Path
) -> None:
    result, trace = cited
    out = tmp_path / "q.html"
    assert main(["inspect", str(trace), "--html", str(out)]) == 0
    page = out.read_text(encoding="utf-8")
    assert {"vt-cite-1", "vt-cite-1-1", "vt-src-1-1", "vt-claim-3"} <= _links_resolve(page)
    tags = Tags(page).by_id()
    for n, citation in enumerate(result.citations, 1):
        assert f'<a href="#vt-cite-{n}">on the timeline</a>' in page
        for m in range(1, len(citation.sources) + 1):
            assert f'<a href="#vt-cite-{n}-{m}" title="its mark on the timeline">' in page
            assert tags[f"vt-cite-{n}-{m}"][2] == f"#vt-src-{n}-{m}"  # and back
    # Each cited thumbnail links back to what cites it.
    figures = [(i, attrs) for i, (_, attrs, _) in tags.items() if attrs.get("class") == "vt-cited"]
    assert len(figures) == 2
    assert re.search(r'<a href="#vt-src-1-1">claim 1, [\d:.]+, Overview level</a>', page)
    assert re.search(r'<a href="#vt-src-1-2">claim 1, [\d:.]+, Skim level</a>', page)
    # The notebook view: the same links, no script, ids of its own among other results.
    fragment = result._repr_html_()
    assert "<script" not in fragment
    scoped = _links_resolve(fragment)
    assert "vt-cite-1" not in scoped and any(i.endswith("-cite-1-1") for i in scoped)
    twin = Result(**{**result.__dict__, "question_id": "another"})._repr_html_()
    assert not scoped & set(Tags(twin).by_id())


def test_cited_frames_no_thumbnail_shows_get_pictures_of_their_own(embedder, video) -> None:
    answer = {"reasoning": "Frames show an oven.", "answer": "B",
              "citations": [{"claim": "The oven is on screen.", "ids": ["D3"]}]}  # fmt: skip
    bare = _direct(embedder, video, answer, keep_images=False)
    kept = _direct(embedder, video, answer, keep_images=True)
    [[frame]] = [c.sources for c in bare.citations]
    assert (frame.level, bare.levels) == ("direct", [])
    when = format_timestamp(frame.at_s)
    picture = r'<figure class="vt-cited" id="{}" title="{}">(<img src="data:image/jpeg|<div)'
    # Built with the video: decoded from it; from kept images: those; else its time.
    for text, anchor, shows in (
        (result_html(bare), "vt-frame-1-1", "<img"),
        (kept._repr_html_(), None, "<img"),
        (bare._repr_html_(), None, "<div"),
    ):
        anchor = anchor or re.search(r'id="(vt-[0-9a-f]{8}-frame-1-1)"', text).group(1)
        found = re.search(picture.format(re.escape(anchor), when), text)
        assert found and found.group(1).startswith(shows), anchor
    placeholder = bare._repr_html_()
    assert "keep_images=False" in placeholder and f">{when}</div>" in placeholder
    # With no level, the timeline still draws the cited lane.
    assert '<rect class="vt-cited_frame" id="vt-cite-1-1"' in result_html(bare)


def test_an_answer_that_cites_nothing_says_so(embedder, video) -> None:
    result = _direct(embedder, video, {"reasoning": "An oven.", "answer": "B"}, keep_images=False)
    assert result.citations == [] and result.degraded == []
    page = question_page(result, thumbnails_for(result))
    assert "This answer cites no evidence." in page
    assert "vt-cited_" not in page and "cited frame" not in page and "Answer cites" not in page


@pytest.mark.browser
def test_a_cited_page_renders_in_a_real_browser(cited, tmp_path: Path) -> None:
    result, trace = cited
    page = tmp_path / "q.html"
    loaded = load_question_trace(trace)
    page.write_text(question_page(loaded, thumbnails_for(loaded)), encoding="utf-8")
    root = root_element(browse(page, tmp_path, "--dump-dom").stdout)
    assert 'data-vt-ready="1"' in root and "data-js-errors" not in root
    assert "data-pwned" not in root  # the claim's script stayed text
    shot = tmp_path / "shot.png"
    browse(page, tmp_path, f"--screenshot={shot}", "--window-size=1280,1600")
    image = np.asarray(Image.open(shot).convert("RGB"))
    # The cited stored node, filled in the cited lane as wide as its share of the video.
    [node] = result.citations[2].sources
    assert longest_run(image, CITED_TINT) == pytest.approx(
        TimelineLayout().plot_width * (node.end_s - node.start_s) / 1200, abs=3
    )


def test_thumbnails_are_tagged_with_the_cited_time_and_level_in_words(cited) -> None:
    """Issue 39: a cited thumbnail says which claim cites it, at what time, seen at which
    level (``claim 1, 00:05, Overview level``), not ``#1 S1``."""
    result, _ = cited
    page = result_html(result)
    tags = re.findall(r'<span class="vt-cited-tag">cited: (.*?)</span>', page, flags=re.S)
    shown = [html.unescape(re.sub(r"<[^>]+>", "", tag)) for tag in tags]
    assert shown and not any(re.search(r"#\d+ [SKFT]\d+", tag) for tag in shown), shown
    [s1, k3] = result.citations[0].sources
    for frame, level in ((s1, "Overview level"), (k3, "Skim level")):
        assert any(
            tag.startswith(f"claim 1, {format_timestamp(frame.at_s)}") and tag.endswith(level)
            for tag in shown
        ), (frame, shown)


def test_the_reasoning_on_the_page_shows_times_for_ids_and_the_trace_keeps_them(cited) -> None:
    result, trace = cited
    said = "I chose macro_0002 (see super_01) | in: super_01; slot3_o7 [03:32-04:18] agrees."
    # (a memory line's tail, ``| in: super_01``, ends at the ``;``)
    page = result_html(Result(**{**result.__dict__, "reasoning": said}))
    header = page[page.index("<b>Answer:") : page.index("</p>", page.index("<b>Answer:"))]
    shown = html.unescape(header)
    assert not NODE_ID.search(shown), shown
    macro, whole = result.node_times["macro_0002"], result.node_times["super_01"]
    assert f"I chose {span_text(*macro)} (see {span_text(*whole)})" in shown, shown
    assert "03:32–04:18 agrees." in shown
    # Only the page changes: the saved trace keeps the model's own words.
    assert load_question_trace(trace).reasoning == result.reasoning
