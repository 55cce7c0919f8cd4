"""``RUN/report.md``, ``RUN/report.json`` and ``RUN/accuracy_by_category.png`` from a run.

The report is rebuilt from ``results.jsonl`` alone (``run.json`` only labels it), so it can
be written at any time, also while a run is still going, and again after a resume. The
main table has one row per variant with the method's components marked, the
composite-memory tokens and the accuracy with its difference from ``full``, like the
paper's ablation table; category and duration tables follow with the same rows, then the
grounding of the answers' citations beside their accuracy (with what was done to the
benchmark's evidence times to fit the videos: spans ordered, clipped, dropped past the end,
time references left unread), and which judge scored the free-form answers.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from videotapestry.eval.grounding import IOU_THRESHOLDS, EvidenceTally, Grounding, evidence_tally
from videotapestry.eval.metrics import (
    Accuracy,
    VariantMetrics,
    metrics_by_variant,
    unpriced_text,
)
from videotapestry.eval.records import OFFLINE_JUDGE
from videotapestry.eval.run_reader import (
    RUN_FILE,
    RecordsRead,
    RunDirectoryError,
    RunInfo,
    read_run_info_if_present,
    require_records,
)
from videotapestry.files import write_atomic
from videotapestry.variants import FULL, VARIANT_NAMES, variant_named

REPORT_MD = "report.md"
REPORT_JSON = "report.json"
PLOT_FILE = "accuracy_by_category.png"
REPORT_FORMAT = 1

#: The components each variant keeps (Y), drops (N) or has no notion of (–), as
#: ``variant_components`` reads them from the variants table: visual observation, ASR
#: observation, node updates, scale-aligned agents, and which parts of the refined memory the
#: Answer agent receives (Super scaffold, Macro/Subgraph paths).
COMPONENT_COLUMNS = ("Visual", "ASR", "Update", "M-A", "Super", "Paths")
REFERENCE_VARIANT = FULL.name


def variant_components(name: str) -> tuple[str, ...]:
    """The variant's cells under ``COMPONENT_COLUMNS``; empty for a name the table lacks."""
    if name not in VARIANT_NAMES:
        return ("",) * len(COMPONENT_COLUMNS)
    row = variant_named(name)
    if not row.method:
        return ("–",) * len(COMPONENT_COLUMNS)
    kept = [row.observes_visual, row.observes_asr, row.rewrites_nodes, not row.single_controller]
    cells = ["Y" if keeps else "N" for keeps in kept]
    if row.reads_refined_memory:
        cells += ["Y" if row.reads_super_scaffold else "N", "Y" if row.reads_paths else "N"]
    else:
        cells += ["–", "–"]
    return tuple(cells)


@dataclass
class Report:
    run_dir: Path
    info: RunInfo | None
    read: RecordsRead
    variants: dict[str, VariantMetrics]
    markdown: str = ""
    plot: Path | None = None
    #: Why there is no plot, when there is none.
    plot_note: str | None = None
    notes: list[str] = field(default_factory=list)
    #: What was done to the benchmark's evidence times to fit the videos (per question).
    evidence: EvidenceTally = field(default_factory=EvidenceTally)

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": REPORT_FORMAT,
            "run_dir": str(self.run_dir),
            "run": None if self.info is None else _run_summary(self.info),
            "records": {
                "read": len(self.read.records),
                "torn_lines": self.read.torn_lines,
                "invalid_lines": list(self.read.invalid_lines),
            },
            "reference_variant": REFERENCE_VARIANT if REFERENCE_VARIANT in self.variants else None,
            "variants": {name: m.to_dict() for name, m in self.variants.items()},
            "evidence": self.evidence.to_dict(),
            "plot": None if self.plot is None else self.plot.name,
            "plot_note": self.plot_note,
            "notes": list(self.notes),
        }


