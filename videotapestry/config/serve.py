"""The ``serve`` section: the web app's job database and how much work it runs at once."""

from __future__ import annotations

from pydantic import Field, field_validator

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
    library: str | None = Field(
        None,
        description="the library (SPEC §15) the web app and MCP server index, search and ask "
        "across, made from the memories under the roots; null: .videotapestry-library in the "
        "first root",
    )
    max_builds: int = Field(1, ge=1, description="memory builds running at once")
    max_questions: int = Field(2, ge=1, description="questions (and eval runs) answered at once")
    max_request_bytes: int = Field(
        1_048_576,
        ge=1024,
        description="largest request body the REST API reads, in bytes; a larger one is "
        "answered 413 before any of it is stored (a question is a few KB; 1 MiB leaves room "
        "for long option lists)",
    )
    allowed_hosts: list[str] = Field(
        default_factory=list,
        description="Host names the web app answers to besides its own address and localhost "
        "(any other Host gets 421, a page of another site 403): a reverse proxy's public "
        "host, as name, name:port or name:* (any port)",
    )

    @field_validator("allowed_hosts")
    @classmethod
    def _hosts_not_urls(cls, hosts: list[str]) -> list[str]:
        """An entry is compared with the Host header as sent: a URL or a blank would never
        match, and the proxy would get 421 with no hint why."""
        for host in hosts:
            bare_ipv6 = host.count(":") > 1 and not host.startswith("[")
            if not host.strip() or any(c in host for c in "/@ \t") or bare_ipv6:
                raise ValueError(
                    f"{host!r} is not a host: give name, name:port or name:* "
                    "(e.g. videos.example.com, not https://videos.example.com/)"
                )
        return hosts
