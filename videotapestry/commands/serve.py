"""``videotapestry serve``: the web app, the REST API and their durable jobs (SPEC §13).

Only files under the ``--root`` folders are listed, read or streamed. The server listens on
127.0.0.1 unless told otherwise; any other ``--host`` needs a token (``--token`` or the
``VIDEOTAPESTRY_SERVE_TOKEN`` environment variable, as for ``videotapestry mcp``), checked on
every request. ``--sample`` serves the shipped sample video with the offline model (what
``make serve`` runs).

A damaged job store in the data directory is moved aside and a new one started (see
``serve.jobs``) before the server binds: what stops a start is only what the user must fix.

Exit status: 0 when stopped, 2 when it cannot start (a bad root, a bind without a token, a
data directory that is not a folder or cannot be written, an address already in use).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

from videotapestry.commands.common import AddConfigOptions, config_overrides
from videotapestry.errors import VideoTapestryError
from videotapestry.serve.access import TOKEN_ENV, bind_token


def add_parser(subparsers: argparse._SubParsersAction, add_config: AddConfigOptions) -> None:
    parser = subparsers.add_parser(
        "serve",
        help="serve the web app and REST API (videos, memories, questions, traces)",
        description="A browser UI and a REST API with durable jobs (build, ask) over the "
        "videos and memories under the --root folders.",
        epilog="exit status: 0 stopped, 2 could not start",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument(
        "--root",
        action="append",
        default=[],
        metavar="DIR",
        help="a folder whose videos and memories are served (repeatable)",
    )
    parser.add_argument("--token", help=f"required on every request (default: ${TOKEN_ENV} if set)")
    parser.add_argument(
        "--data-dir", metavar="DIR", help="job database and traces (default: serve.data_dir)"
    )
    parser.add_argument(
        "--sample",
        action="store_true",
        help="serve the shipped sample video (a library in the demo cache), offline model",
    )
    add_config(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import uvicorn

    from videotapestry.config import load_config
    from videotapestry.serve.app import ServeSettings, create_app
    from videotapestry.serve.roots import Roots

    token = bind_token(args.host, args.token)
    roots = list(args.root)
    overrides = config_overrides(args)
    profile = args.profile
    if args.sample:
        roots.append(str(_sample_library()))
        profile = profile or (None if args.config else "offline")
        cache = _sample_library().parent
        overrides = ["cache.enabled=true", f"cache.path={cache / 'responses.sqlite'}", *overrides]
    if not roots:
        raise VideoTapestryError("serve needs at least one --root DIR (or --sample)")
    config = load_config(args.config, profile=profile, overrides=overrides)
    settings = ServeSettings(
        config=config,
        roots=Roots.of(roots),
        data_dir=Path(args.data_dir or config.serve.data_dir or _default_data_dir()),
        token=token,
        allowed_hosts=(f"{f'[{args.host}]' if ':' in args.host else args.host}:{args.port}",),
    )
    open_data_dir(settings.data_dir)
    print(
        f"videotapestry: serving {', '.join(map(str, settings.roots.folders))} at "
        f"http://{args.host}:{args.port}/",
        file=sys.stderr,
        flush=True,
    )
    try:
        uvicorn.run(create_app(settings), host=args.host, port=args.port, log_level="warning")
    except SystemExit as exc:  # uvicorn's own exit: 1 or 3 when it could not start
        if exc.code in (0, None):
            return 0
        raise VideoTapestryError(
            f"the server could not start on {args.host}:{args.port} (the reason is above)"
        ) from None
    return 0


def open_data_dir(data_dir: Path) -> None:
    """Make the data directory and open its job store once before the server binds, so a
    data directory that cannot be used is one clear error, and a damaged store is moved
    aside (and said so) before the first request."""
    from videotapestry.serve.jobs import JobStore, JobStoreError

    if data_dir.exists() and not data_dir.is_dir():
        raise JobStoreError(
            f"data directory {data_dir} is not a folder; pass --data-dir a folder (new, or "
            "one a server made)"
        )
    try:
        (data_dir / "traces").mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise JobStoreError(
            f"data directory {data_dir} cannot be made: {exc.strerror} ({exc.filename}); "
            "pass --data-dir a folder this user can write"
        ) from None
    JobStore(data_dir).close()


def _default_data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "videotapestry" / "serve"


def _sample_library() -> Path:
    """A folder in the demo cache holding the shipped sample and its questions: a root of
    its own (the package folder is not written to, and a symlink out of a root is refused)."""
    from videotapestry.demo import DATA_DIR, sample_video_path
    from videotapestry.demo.runner import demo_cache_dir

    library = demo_cache_dir() / "serve-library"
    library.mkdir(parents=True, exist_ok=True)
    for source in (sample_video_path(), DATA_DIR / "questions.json"):
        target = library / source.name
        if not target.is_file() or target.stat().st_size != source.stat().st_size:
            shutil.copyfile(source, target)
    return library