def build_report(run_dir: str | Path) -> Report:
    """The report's numbers without writing anything (the plot is not drawn)."""
    run = Path(run_dir)
    read = require_records(run)
    notes = []
    info = read_run_info_if_present(run)
    if info is None:
        notes.append(f"{RUN_FILE} is missing: benchmark, configuration and models are unknown")
    if read.torn_lines:
        notes.append(
            "the last line of results.jsonl is torn (a run was stopped while writing it, or "
            "is writing it now) and was skipped; a rerun asks that question again"
        )
    if read.invalid_lines:
        lines = ", ".join(str(n) for n in read.invalid_lines)
        notes.append(f"results.jsonl lines {lines} are not valid records and were skipped")
    order = info.variants if info is not None else []
    return Report(
        run_dir=run,
        info=info,
        read=read,
        variants=metrics_by_variant(read.records, order),
        notes=notes,
        evidence=evidence_tally(read.records),
    )


def write_report(run_dir: str | Path) -> Report:
    """Write ``report.md``, ``report.json`` and the plot into the run directory."""
    report = build_report(run_dir)
    report.plot, report.plot_note = _draw_plot(report.variants, report.run_dir / PLOT_FILE)
    report.markdown = render_markdown(report)
    _write_atomically(report.run_dir / REPORT_MD, report.markdown)
    _write_atomically(
        report.run_dir / REPORT_JSON,
        json.dumps(report.to_dict(), ensure_ascii=False, indent=1) + "\n",
    )
    return report


# ----------------------------------------------------------------------------- markdown


def render_markdown(report: Report) -> str:
    info = report.info
    title = info.benchmark if info is not None and info.benchmark else report.run_dir.name
    out = [f"# Evaluation report: {title}", ""]
    out += _header_lines(report)
    out += ["", "## Variants", ""]
    out += _variant_table(report.variants)
    out += [
        "",
        "Visual, ASR: query-time visual and transcript observation. Update: observations "
        "rewritten into the memory nodes. M-A: one agent per memory level. Super, Paths: the "
        "refined Super scaffold and the refined Macro/Subgraph paths in the memory the "
        "Answer agent reads (– where the variant has no refined memory). "
        "Acc. is over every finished question with a gold letter (or a free-form answer the "
        "judge ruled on); a failed question counts as wrong and a guessed letter is scored "
        "as given. Skipped questions (the run stopped "
        "before them) are not scored. Tokens: mean composite-memory tokens given to the "
        f"Answer agent. Δ Acc.: percentage points against `{REFERENCE_VARIANT}`.",
    ]
    categories = _group_table(report.variants, lambda m: m.by_category)
    if categories:
        out += ["", "## Accuracy by category", "", *categories]
        out += ["", "A question counts in every category it carries."]
    durations = _group_table(report.variants, lambda m: m.by_duration)
    if durations:
        out += ["", "## Accuracy by duration group", "", *durations]
    out += ["", "## Grounding", "", *_grounding_lines(report.variants)]
    out += _evidence_lines(report.evidence)
    out += ["", "## Outcomes", "", *_outcome_table(report.variants)]
    out += [
        "",
        "Guessed: the Answer agent gave no usable letter and the letter is a fallback guess. "
        "Degraded: the model's own letter, but part of the method was lost (SPEC §7a). "
        "Warned: answers with a warning, a cited id that named nothing (dropped); no part of "
        "the method was lost, so a warned answer may also be clean. "
        "Acc. answered: failed questions left out. Acc. guesses wrong: a guessed letter counts "
        "as wrong. Acc. clean: only the questions answered with nothing lost, a self-selected "
        "subset.",
    ]
    out += _breakdown_lines(report.variants)
    out += ["", "## Usage per question", "", *_usage_table(report.variants)]
    out += [
        "",
        "Means over finished questions (failed ones spent calls too). Latency is each "
        "question's wall time. Cost is unknown when any call's model has no price.",
    ]
    out += ["", "## Accuracy by category (plot)", ""]
    if report.plot is not None:
        out.append(f"![accuracy by category]({report.plot.name})")
    else:
        out.append(f"No plot: {report.plot_note}")
    if report.notes:
        out += ["", "## Notes", ""]
        out += [f"- {note}" for note in report.notes]
    return "\n".join(out) + "\n"


