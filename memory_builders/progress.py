"""Progress bars on stderr, one per stage (tqdm): done / total, calls, tokens, cost, ETA.

``BuildProgress(enabled=False)`` (``--quiet``) prints nothing. The model figures are the
current build's, over every stage so far. A ``listener`` hears every stage's count whether or
not bars are drawn, so a server can forward a build's progress to its client (the MCP
server's progress notifications) without parsing a terminal's output.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, TextIO

from tqdm import tqdm

from videotapestry.llm import UsageSummary


class UsageSource(Protocol):
    def summary(self) -> UsageSummary: ...


@dataclass(frozen=True)
class StageUpdate:
    """Where one stage stands: ``done`` of ``total`` (None while unknown) ``unit``s."""

    stage: str
    done: float
    total: float | None
    unit: str


#: Called with every change of a stage's count; the scan calls it from its decoding thread.
StageListener = Callable[[StageUpdate], None]


class StageBar:
    def __init__(
        self,
        bar: tqdm | None,
        usage: UsageSource | None,
        *,
        name: str = "",
        total: float | None = None,
        unit: str = "clip",
        listener: StageListener | None = None,
    ) -> None:
        self._bar = bar
        self._usage = usage
        self._name = name
        self._done: float = 0
        self._total = total
        self._unit = unit
        self._listener = listener

    def update(self, n: float = 1) -> None:
        self._done += n
        self._tell()
        if self._bar is None:
            return
        self._bar.update(n)
        self._refresh()

    def set_total(self, total: float) -> None:
        self._total = total
        self._tell()
        if self._bar is not None:
            self._bar.total = total
            self._bar.refresh()

    def set_done(self, done: float) -> None:
        self._done = done
        self._tell()
        if self._bar is not None:
            self._bar.n = done
            self._refresh()

    def _tell(self) -> None:
        if self._listener is not None:
            self._listener(StageUpdate(self._name, self._done, self._total, self._unit))

    def _refresh(self) -> None:
        if self._bar is None or self._usage is None:
            return
        summary = self._usage.summary()
        tokens = summary.prompt_tokens + summary.completion_tokens
        self._bar.set_postfix_str(
            f"calls {summary.calls}, tok {tokens}, {summary.cost_text(3)}", refresh=False
        )

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
        listener: StageListener | None = None,
    ) -> None:
        self.enabled = enabled
        self.usage = usage
        self.stream = stream or sys.stderr
        self.listener = listener

    def stage(self, name: str, total: float | None, unit: str = "clip") -> StageBar:
        bar = None
        if self.enabled:
            bar = tqdm(
                total=total,
                desc=f"{name:<12}",
                unit=unit,
                file=self.stream,
                dynamic_ncols=True,
                mininterval=0.5,
                leave=True,
            )
        usage = self.usage if self.enabled else None
        return StageBar(bar, usage, name=name, total=total, unit=unit, listener=self.listener)

    def message(self, text: str) -> None:
        if self.enabled:
            tqdm.write(text, file=self.stream)
