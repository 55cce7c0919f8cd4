"""The frame route (issue 39, item 5): one JPEG frame of a served video, the thumbnail of a
cited moment. A real ``videotapestry serve`` on 127.0.0.1 over a root of small generated
videos whose scenes change every 10 s, called over real HTTP; the token check in process.
"""

from __future__ import annotations

import io
import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image
from serve_support import Server, start_server

pytestmark = pytest.mark.slow

#: Three 10 s scenes: 30 s, 320x180, a new picture every 10 s.
SCENES_S = 30


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    from videotapestry.testing.media import make_test_video

    base = tmp_path_factory.mktemp("frames")
    root = base / "root"
    make_test_video(root / "scenes.mp4", SCENES_S, fps=2, size=(320, 180), scene_s=10)
    make_test_video(root / "wide.mp4", 2, fps=2, size=(1280, 720), scene_s=1)
    (root / "notes.mp4").write_bytes(b"not a video at all")
    (base / "outside.mp4").write_bytes(b"not for you")
    (root / "outside.mp4").symlink_to(base / "outside.mp4")
    server = start_server(root, base / "data")
    try:
        yield server
    finally:
        server.stop()


def fetch(server: Server, query: str) -> tuple[int, dict[str, str], bytes]:
    try:
        with urllib.request.urlopen(f"{server.url}/api/frame?{query}", timeout=60) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as refused:
        return refused.code, dict(refused.headers), refused.read()


def picture(body: bytes) -> Image.Image:
    image = Image.open(io.BytesIO(body))
    assert image.format == "JPEG"
    return image.convert("RGB")


def test_a_frame_is_a_jpeg_of_the_asked_width_cached_by_the_browser(served: Server) -> None:
    status, headers, body = fetch(served, "path=scenes.mp4&t=4.5&w=160")
    assert status == 200, body
    assert headers["content-type"] == "image/jpeg"
    assert "max-age=" in headers["cache-control"] and "private" in headers["cache-control"]
    assert picture(body).size == (160, 90)
    # the default width, and the same frame again (from the server's cache: the same bytes)
    assert picture(fetch(served, "path=scenes.mp4&t=4.5")[2]).size == (320, 180)
    assert fetch(served, "path=scenes.mp4&t=4.5&w=160")[2] == body


def test_the_width_is_capped_by_the_route_and_by_the_video(served: Server) -> None:
    from videotapestry.serve.operations import MAX_FRAME_WIDTH

    assert picture(fetch(served, "path=wide.mp4&t=0&w=5000")[2]).size == (MAX_FRAME_WIDTH, 360)
    assert picture(fetch(served, "path=scenes.mp4&t=0&w=5000")[2]).size == (320, 180)
    status, _, body = fetch(served, "path=scenes.mp4&t=0&w=2")
    assert status == 422 and "Traceback" not in body.decode()


def test_times_in_different_scenes_give_different_frames(served: Server) -> None:
    def pixels(t: float) -> np.ndarray:
        status, _, body = fetch(served, f"path=scenes.mp4&t={t}&w=160")
        assert status == 200, body
        return np.asarray(picture(body), dtype=np.int16)

    first, same_scene, second, third = pixels(2), pixels(7), pixels(12), pixels(25)
    for other in (second, third):
        assert np.abs(first - other).mean() > 10
    assert np.abs(second - third).mean() > 10
    # within a scene the picture barely moves: the route shows the frame at the asked time
    assert np.abs(first - same_scene).mean() < np.abs(first - second).mean()


@pytest.mark.parametrize(
    ("t", "says"),
    [
        ("-1", "not a time in the video"),
        ("nan", "not a time in the video"),
        ("inf", "not a time in the video"),
        ("30.5", "past the end of scenes.mp4, which is 30.000 s long"),
        ("99999", "past the end"),
    ],
)
def test_a_time_outside_the_video_is_a_400_that_says_why(served: Server, t: str, says: str) -> None:
    status, headers, body = fetch(served, f"path=scenes.mp4&t={t}")
    assert status == 400, body
    assert headers["content-type"] == "application/json"
    assert says in json.loads(body)["detail"]


def test_the_last_moment_of_the_video_is_its_last_frame(served: Server) -> None:
    status, _, body = fetch(served, f"path=scenes.mp4&t={SCENES_S}&w=160")
    assert status == 200, body
    end = np.asarray(picture(body), dtype=np.int16)
    before = np.asarray(picture(fetch(served, "path=scenes.mp4&t=29.5&w=160")[2]), np.int16)
    assert np.abs(end - before).mean() < 3


@pytest.mark.parametrize(
    "query",
    [
        "path=../../etc/passwd&t=1",
        "path=/etc/passwd&t=1",
        "path=..%2F..%2Fetc%2Fpasswd&t=1",
        "path=outside.mp4&t=1",
        "path=nosuch.mp4&t=1",
    ],
)
def test_a_path_outside_the_roots_or_unknown_is_refused(served: Server, query: str) -> None:
    status, _, body = fetch(served, query)
    assert status == 403, body
    assert "not under the server's roots" in json.loads(body)["detail"]


def test_what_is_not_a_video_is_refused_with_a_message(served: Server) -> None:
    status, _, body = fetch(served, "path=.&t=1")
    assert status == 403 and "not a video file" in json.loads(body)["detail"]
    status, _, body = fetch(served, "path=notes.mp4&t=1")
    assert 400 <= status < 500, body
    assert "notes.mp4" in json.loads(body)["detail"]
    status, _, body = fetch(served, "path=scenes.mp4")
    assert status == 422 and "Traceback" not in body.decode()


def test_a_server_with_a_token_wants_it_for_a_frame_too(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from videotapestry.config import load_config
    from videotapestry.serve.app import ServeSettings, create_app
    from videotapestry.serve.roots import Roots
    from videotapestry.testing.media import make_test_video

    make_test_video(tmp_path / "root" / "clip.mp4", 2, fps=2, size=(160, 90), scene_s=1)
    settings = ServeSettings(
        load_config(None, profile="offline"),
        Roots.of([tmp_path / "root"]),
        tmp_path / "data",
        token="s3cret",
    )
    # no lifespan: the route needs no job runner, and the check runs before any route
    client: Any = TestClient(create_app(settings), base_url="http://127.0.0.1:8000")
    refused = client.get("/api/frame?path=clip.mp4&t=0")
    assert refused.status_code == 401 and "token" in refused.json()["detail"]
    given = client.get(
        "/api/frame?path=clip.mp4&t=0&w=80", headers={"Authorization": "Bearer s3cret"}
    )
    assert given.status_code == 200 and given.headers["content-type"] == "image/jpeg"
    assert picture(given.content).size == (80, 45)
