"""Loading a Hugging Face Hub model: the local cache first, then one quick look at the hub.

Left to themselves, sentence-transformers and faster-whisper ask the hub about every file
of a model before they look in the cache, and retry each request with backoff: with no
network a first run spends over a minute in retries and then reports a library error that
does not say how to run without the download. ``load_hub_model`` orders it the other way.

1. A model whose snapshot is in the local cache loads from that snapshot folder with
   ``local_files_only=True``: no hub request at all, not even the "is there a newer
   revision" one. (Loading by name with ``local_files_only`` is not enough: huggingface_hub
   2.x still fetches its agent registry from the endpoint while building request headers.)
2. Otherwise one request to the hub endpoint, bounded by ``PROBE_TIMEOUT_S`` (also when
   name resolution itself hangs). No answer, or ``HF_HUB_OFFLINE`` set, raises the caller's
   own error type at once, naming the model, the cache that was searched and the setting
   that avoids the download.
3. Otherwise the library downloads as usual.

``HF_HUB_CACHE``/``HF_HOME``/``HF_ENDPOINT``/``HF_HUB_OFFLINE`` are read when a model is
loaded, not when huggingface_hub was imported, and the cache directory found here is passed
on to the library, so the check and the load always look in the same place.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

DEFAULT_ENDPOINT = "https://huggingface.co"
PROBE_TIMEOUT_S = 3.0
"""Longest wait for the hub to answer before it counts as unreachable."""

_TRUE = {"1", "ON", "YES", "TRUE"}  # what huggingface_hub accepts for HF_HUB_OFFLINE
OFFLINE_MODE = "HF_HUB_OFFLINE is set"


def hub_cache_dir(override: str | None = None) -> str:
    """The hub cache directory in force now; ``override`` (e.g. a library's own setting) wins."""
    if override:
        return override
    for variable in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if os.environ.get(variable):
            return os.environ[variable]
    if os.environ.get("HF_HOME"):
        return os.path.join(os.environ["HF_HOME"], "hub")
    from huggingface_hub import constants

    return str(constants.HF_HUB_CACHE)


def hub_endpoint() -> str:
    """The hub endpoint in force now (``HF_ENDPOINT``, else huggingface_hub's default)."""
    endpoint = os.environ.get("HF_ENDPOINT")
    if not endpoint:
        from huggingface_hub import constants

        endpoint = constants.ENDPOINT or DEFAULT_ENDPOINT  # an empty HF_ENDPOINT at import
    return endpoint.rstrip("/")


def hub_offline() -> bool:
    """Whether ``HF_HUB_OFFLINE`` forbids hub requests (now, or when the library was imported)."""
    if os.environ.get("HF_HUB_OFFLINE", "").upper() in _TRUE:
        return True
    from huggingface_hub import constants

    return bool(constants.HF_HUB_OFFLINE)


def cached_snapshot(repo_ids: Sequence[str], cache_dir: str) -> tuple[str, Path] | None:
    """The first of ``repo_ids`` with a snapshot in ``cache_dir``, and its folder; no network.

    A snapshot folder can be incomplete (an interrupted download), so callers still load
    from it inside a ``try``; see ``load_cache_first``.
    """
    from huggingface_hub import snapshot_download

    for repo_id in repo_ids:
        try:
            folder = snapshot_download(repo_id, cache_dir=cache_dir, local_files_only=True)
        except Exception:  # not cached, or not a valid repo id: either way not usable locally
            continue
        return repo_id, Path(folder)
    return None


def hub_unreachable_reason(
    endpoint: str | None = None, timeout_s: float = PROBE_TIMEOUT_S
) -> str | None:
    """None when the hub answers one HEAD request within ``timeout_s``, else why not.

    Any HTTP status counts as an answer: only a connection that cannot be made means the
    download cannot work. The request goes through huggingface_hub's own HTTP client, so
    proxies and a custom client factory apply as they would to the download. It runs in a
    daemon thread because a blocked DNS lookup ignores the client's timeout.
    """
    if hub_offline():
        return OFFLINE_MODE
    url = endpoint or hub_endpoint()
    outcome: list[str | None] = []

    def probe() -> None:
        try:
            from huggingface_hub import get_session

            get_session().head(url, timeout=timeout_s)
            outcome.append(None)
        except Exception as exc:  # connection refused, DNS failure, timeout, proxy error
            outcome.append(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)

    worker = threading.Thread(target=probe, name="videotapestry-hub-probe", daemon=True)
    worker.start()
    worker.join(timeout_s + 0.5)  # the client's own timeout normally ends it first
    if not outcome:
        return f"no answer within {timeout_s:g} s"
    return outcome[0]


def unavailable_message(
    what: str, name: str, repo_id: str, cache_dir: str, reason: str, fix: str, local_error: str
) -> str:
    """The error text: which model, where it was looked for, why the hub is out, what to set."""
    shown = repr(name) if name == repo_id else f"{name!r} ({repo_id})"
    where = (
        f"is in the local cache ({cache_dir}) but did not load from it ({local_error})"
        if local_error
        else f"is not in the local Hugging Face cache ({cache_dir})"
    )
    hub = (
        OFFLINE_MODE
        if reason == OFFLINE_MODE
        else f"the hub at {hub_endpoint()} cannot be reached ({reason})"
    )
    return (
        f"{what} {shown} {where}, and {hub}. To run without network use {fix}, or "
        "--profile offline (which also replaces the vision-language model with the "
        f"rule-based offline one); or download it once where the hub is reachable: "
        f"hf download {repo_id}"
    )


def load_hub_model(
    source: str,
    *,
    what: str,
    repo_ids: Callable[[], Sequence[str]],
    cache_dir: str,
    load: Callable[[str], T],
    fix: str,
    error: type[Exception],
    timeout_s: float = PROBE_TIMEOUT_S,
) -> T:
    """Load ``source`` (a local directory or a hub name), the cache first; errors are ``error``.

    ``load`` gets a directory (``source`` itself, or the cached snapshot of a hub name),
    which it must read with local files only, or the hub name to download as usual.
    ``repo_ids`` gives the hub repositories the name may resolve to (the first is named in
    messages); ``fix`` is the setting that avoids the download, e.g.
    ``-o embedding.model=packaged:all-MiniLM-L6-v2``. A cached snapshot that fails to load
    (an interrupted download) is downloaded again when the hub answers, and reported with
    its load error when not. Whatever the library raises becomes ``error`` naming the model.
    """
    try:
        if Path(source).is_dir():
            return load(source)
        return _cache_then_hub(source, what, repo_ids(), cache_dir, load, fix, error, timeout_s)
    except error:
        raise
    except Exception as exc:  # the libraries raise many kinds; name the model instead
        hint = "" if Path(source).is_dir() else f". Without network use {fix}"
        raise error(f"cannot load {what} {source!r}: {exc}{hint}") from exc


def _cache_then_hub(
    name: str,
    what: str,
    repo_ids: Sequence[str],
    cache_dir: str,
    load: Callable[[str], T],
    fix: str,
    error: type[Exception],
    timeout_s: float,
) -> T:
    found = cached_snapshot(repo_ids, cache_dir)
    local_error = ""
    if found is not None:
        try:
            return load(str(found[1]))
        except Exception as exc:  # incomplete or corrupt snapshot: let the hub repair it
            first_line = (str(exc).strip().splitlines() or [""])[0][:300]
            local_error = f"{type(exc).__name__}: {first_line}"
    reason = hub_unreachable_reason(timeout_s=timeout_s)
    if reason is not None:
        repo_id = found[0] if found is not None else repo_ids[0]
        raise error(unavailable_message(what, name, repo_id, cache_dir, reason, fix, local_error))
    return load(name)
