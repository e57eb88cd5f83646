"""``python -m rating_plugin``: the rating calculator (see :mod:`rating_plugin.cli`).

Ctrl-C before a command is done is one line on stderr and exit status 130 (the server's
``server/exits.py`` table; the plugin does not import the server)."""

from __future__ import annotations

import sys

from rating_plugin.cli import EXIT_INTERRUPTED, main

PROG = "python -m rating_plugin"

if __name__ == "__main__":
    try:
        sys.exit(main(prog=PROG))
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted (Ctrl-C)", file=sys.stderr)
        sys.exit(EXIT_INTERRUPTED)
