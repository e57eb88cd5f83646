"""The Lua scripts' text, read once per store from the package (``<package>/lua/<name>``).

A line ``-- include: <file>`` is replaced by that file of the same folder: a fragment that
defines ``local`` functions several scripts share (``fenced_events.lua``: the fenced append of
a table's events), so the logic is written once and each script stays one self-contained
``EVAL`` with its own header (KEYS, ARGV, the return value).
"""

from __future__ import annotations

import importlib.resources
import re
from functools import cache

_INCLUDE = re.compile(r"^-- include: (\S+)$", re.MULTILINE)


@cache
def load_script(name: str, package: str = "server.store") -> str:
    """The text of the script ``lua/<name>`` of ``package``, its includes expanded."""
    folder = importlib.resources.files(package).joinpath("lua")

    def expand(text: str, seen: tuple[str, ...]) -> str:
        def include(match: re.Match[str]) -> str:
            fragment = match.group(1)
            if fragment in seen:
                raise ValueError(f"{name}: {fragment} includes itself")
            return expand(folder.joinpath(fragment).read_text("utf-8"), (*seen, fragment))

        return _INCLUDE.sub(include, text)

    return expand(folder.joinpath(name).read_text("utf-8"), (name,))