def _header_lines(report: Report) -> list[str]:
    read = report.read
    lines = [f"- run directory: `{report.run_dir}`"]
    info = report.info
    if info is not None:
        if info.annotations:
            lines.append(f"- annotations: `{info.annotations}`")
        if info.created:
            lines.append(f"- created: {info.created}")
        if info.config_hash:
            lines.append(f"- config hash: `{info.config_hash}`")
        if info.models:
            models = ", ".join(f"{role} `{name}`" for role, name in sorted(info.models.items()))
            lines.append(f"- models: {models}")
    skipped = ""
    if read.torn_lines:
        skipped += ", 1 torn last line skipped"
    if read.invalid_lines:
        skipped += f", {len(read.invalid_lines)} invalid lines skipped"
    latest = sum(m.counts.questions for m in report.variants.values())
    lines.append(
        f"- records: {len(read.records)} lines read, {latest} (variant, question) pairs{skipped}"
    )
    judged: dict[str, int] = {}
    for m in report.variants.values():
        for judge, answers in m.judges.items():
            judged[judge] = judged.get(judge, 0) + answers
    if judged:
        names = ", ".join(f"{judge_label(name)} ({n} answers)" for name, n in judged.items())
        lines.append(f"- free-form answers judged by: {names}")
    return lines


def judge_label(name: str) -> str:
    """How a report names a judge: its model, or what the offline judge is."""
    if name == OFFLINE_JUDGE:
        return "offline (approximate: key terms and embedding agreement, not a model)"
    return f"`{name}`"


def _variant_table(variants: dict[str, VariantMetrics]) -> list[str]:
    reference = variants.get(REFERENCE_VARIANT)
    head = ["Variant", *COMPONENT_COLUMNS, "Tokens", "Acc.", "Δ Acc.", "Scored"]
    rows = []
    for name, m in variants.items():
        components = variant_components(name)
        rows.append(
            [
                name,
                *components,
                _int(m.usage.memory_tokens),
                _pct(m.accuracy),
                _delta(m.accuracy, None if reference is None else reference.accuracy, name),
                str(m.accuracy.total),
            ]
        )
    return _table(head, rows)


def _group_table(
    variants: dict[str, VariantMetrics], groups: Callable[[VariantMetrics], dict[str, Accuracy]]
) -> list[str]:
    names: list[str] = []
    for m in variants.values():
        names += [g for g in groups(m) if g not in names]
    if not names:
        return []
    names.sort()
    rows = []
    for name, m in variants.items():
        cells = [_fraction(groups(m).get(g)) for g in names]
        rows.append([name, _fraction(m.accuracy), *cells])
    return _table(["Variant", "Overall", *names], rows)


def _outcome_table(variants: dict[str, VariantMetrics]) -> list[str]:
    head = [
        "Variant",
        "Questions",
        "Answered",
        "Failed",
        "Skipped",
        "Unscored",
        "Guessed",
        "Degraded",
        "Clean",
        "Warned",
        "Acc.",
        "Acc. answered",
        "Acc. guesses wrong",
        "Acc. clean",
    ]
    rows = []
    for name, m in variants.items():
        c = m.counts
        rows.append(
            [
                name,
                *(str(v) for v in (c.questions, c.answered, c.failed, c.skipped, c.unscored)),
                *(str(v) for v in (c.fallback, c.degraded, c.clean, c.warned)),
                _fraction(m.accuracy),
                _fraction(m.accuracy_answered),
                _fraction(m.accuracy_no_fallback),
                _fraction(m.accuracy_clean),
            ]
        )
    return _table(head, rows)


