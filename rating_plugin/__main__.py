"""``python -m rating_plugin``: the rating calculator (see :mod:`rating_plugin.cli`)."""

from __future__ import annotations

import sys

from rating_plugin.cli import main

if __name__ == "__main__":
    sys.exit(main(prog="python -m rating_plugin"))
