"""Which build of the move generator runs (see docs/wire.md).

``setup.py`` compiles ``moves.py`` with mypyc into an extension module next to it, which
Python then imports instead of the ``.py``, and writes ``moves.build`` with the SHA-256 of the
source it compiled. An extension built from another source (a ``git pull`` or a merge changed
``moves.py`` since) would run old code, or fail to import names added since, so it is not
used: the ``.py`` is loaded under the module's name and a warning says to build again
(``python3 setup.py build_ext --inplace``). Without ``moves.build`` the extension is used.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import logging
import sys
from pathlib import Path

log = logging.getLogger(__name__)

MODULE = "server.rules.moves"


def select_moves_build() -> str:
    """``"compiled"``, ``"pure"``, or ``"pure (stale build)"``; call before importing moves."""
    here = Path(__file__).resolve().parent
    source = here / "moves.py"
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        compiled = here / f"moves{suffix}"
        if not compiled.exists():
            continue
        stamp = here / "moves.build"
        if not source.exists() or not stamp.exists():
            return "compiled"
        if stamp.read_text("ascii").strip() == source_hash(source):
            return "compiled"
        if MODULE not in sys.modules:
            spec = importlib.util.spec_from_file_location(MODULE, source)
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            sys.modules[MODULE] = module
            spec.loader.exec_module(module)
        log.warning("%s was built from another moves.py: running the .py; rebuild it with "
                    "'python3 setup.py build_ext --inplace'", compiled.name)
        return "pure (stale build)"
    return "pure"


def source_hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


MOVES_BUILD = select_moves_build()
