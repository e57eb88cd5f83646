"""Which build of the move generator runs (see :mod:`server.builds`, which decides it for
every compiled module): ``"compiled"``, ``"pure"`` or ``"pure (stale build)"``."""

from __future__ import annotations

from server.builds import install

MOVES_BUILD = install()["server.rules.moves"]