def _breakdown_lines(variants: dict[str, VariantMetrics]) -> list[str]:
    lines = []
    for name, m in variants.items():
        if m.counts.degradation_kinds:
            kinds = ", ".join(f"{k} {v}" for k, v in m.counts.degradation_kinds.items())
            lines.append(f"- {name}: degradations (answered questions) by kind: {kinds}")
        if m.counts.warning_kinds:
            kinds = ", ".join(f"{k} {v}" for k, v in m.counts.warning_kinds.items())
            lines.append(f"- {name}: warnings (answered questions) by kind: {kinds}")
        if m.counts.error_types:
            errors = ", ".join(f"{k} {v}" for k, v in m.counts.error_types.items())
            lines.append(f"- {name}: failures by error: {errors}")
        if m.counts.unjudged:
            lines.append(
                f"- {name}: {m.counts.unjudged} free-form answers have no verdict (the judge's "
                "call failed); they are counted as unscored, not as wrong"
            )
    return ["", *lines] if lines else []


def _grounding_lines(variants: dict[str, VariantMetrics]) -> list[str]:
    """The grounding table, what it means, and the per-category hit rates and mIoU."""
    lines = [
        f"- {name}: {m.grounding.questions} finished questions with evidence spans; "
        f"{m.answers_uncited} of {m.counts.answered} answers cited nothing"
        for name, m in variants.items()
    ]
    if not any(m.grounding.questions for m in variants.values()):
        return [*lines, "", "No question has evidence spans: grounding is not scored."]
    recall = [f"R@{t}" for t in IOU_THRESHOLDS]
    head = ["Variant", "With evidence", "Hit rate", "mIoU", *recall, "Acc.", "Acc. grounded"]
    head += ["Right & grounded", "Cited nothing"]
    rows = []
    for name, m in variants.items():
        g = m.grounding
        rows.append(
            [
                name,
                str(g.questions),
                _share(g.hit_rate),
                _num(g.miou, 3),
                *(_share(g.recall(t)) for t in IOU_THRESHOLDS),
                _fraction(m.accuracy),
                _fraction(g.accuracy_grounded),
                _fraction(g.right_and_grounded),
                str(g.uncited),
            ]
        )
    out = [*lines, "", *_table(head, rows)]
    out += [
        "",
        "Over the finished questions whose benchmark gives evidence times, the union of each "
        "answer's cited spans against the union of the evidence spans. Hit rate: any overlap. "
        "mIoU: mean intersection over union. R@t: share with IoU of at least t. An answer "
        "that cites nothing, or a failed question, is a miss with IoU 0. Acc.: over every "
        "scored question, as above. Acc. grounded: right among the scored questions that "
        "hit. Right & grounded: right and hit, over every scored question with evidence. A "
        "cited moment (a frame) can hit but has no length, so it adds nothing to IoU.",
    ]
    table = _grounding_category_table(variants)
    if table:
        out += ["", "Hit rate / mIoU (questions) by category:", "", *table]
    return out


def _evidence_lines(tally: EvidenceTally, shown: int = 10) -> list[str]:
    """What was done to the benchmark's evidence times, when anything was."""
    if not tally.noted:
        return []
    ids = ", ".join(tally.unreadable[:shown]) + (", …" if len(tally.unreadable) > shown else "")
    return [
        "",
        "Evidence times fitted to the videos (per question, once whatever the variants):",
        "",
        f"- reversed spans ordered: {tally.reversed}",
        f"- spans clipped at the video's end: {tally.clipped}",
        f"- spans dropped past the video's end: {tally.past_end}",
        f"- time_reference unreadable: {len(tally.unreadable)} questions"
        + (f" (ids {ids}); they have no evidence spans" if tally.unreadable else ""),
    ]


def _grounding_category_table(variants: dict[str, VariantMetrics]) -> list[str]:
    names = sorted({g for m in variants.values() for g in m.grounding_by_category})
    if not names:
        return []
    rows = [
        [name, *(_grounding_cell(m.grounding_by_category.get(g)) for g in names)]
        for name, m in variants.items()
    ]
    return _table(["Variant", *names], rows)


def _grounding_cell(g: Grounding | None) -> str:
    if g is None or not g.questions:
        return "–"
    return f"{_share(g.hit_rate)} / {_num(g.miou, 2)} ({g.questions})"


def _share(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}"


