"""Progress bars on stderr, one per stage (tqdm): done / total, calls, tokens, cost, ETA.

``BuildProgress(enabled=False)`` (``--quiet``) prints nothing. The model figures are the
current build's, over every stage so far.
"""

from __future__ import annotations

import sys
from typing import Any, Protocol, TextIO

from tqdm import tqdm

from videotapestry.llm import UsageSummary


class UsageSource(Protocol):
    def summary(self) -> UsageSummary: ...


class StageBar:
    def __init__(self, bar: tqdm | None, usage: UsageSource | None) -> None:
        self._bar = bar
        self._usage = usage

    def update(self, n: float = 1) -> None:
        if self._bar is None:
            return
        self._bar.update(n)
        self._refresh()

    def set_total(self, total: float) -> None:
        if self._bar is not None:
            self._bar.total = total
            self._bar.refresh()

    def set_done(self, done: float) -> None:
        if self._bar is not None:
            self._bar.n = done
            self._refresh()

    def _refresh(self) -> None:
        if self._bar is None or self._usage is None:
            return
        summary = self._usage.summary()
        tokens = summary.prompt_tokens + summary.completion_tokens
        cost = "?" if summary.unpriced_calls else f"${summary.cost_usd:.3f}"
        self._bar.set_postfix_str(f"calls {summary.calls}, tok {tokens}, {cost}", refresh=False)

    def close(self) -> None:
        if self._bar is not None:
            self._refresh()
            self._bar.close()

    def __enter__(self) -> StageBar:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class BuildProgress:
    def __init__(
        self,
        enabled: bool = True,
        *,
        usage: UsageSource | None = None,
        stream: TextIO | None = None,
    ) -> None:
        self.enabled = enabled
        self.usage = usage
        self.stream = stream or sys.stderr

    def stage(self, name: str, total: float | None, unit: str = "clip") -> StageBar:
        if not self.enabled:
            return StageBar(None, None)
        bar = tqdm(
            total=total,
            desc=f"{name:<12}",
            unit=unit,
            file=self.stream,
            dynamic_ncols=True,
            mininterval=0.5,
            leave=True,
        )
        return StageBar(bar, self.usage)

    def message(self, text: str) -> None:
        if self.enabled:
            tqdm.write(text, file=self.stream)
