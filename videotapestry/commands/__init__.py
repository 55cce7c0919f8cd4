"""One module per ``videotapestry`` sub-command, each with ``add_parser`` and ``run``; the
shared options and output helpers are in ``common``. ``videotapestry.cli`` lists them."""
