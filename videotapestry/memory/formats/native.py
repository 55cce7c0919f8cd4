"""The native on-disk memory: a versioned directory of JSON files and one .npy array.

Layout (``SCHEMA_VERSION`` 1)::

    memory.json          schema_version, nodes, edges (typed relations), unification, clips
    manifest.json        schema_version, source, embedding model, video fingerprint, counts …
    embeddings.npy       float32 (n, d) node vectors, optional
    embedding_ids.json   {"model", "digest", "ids"}: the row order of embeddings.npy

Nothing is pickled (arrays load with ``allow_pickle=False``), so a memory downloaded from
someone else cannot run code. Every file is written to a temporary file and moved into place
with ``os.replace``, and the manifest is written last, so an interrupted save never leaves a
half-written file behind. A memory records the fingerprint of the video it was built from;
loading it for a different video is refused instead of silently answering about the wrong one.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any, TypeGuard

import numpy as np
from pydantic import TypeAdapter, ValidationError

from videotapestry.errors import MemoryFormatError
from videotapestry.files import write_atomic, write_json_atomic
from videotapestry.memory.formats.json_files import read_json
from videotapestry.memory.live import resolve_memory_path
from videotapestry.memory.manifest import SCHEMA_VERSION, check_fingerprint, new_manifest
from videotapestry.memory.types import (
    NODE_KINDS,
    AnyNode,
    Clip,
    EntityGroup,
    EntityNode,
    EventNode,
    MacroEvent,
    MemoryManifest,
    MemoryNode,
    NodeEmbeddings,
    OCRTextNode,
    Relation,
    RootEvent,
    SuperEvent,
)
from videotapestry.memory.video_memory import VideoMemory

MEMORY_FILE = "memory.json"
MANIFEST_FILE = "manifest.json"
EMBEDDINGS_FILE = "embeddings.npy"
EMBEDDING_IDS_FILE = "embedding_ids.json"

_NODE = TypeAdapter(MemoryNode)
_RELATION = TypeAdapter(Relation)
_GROUP = TypeAdapter(EntityGroup)
_CLIP = TypeAdapter(Clip)


def is_native_memory(path: str | Path) -> bool:
    try:
        path = resolve_memory_path(path)
    except MemoryFormatError:
        return False
    return (path / MEMORY_FILE).is_file() and (path / MANIFEST_FILE).is_file()


class NativeFormat:
    """Our own format, as a ``MemoryFormat``: the one every other format is converted to."""

    name = "native"
    description = "a videotapestry memory (memory.json + manifest.json)"

    def detect(self, path: Path) -> bool:
        return is_native_memory(path)

    def read(self, path: Path, *, expected_fingerprint: str | None = None) -> VideoMemory:
        return load_memory(path, expected_fingerprint=expected_fingerprint)

    def write(self, memory: VideoMemory, path: Path) -> Path:
        save_memory(memory, path)
        return path

    def hint(self, path: Path) -> str | None:
        return None


# --------------------------------------------------------------------------- saving


def save_memory(memory: VideoMemory, path: str | Path) -> MemoryManifest:
    """Write ``memory`` (and its embeddings, if any) as a native directory; returns the manifest.

    ``path`` may be new, empty, or an existing memory directory (then it is overwritten).
    """
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise MemoryFormatError(f"cannot save a memory to {path}: it is a file, not a directory")
    if path.is_dir() and any(path.iterdir()) and not (path / MANIFEST_FILE).is_file():
        raise MemoryFormatError(
            f"refusing to save a memory into {path}: the directory is not empty and is not a "
            "videotapestry memory; choose a new or empty directory"
        )
    path.mkdir(parents=True, exist_ok=True)
    embeddings = memory.embeddings
    manifest = (memory.manifest or new_manifest("videotapestry")).model_copy(
        update={
            "schema_version": SCHEMA_VERSION,
            "counts": memory.counts(),
            "embedding_model": embeddings.model_name if embeddings is not None else None,
        }
    )
    if embeddings is not None:
        buffer = io.BytesIO()
        np.save(buffer, np.ascontiguousarray(embeddings.vectors), allow_pickle=False)
        write_atomic(path / EMBEDDINGS_FILE, buffer.getvalue())
        ids_doc = {
            "model": embeddings.model_name,
            "digest": embeddings.digest,
            "ids": list(embeddings.ids),
        }
        write_json_atomic(path / EMBEDDING_IDS_FILE, ids_doc)
    else:
        for name in (EMBEDDINGS_FILE, EMBEDDING_IDS_FILE):
            (path / name).unlink(missing_ok=True)
    write_json_atomic(path / MEMORY_FILE, memory_document(memory))
    write_json_atomic(path / MANIFEST_FILE, manifest.model_dump(mode="json"))
    return manifest


def memory_document(memory: VideoMemory) -> dict[str, Any]:
    """The content of memory.json: plain JSON data, nodes and relations in a stable order."""
    return {
        "schema_version": SCHEMA_VERSION,
        "root_id": memory.root.id,
        "nodes": [n.model_dump(mode="json") for n in _hierarchy_order(memory)],
        "edges": [r.model_dump(mode="json") for r in memory.relations()],
        "unification": [g.model_dump(mode="json") for g in memory.unification],
        "clips": [c.model_dump(mode="json") for c in memory.clips],
    }


def _hierarchy_order(memory: VideoMemory) -> list[AnyNode]:
    ordered: list[AnyNode] = [memory.root]
    for super_event in memory.super_events():
        ordered.append(super_event)
        for macro in memory.macro_events(super_event.id):
            ordered.append(macro)
            ordered.extend(memory.children(macro.id))
    return ordered


# --------------------------------------------------------------------------- loading


def load_memory(path: str | Path, *, expected_fingerprint: str | None = None) -> VideoMemory:
    """Read a native memory directory, refusing one built from a different video.

    ``expected_fingerprint`` is the fingerprint of the video the memory will be used with
    (``videotapestry.video.fingerprint``). A memory that records no fingerprint (for example
    one imported from MemDreamer without ``--fingerprint``) cannot be checked and is accepted
    with a warning.
    """
    path = resolve_memory_path(path)
    if not path.is_dir():
        raise MemoryFormatError(f"memory directory {path} does not exist")
    manifest_file = path / MANIFEST_FILE
    if not manifest_file.is_file():
        raise MemoryFormatError(
            f"{path} is not a videotapestry memory directory: {MANIFEST_FILE} is missing"
        )
    manifest = read_manifest(path)
    check_fingerprint(manifest, expected_fingerprint, origin=str(path))
    memory_file = path / MEMORY_FILE
    if not memory_file.is_file():
        raise MemoryFormatError(f"{path}: {MEMORY_FILE} is missing")
    memory = parse_memory_document(read_json(memory_file), memory_file)
    memory = memory.with_manifest(manifest)
    embeddings = load_embeddings(path)
    return memory.with_embeddings(embeddings) if embeddings is not None else memory


def read_manifest(path: str | Path) -> MemoryManifest:
    """The validated manifest.json of a native memory directory."""
    manifest_file = resolve_memory_path(path) / MANIFEST_FILE
    manifest_data = read_json(manifest_file)
    _check_version(manifest_data, manifest_file)
    return _validate(TypeAdapter(MemoryManifest), manifest_data, manifest_file, "")


def parse_memory_document(data: Any, origin: Path | str) -> VideoMemory:
    """Validate the content of memory.json into a ``VideoMemory``; errors name file and field."""
    if not isinstance(data, dict):
        raise MemoryFormatError(f"{origin}: expected a JSON object at the top level")
    _check_version(data, origin)
    nodes = [
        _validate(_NODE, item, origin, f"nodes[{i}]")
        for i, item in enumerate(_list(data, "nodes", origin))
    ]
    relations = [
        _validate(_RELATION, item, origin, f"edges[{i}]")
        for i, item in enumerate(_list(data, "edges", origin, required=False))
    ]
    groups = [
        _validate(_GROUP, item, origin, f"unification[{i}]")
        for i, item in enumerate(_list(data, "unification", origin, required=False))
    ]
    clips = [
        _validate(_CLIP, item, origin, f"clips[{i}]")
        for i, item in enumerate(_list(data, "clips", origin, required=False))
    ]
    roots = [n for n in nodes if isinstance(n, RootEvent)]
    if len(roots) != 1:
        raise MemoryFormatError(
            f"{origin}: field 'nodes' must hold one RootEvent, found {len(roots)}"
        )
    return VideoMemory(
        root=roots[0],
        super_events=[n for n in nodes if isinstance(n, SuperEvent)],
        macro_events=[n for n in nodes if isinstance(n, MacroEvent)],
        subgraph_nodes=[n for n in nodes if isinstance(n, (EntityNode, EventNode, OCRTextNode))],
        relations=relations,
        unification=groups,
        clips=clips,
        origin=str(origin),
    )


def _check_version(data: Any, origin: Path | str) -> None:
    if not isinstance(data, dict):
        raise MemoryFormatError(f"{origin}: expected a JSON object at the top level")
    version = data.get("schema_version")
    if version is None:
        raise MemoryFormatError(f"{origin}: field 'schema_version' is missing")
    if not isinstance(version, int) or isinstance(version, bool):
        raise MemoryFormatError(
            f"{origin}: field 'schema_version' must be an integer, got {version!r}"
        )
    if version != SCHEMA_VERSION:
        hint = "upgrade videotapestry" if version > SCHEMA_VERSION else "rebuild or re-import it"
        raise MemoryFormatError(
            f"{origin}: unknown schema_version {version} (this videotapestry reads version "
            f"{SCHEMA_VERSION}); {hint}"
        )


def _list(
    data: dict[str, Any], key: str, origin: Path | str, *, required: bool = True
) -> list[Any]:
    value = data.get(key)
    if value is None and not required:
        return []
    if not isinstance(value, list):
        got = "missing" if value is None else f"a {type(value).__name__}"
        raise MemoryFormatError(f"{origin}: field {key!r} must be a list, but it is {got}")
    return value


def _validate(adapter: TypeAdapter[Any], item: Any, origin: Path | str, where: str) -> Any:
    try:
        return adapter.validate_python(item)
    except ValidationError as exc:
        raise MemoryFormatError(describe_validation_error(exc, origin, where, item)) from None


def describe_validation_error(
    exc: ValidationError, origin: Path | str, where: str, item: Any = None
) -> str:
    """One line per problem: ``file: field nodes[3].time_range (node 'slot2_o1'): message``."""
    node_id = item.get("id") if isinstance(item, dict) else None
    label = f" (id {node_id!r})" if isinstance(node_id, str) else ""
    lines = []
    for error in exc.errors()[:5]:
        loc = [str(p) for p in error["loc"]]
        # Discriminated unions put the kind name first in the location; it is not a field.
        if loc and loc[0] in NODE_KINDS:
            loc = loc[1:]
        field_path = ".".join(p for p in (where, *loc) if p) or "(top level)"
        lines.append(f"{origin}: field {field_path}{label}: {error['msg']}")
    return "\n".join(lines)


def load_embeddings(path: str | Path) -> NodeEmbeddings | None:
    """The node vectors stored in a native memory directory (None when it stores none)."""
    path = Path(path)
    vectors_file, ids_file = path / EMBEDDINGS_FILE, path / EMBEDDING_IDS_FILE
    if not vectors_file.is_file() and not ids_file.is_file():
        return None
    if not (vectors_file.is_file() and ids_file.is_file()):
        present, missing = (
            (vectors_file, ids_file) if vectors_file.is_file() else (ids_file, vectors_file)
        )
        raise MemoryFormatError(
            f"{present} exists but {missing.name} is missing; delete {present.name} to recompute"
        )
    try:
        vectors = np.load(vectors_file, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise MemoryFormatError(
            f"{vectors_file} is not a plain numeric .npy array ({exc}); delete it to recompute"
        ) from None
    ids_doc = read_json(ids_file)
    if not isinstance(ids_doc, dict):
        raise MemoryFormatError(f"{ids_file}: expected a JSON object with 'model' and 'ids'")
    model, digest, ids = ids_doc.get("model"), ids_doc.get("digest", ""), ids_doc.get("ids")
    if not isinstance(model, str) or not model:
        raise MemoryFormatError(f"{ids_file}: field 'model' must name the embedding model")
    if not _is_str_list(ids):
        raise MemoryFormatError(f"{ids_file}: field 'ids' must be a list of node id strings")
    if vectors.dtype.kind != "f":
        raise MemoryFormatError(
            f"{vectors_file}: expected float vectors, got dtype {vectors.dtype}"
        )
    if vectors.ndim != 2 or vectors.shape[0] != len(ids):
        raise MemoryFormatError(
            f"{vectors_file}: shape {vectors.shape} does not match the {len(ids)} ids in "
            f"{ids_file.name}; delete both files to recompute"
        )
    return NodeEmbeddings(model, tuple(ids), vectors, str(digest))


def _is_str_list(value: Any) -> TypeGuard[list[str]]:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)
