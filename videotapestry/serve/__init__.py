"""Serving the framework: a REST API with durable jobs, a browser UI and an MCP server
(SPEC §13). Everything here is a client of ``videotapestry.api``; every path a request names
goes through :mod:`videotapestry.serve.roots`."""
