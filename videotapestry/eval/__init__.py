"""Benchmark evaluation: loaders for the released files, a resumable runner, reports.

The layout follows the stages a researcher goes through: ``datasets`` turns a benchmark's
own files into ``EvalQuestion`` records, ``runner`` answers them into a run directory (one
``ResultRecord`` line per finished question), ``report`` and ``compare`` read run directories
back, ``exports`` writes a run in each benchmark's own submission format, and ``rerun``
repeats a run from what its ``run.json`` recorded (``provenance``). Nothing here changes the
method; it only drives ``VideoTapestry`` and counts.
"""

from videotapestry.eval.questions import EvalQuestion
from videotapestry.eval.records import ResultRecord

__all__ = ["EvalQuestion", "ResultRecord"]
