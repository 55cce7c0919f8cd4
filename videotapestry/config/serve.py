"""The ``serve`` section: the web app's job database and how much work it runs at once."""

from __future__ import annotations

from pydantic import Field

from videotapestry.config.base import StrictModel


class ServeConfig(StrictModel):
    """``videotapestry serve`` (SPEC §13): where jobs are kept and the limits on work in flight.

    Builds are CPU-heavy (decoding, OCR, embeddings) and questions hold model calls, so each
    has its own limit: a queue of questions never waits behind a long build, and a machine is
    never asked to decode several videos at once unless it was configured to.
    """

    data_dir: str | None = Field(
        None,
        description="the job database and the traces of answered questions; null: "
        "videotapestry/serve under the user's data directory ($XDG_DATA_HOME)",
    )
    max_builds: int = Field(1, ge=1, description="memory builds running at once")
    max_questions: int = Field(2, ge=1, description="questions (and eval runs) answered at once")
