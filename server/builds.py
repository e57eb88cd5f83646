"""Which build of each compiled module runs: the mypyc extension or the ``.py`` (docs/wire.md).

``setup.py`` compiles the modules of :data:`COMPILED` with mypyc when it can (a C compiler and
mypyc present, ``TABLE42_NO_MYPYC`` unset) into extension modules next to their sources, which
Python then imports instead of the ``.py`` files, and writes ``<module>.build`` beside each
with the SHA-256 of the source it compiled. An extension built from another source (a ``git
pull`` or a merge changed the ``.py`` since) would run old code, or fail to import names added
since, so it is not used: :func:`install` (run by ``server/__init__.py``) puts a finder first
on ``sys.meta_path`` that loads the modules from their ``.py`` files (all of them: they are
compiled as one group that calls itself natively), and a warning says to build again
(``python3 setup.py build_ext --inplace``). Without a ``.build`` stamp the extension is
used. The compiled and the pure build behave the same (tests/rules/test_rules_builds.py).
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

log = logging.getLogger(__name__)

COMPILED: tuple[str, ...] = (
    "server/rules/moves.py",
    "server/rules/game_values.py",
    "server/rules/game.py",
    "server/rules/gnubg.py",
    "server/protocol/lean.py",
    "server/tables/model.py",
    "server/tables/admission.py",
    "server/tables/clocks.py",
    "server/tables/events.py",
    "server/tables/commands.py",
    "server/tables/replay.py",
    "server/tables/machine.py",
)
"""The sources ``setup.py`` compiles, from the repository root; each must type-check under
mypyc (no monkeypatching of its names, no interpreted subclasses of its classes)."""

ROOT = Path(__file__).resolve().parent.parent


def module_name(source: str) -> str:
    return source[:-3].replace("/", ".")


def source_hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def build_of(source: str, root: Path = ROOT) -> str:
    """``"compiled"``, ``"pure"`` or ``"pure (stale build)"`` for one of :data:`COMPILED`."""
    path = root / source
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        compiled = path.with_name(path.stem + suffix)
        if not compiled.exists():
            continue
        stamp = path.with_suffix(".build")
        if not path.exists() or not stamp.exists():
            return "compiled"
        if stamp.read_text("ascii").strip() == source_hash(path):
            return "compiled"
        return "pure (stale build)"
    return "pure"


class _SourceFirst(importlib.abc.MetaPathFinder):
    """Finds the modules whose extension is stale at their ``.py``."""

    def __init__(self, sources: dict[str, Path]) -> None:
        self.sources = sources

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        del path, target
        source = self.sources.get(fullname)
        return None if source is None else importlib.util.spec_from_file_location(
            fullname, source)


class _GroupRuntime(importlib.abc.MetaPathFinder):
    """Finds the compiled group's shared runtime (``<hash>__mypyc``, at the top of the
    checkout) when the top of the checkout is not on ``sys.path``: an editable install maps
    only the runtime of the group it built, and adding a module to :data:`COMPILED` renames
    the group, so a script run from elsewhere after ``build_ext --inplace`` would not find
    the new one."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        del target
        if path is not None or not fullname.endswith("__mypyc"):
            return None
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            file = self.root / (fullname + suffix)
            if file.exists():
                return importlib.util.spec_from_file_location(fullname, file)
        return None


BUILDS: dict[str, str] = {}
"""Module name -> its build, once :func:`install` ran."""


def install(root: Path = ROOT) -> dict[str, str]:
    """Decide each module's build (before any of them is imported) and make the stale ones
    load from source; the builds by module name."""
    if BUILDS:
        return BUILDS
    builds = {module_name(source): build_of(source, root) for source in COMPILED}
    stale = [name for name, build in builds.items() if build == "pure (stale build)"]
    if stale:
        # The modules are compiled together (one mypyc group: they call each other natively),
        # so one stale module sends every compiled one back to its .py.
        log.warning("the compiled %s built from another source: the table core runs as "
                    "Python; rebuild it with 'python3 setup.py build_ext --inplace'",
                    ", ".join(stale))
        for name, build in builds.items():
            if build == "compiled":
                builds[name] = "pure (stale build)"
        sys.meta_path.insert(0, _SourceFirst({
            module_name(source): root / source for source in COMPILED}))
    elif "compiled" in builds.values():
        sys.meta_path.append(_GroupRuntime(root))  # after the usual finders
    BUILDS.update(builds)
    return BUILDS
