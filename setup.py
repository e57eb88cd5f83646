"""Build hook: the table core (the modules listed in ``server/builds.py``: the legal-play
generator, the game, the lean event form and the table machine) is compiled with mypyc when it
can be; otherwise the same ``.py`` files run as they are.

- ``TABLE42_NO_MYPYC=1`` turns compilation off (``pip install -e .`` then builds nothing);
- no C compiler, or mypyc missing: a note on stderr, and a pure-Python install;
- a compilation that fails is skipped (the extensions are optional), never the install.

Everything else (name, dependencies, packages) is in pyproject.toml. See docs/wire.md.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import sys
import sysconfig
from typing import Any

from setuptools import setup


def _compiled_list() -> list[str]:
    """``server.builds.COMPILED``, read without importing the package."""
    spec = importlib.util.spec_from_file_location("table42_builds", "server/builds.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return list(module.COMPILED)


COMPILED = _compiled_list()


def _compiler_found() -> bool:
    cc = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
    return shutil.which(cc.split()[0]) is not None


def ext_modules() -> list[Any]:
    if os.environ.get("TABLE42_NO_MYPYC", "").strip() not in ("", "0"):
        return []
    if not _compiler_found():
        print("table42: no C compiler found; the table core runs as pure Python",
              file=sys.stderr)
        return []
    try:
        from mypyc.build import mypycify
    except ImportError:
        print("table42: mypyc not installed; the table core runs as pure Python",
              file=sys.stderr)
        return []
    try:
        extensions = mypycify(COMPILED, opt_level="3")
    except (Exception, SystemExit) as exc:  # mypyc exits on a type error it cannot compile
        print(f"table42: mypyc could not compile the table core ({exc!r}); it runs as pure "
              "Python", file=sys.stderr)
        return []
    for ext in extensions:
        ext.optional = True  # a failed compilation leaves the .py module in charge
    return list(extensions)


extensions = ext_modules()
setup(ext_modules=extensions)
if extensions:
    # What each compiled module was built from (server/builds.py ignores an extension
    # whose source has changed since). Written next to the sources (in-place and editable
    # builds); a wheel without it trusts its extension.
    for source in COMPILED:
        with open(source, "rb") as compiled:
            digest = hashlib.sha256(compiled.read()).hexdigest()
        with open(source[:-3] + ".build", "w", encoding="ascii") as stamp:
            stamp.write(digest + "\n")
