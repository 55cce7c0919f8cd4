"""The one path check the REST API, the UI and the MCP server share."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from videotapestry.serve.roots import PathOutsideRootsError, Roots


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Roots, Path, Path]:
    root = tmp_path / "root"
    (root / "videos").mkdir(parents=True)
    (root / "videos" / "a.mp4").write_bytes(b"x")
    (root / "mem" / "a").mkdir(parents=True)
    (root / "mem" / "a" / "memory.json").write_text("{}")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.mp4").write_bytes(b"s")
    (outside / "m").mkdir()
    (outside / "m" / "memory.json").write_text("{}")
    os.symlink(outside / "secret.mp4", root / "videos" / "link.mp4")
    os.symlink(outside, root / "out")
    return Roots.of([root]), root, outside


def test_paths_under_a_root_resolve_relative_or_absolute(tree: tuple[Roots, Path, Path]) -> None:
    roots, root, _ = tree
    assert roots.resolve("videos/a.mp4") == (root / "videos" / "a.mp4").resolve()
    assert roots.resolve(str(root / "videos" / "a.mp4")) == (root / "videos" / "a.mp4").resolve()
    assert roots.relative(roots.resolve("mem/a")) == "mem/a"


@pytest.mark.parametrize(
    "requested",
    [
        "../outside/secret.mp4",
        "videos/../../outside/secret.mp4",
        "..%2Foutside%2Fsecret.mp4",
        "%2E%2E/outside/secret.mp4",
        "videos/link.mp4",
        "out/secret.mp4",
        "/etc/passwd",
        "",
        "videos/a.mp4\x00.txt",
        "videos/missing.mp4",
    ],
)
def test_paths_leaving_the_roots_are_refused(
    tree: tuple[Roots, Path, Path], requested: str
) -> None:
    roots, _, _ = tree
    with pytest.raises(PathOutsideRootsError):
        roots.resolve(requested)


def test_absolute_path_of_an_outside_file_is_refused(tree: tuple[Roots, Path, Path]) -> None:
    roots, _, outside = tree
    with pytest.raises(PathOutsideRootsError):
        roots.resolve(str(outside / "secret.mp4"))


def test_listing_shows_only_what_lies_under_the_roots(tree: tuple[Roots, Path, Path]) -> None:
    roots, _, _ = tree
    assert [roots.relative(p) for p in roots.videos()] == ["videos/a.mp4"]
    assert [roots.relative(p) for p in roots.memories()] == ["mem/a"]


def test_a_root_that_is_not_a_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(PathOutsideRootsError, match="not a folder"):
        Roots.of([tmp_path / "nope"])
    with pytest.raises(PathOutsideRootsError, match="no root"):
        Roots.of([])
