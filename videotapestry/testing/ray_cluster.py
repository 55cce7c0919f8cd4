"""A throwaway Ray instance on 127.0.0.1 for tests and benchmarks (needs the ``[ray]`` extra).

Ray advertises the machine's network address by default; the instance made here stays on
the loopback address, so no test traffic leaves the machine. Its temporary directory is a
short fresh one (Ray's socket paths must stay under the Unix limit) and is removed after.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

#: Ray reads this when it is imported: false makes a node advertise 127.0.0.1.
_LOOPBACK_SWITCH = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"


@dataclass(frozen=True)
class LocalRayCluster:
    address: str  # what another driver passes as ``--ray-address``
    temp_dir: str
    num_cpus: int

    def worker_env(self) -> dict[str, str]:
        """Environment for a driver subprocess joining this instance."""
        return {_LOOPBACK_SWITCH: "0"}


@contextlib.contextmanager
def local_ray_cluster(
    num_cpus: int = 2,
    *,
    env: Mapping[str, str] | None = None,
    object_store_mb: int = 256,
) -> Iterator[LocalRayCluster]:
    """Start Ray in this process (``ray.init``) and stop it after.

    ``env`` is set while Ray starts, so every worker process of every job inherits it (an
    API key for the fake server, say); the driver's own environment is restored after.
    """
    saved = {key: os.environ.get(key) for key in (_LOOPBACK_SWITCH, *(env or {}))}
    os.environ[_LOOPBACK_SWITCH] = "0"
    os.environ.update(env or {})
    temp_dir = tempfile.mkdtemp(prefix="vt-ray-", dir="/tmp" if os.path.isdir("/tmp") else None)
    ray = _import_ray_on_loopback()
    if ray.is_initialized():
        raise RuntimeError("Ray is already initialized in this process")
    try:
        context = ray.init(
            address="local",
            num_cpus=num_cpus,
            num_gpus=0,
            include_dashboard=False,
            object_store_memory=object_store_mb * 1024 * 1024,
            log_to_driver=False,
            _temp_dir=temp_dir,
        )
        try:
            yield LocalRayCluster(context.address_info["gcs_address"], temp_dir, num_cpus)
        finally:
            ray.shutdown()
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        shutil.rmtree(temp_dir, ignore_errors=True)


def _import_ray_on_loopback() -> Any:
    already = "ray" in sys.modules
    import ray

    if already:  # imported before the switch was set: flip the constant it was read into
        from ray._private import ray_constants

        ray_constants.ENABLE_RAY_CLUSTER = False
    return ray


def ray_worker_pids(task_prefix: str) -> list[int]:
    """Processes now running a Ray task whose name starts with ``task_prefix`` (Ray titles a
    worker ``ray::<task name>`` while it runs one); Linux only."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                title = handle.read().split(b"\0", 1)[0].decode("utf-8", "replace")
        except OSError:
            continue
        if title.startswith(f"ray::{task_prefix}"):
            pids.append(int(entry))
    return pids