def _usage_table(variants: dict[str, VariantMetrics]) -> list[str]:
    head = [
        "Variant",
        "Questions",
        "Calls",
        "Images",
        "Prompt tokens",
        "Cached prompt tokens",
        "Completion tokens",
        "Model s",
        "Cost (USD)",
        "Latency mean (s)",
        "p50 (s)",
        "p95 (s)",
        "Memory tokens",
    ]
    rows = []
    for name, m in variants.items():
        u = m.usage
        cost = (
            unpriced_text(u.unpriced_questions)
            if u.unpriced_questions
            else _num(u.cost_usd_mean, 4)
        )
        rows.append(
            [
                name,
                str(u.questions),
                _num(u.calls, 1),
                _num(u.images, 1),
                _int(u.prompt_tokens),
                _int(u.cached_prompt_tokens),
                _int(u.completion_tokens),
                _num(u.model_s, 1),
                cost,
                _num(u.latency_s.mean, 2),
                _num(u.latency_s.p50, 2),
                _num(u.latency_s.p95, 2),
                _int(u.memory_tokens),
            ]
        )
    return _table(head, rows)


def _table(head: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(["---"] * len(head)) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def _pct(acc: Accuracy | None) -> str:
    return "–" if acc is None or acc.percent is None else f"{acc.percent:.1f}"


def _fraction(acc: Accuracy | None) -> str:
    if acc is None or acc.total == 0:
        return "–"
    return f"{_pct(acc)} ({acc.correct}/{acc.total})"


def _delta(acc: Accuracy, reference: Accuracy | None, name: str) -> str:
    if name == REFERENCE_VARIANT or reference is None:
        return "–"
    if acc.percent is None or reference.percent is None:
        return "–"
    return f"{acc.percent - reference.percent:+.1f}"


def _num(value: float | None, digits: int) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _int(value: float | None) -> str:
    return "–" if value is None else f"{round(value):,}"


def _run_summary(info: RunInfo) -> dict[str, Any]:
    """run.json without the full configuration and the prompt texts (report.json should stay
    readable; ``prompt_hashes`` still name the prompts)."""
    data = info.model_dump(mode="json")
    data.pop("config", None)
    data.pop("prompts", None)
    return data


# --------------------------------------------------------------------------------- plot


def _draw_plot(variants: dict[str, VariantMetrics], target: Path) -> tuple[Path | None, str | None]:
    """Grouped bars, overall then each category; the reason instead when it cannot draw."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        return None, (
            "matplotlib is not installed; install it with pip install 'videotapestry[plot]' "
            "and run `videotapestry eval-report` again"
        )
    groups = ["overall"]
    for m in variants.values():
        groups += sorted(g for g in m.by_category if g not in groups)
    width = 0.8 / max(len(variants), 1)
    figure = Figure(figsize=(max(6.0, 0.9 * len(groups) * max(1, len(variants)) ** 0.5), 4.5))
    FigureCanvasAgg(figure)  # file output only: no display backend, no pyplot state
    ax = figure.subplots()
    for i, (name, m) in enumerate(variants.items()):
        accs = [m.accuracy, *(m.by_category.get(g) for g in groups[1:])]
        heights = [0.0 if a is None or a.percent is None else a.percent for a in accs]
        xs = [x + (i - (len(variants) - 1) / 2) * width for x in range(len(groups))]
        ax.bar(xs, heights, width=width, label=name)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups, rotation=30 if len(groups) > 4 else 0, ha="right")
    ax.set_ylim(0, 100)
    ax.set_ylabel("accuracy (%)")
    ax.set_title("Accuracy by category")
    ax.legend(loc="best", fontsize="small")
    figure.set_layout_engine("constrained")
    try:
        figure.savefig(target, dpi=120)
    except (OSError, ValueError, RuntimeError) as exc:
        return None, f"the plot could not be saved to {target}: {exc}"
    return target, None


def _write_atomically(path: Path, text: str) -> None:
    """Replace ``path`` whole, so a reader never sees half a report."""
    try:
        write_atomic(path, text)
    except OSError as exc:
        raise RunDirectoryError(f"cannot write {path}: {exc.strerror or exc}") from None
