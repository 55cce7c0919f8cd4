"""``videotapestry mcp``: the framework as an MCP server, for agents that reach tools via MCP.

Over stdio (the default: an MCP client starts this command and talks on its stdin/stdout),
or over streamable HTTP at ``http://HOST:PORT/mcp``, bound to 127.0.0.1 unless a token is
given (``--token`` or ``$VIDEOTAPESTRY_SERVE_TOKEN``; every request must then carry
``Authorization: Bearer <token>``). Only files under the ``--root`` folders are listed or
read (default: the current folder).

Exit status: 0 when the server stopped normally, 2 when it could not start (a root that is
not a folder, a non-loopback bind without a token, a bad config), 130 on Ctrl-C.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from videotapestry.commands.common import AddConfigOptions, config_overrides, interrupted


def add_parser(subparsers: argparse._SubParsersAction, add_config: AddConfigOptions) -> None:
    parser = subparsers.add_parser(
        "mcp",
        help="serve the tools (list, build a memory, answer, read a trace) to MCP clients",
        description="An MCP server: tools to list the videos and memories under the roots, "
        "build a memory (with progress notifications), answer a question with citations and "
        "read a saved trace; each memory's tree as a resource.",
        epilog="exit status: 0 stopped, 2 could not start, 130 Ctrl-C",
    )
    parser.add_argument(
        "--root",
        action="append",
        default=[],
        metavar="DIR",
        help="a folder the server may read and write under (repeatable; default: .)",
    )
    parser.add_argument("--transport", choices=("stdio", "http"), default="stdio")
    parser.add_argument("--host", default="127.0.0.1", help="http: the address to listen on")
    parser.add_argument("--port", type=int, default=8765, help="http: the port (default 8765)")
    parser.add_argument(
        "--token",
        help="http: the bearer token every request must carry (required off loopback; "
        "default $VIDEOTAPESTRY_SERVE_TOKEN)",
    )
    parser.add_argument(
        "--traces",
        metavar="DIR",
        help="where answers' traces are saved, under a root (default "
        "<first root>/videotapestry-traces)",
    )
    add_config(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from videotapestry.config import load_config
    from videotapestry.serve.access import BearerTokenMiddleware, bind_token
    from videotapestry.serve.limits import BodySizeLimit
    from videotapestry.serve.mcp_server import McpSettings, create_mcp_server, default_traces_dir
    from videotapestry.serve.roots import Roots

    token = bind_token(args.host, args.token) if args.transport == "http" else None
    roots = Roots.of(args.root or ["."])
    config = load_config(args.config, profile=args.profile, overrides=config_overrides(args))
    traces = Path(args.traces).absolute() if args.traces else default_traces_dir(roots)
    server = create_mcp_server(McpSettings(config=config, roots=roots, traces_dir=traces))
    try:
        if args.transport == "stdio":
            server.run("stdio")
            return 0
        import uvicorn

        app = server.streamable_http_app(host=args.host)
        limited = BodySizeLimit(app, max_bytes=config.serve.max_request_bytes)
        asgi = BearerTokenMiddleware(limited, token) if token else limited
        print(
            f"videotapestry mcp: serving http://{args.host}:{args.port}/mcp"
            + (" (token required)" if token else ""),
            file=sys.stderr,
            flush=True,
        )
        uvicorn.Server(
            uvicorn.Config(asgi, host=args.host, port=args.port, log_level="warning")
        ).run()
        return 0
    except KeyboardInterrupt:
        return interrupted("the MCP server stopped")
