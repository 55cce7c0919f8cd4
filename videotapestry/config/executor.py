"""The ``executor`` section: where builds and evaluation questions run."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from videotapestry.config.base import StrictModel


class RayResources(StrictModel):
    """What Ray reserves on a node for one task or worker (it places each where these fit)."""

    num_cpus: float = Field(1.0, ge=0)
    num_gpus: float = Field(
        0.0, ge=0, description="set > 0 when Whisper or the embedding model run on a GPU"
    )
    memory_gb: float | None = Field(None, gt=0, description="memory to reserve; null: none")


class RayBuildSettings(RayResources):
    """``build-memory --executor ray``: one task per video."""

    max_retries: int = Field(
        3,
        ge=0,
        description="reruns of a video's task after its worker process died; a rerun resumes "
        "from the checkpoints in the output directory",
    )
    parallel: int | None = Field(
        None, ge=1, description="videos building at once; null: as many as the cluster fits"
    )


class RayEvalSettings(RayResources):
    """``eval --executor ray``: workers (actors) that each answer whole videos' questions."""

    workers: int | None = Field(
        None,
        ge=1,
        description="workers, each holding one embedder and one Whisper; null: the cluster's "
        "CPUs divided by num_cpus",
    )
    max_restarts: int = Field(
        3,
        ge=0,
        description="restarts of a worker whose process died; its unfinished questions are "
        "asked again",
    )


class RayConfig(StrictModel):
    address: str | None = Field(
        None,
        description="cluster to join: 'auto', 'HOST:PORT' or 'ray://HOST:10001' (needs "
        "ray[client]); null joins RAY_ADDRESS or starts a Ray instance on this machine",
    )
    runtime_env: dict[str, Any] | None = Field(
        None, description="Ray runtime_env for the job (env_vars, working_dir, pip, ...)"
    )
    log_to_driver: bool = Field(True, description="show the workers' log lines on the driver")
    build: RayBuildSettings = RayBuildSettings()
    eval: RayEvalSettings = RayEvalSettings()


class ExecutorConfig(StrictModel):
    """Where builds and evaluation questions run (SPEC §11); the results are the same."""

    kind: Literal["local", "ray"] = Field(
        "local", description="local: this process's event loop; ray: tasks on a Ray cluster"
    )
    ray: RayConfig = RayConfig()
