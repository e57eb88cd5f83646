"""The fenced blocks of README.md and docs/*.md, and how each is run (pure: no process).

A block is run by its language: ``sh`` as a bash script, ``console`` as its ``$ `` lines (the
rest is output), ``python`` as a script; ``json``/``jsonl`` must parse; ``text`` and ``http``
are output, never run. A block preceded, on the line just before its fence, by
``<!-- not run: REASON -->`` is never run.

The docs speak of a server on 127.0.0.1:8080 with its embedded Redis; :data:`REWRITES` points
them at the test's server instead. Nothing else of a block is changed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RUN = ("sh", "console", "python")
PARSED = ("json", "jsonl")
SHOWN = ("text", "http")
LANGUAGES = RUN + PARSED + SHOWN

_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>```+|~~~+)(?P<lang>[^`\s]*)[^`]*$")
_NOT_RUN = re.compile(r"^\s*<!--\s*not run:\s*(?P<reason>.*?)\s*-->\s*$")

#: (what the docs say, what the test's server is): the address of ``python -m server``, the
#: placeholder host of the examples, and the Redis URLs of a server's store.
REWRITES = (
    ("127.0.0.1:8080", "127.0.0.1:{port}"),
    ("localhost:8080", "127.0.0.1:{port}"),
    ("ws://host/ws", "ws://127.0.0.1:{port}/ws"),
    ("redis://127.0.0.1:6379/0", "{store}"),
    ("redis://...", "{store}"),
)


@dataclass(frozen=True)
class Block:
    path: Path
    line: int  # of the opening fence, 1-based
    lang: str
    text: str
    not_run: str | None  # the reason given by the marker, or None

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def doc_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def blocks(path: Path) -> list[Block]:
    """Every fenced block of ``path``, in order."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        fence, indent = opening["fence"], len(opening["indent"])
        end = i + 1
        while end < len(lines) and not lines[end].strip().startswith(fence):
            end += 1
        body = "\n".join(line[indent:] if line[:indent].isspace() else line.lstrip(" \t")
                         for line in lines[i + 1:end]) if indent else "\n".join(lines[i + 1:end])
        marker = _NOT_RUN.match(lines[i - 1]) if i else None
        found.append(Block(path, i + 1, opening["lang"], body + "\n",
                           marker["reason"] if marker else None))
        i = end + 1
    return found


def rewrite(text: str, port: int, store: str) -> str:
    for said, meant in REWRITES:
        text = text.replace(said, meant.format(port=port, store=store))
    return text


def console_commands(text: str) -> str:
    """The ``$ `` lines of a console block (with their ``\\`` continuations) as a script."""
    script: list[str] = []
    continued = False
    for line in text.splitlines():
        if continued or line.startswith("$ "):
            script.append(line if continued else line[2:])
            continued = line.rstrip().endswith("\\")
    return "\n".join(script) + "\n"


def script(block: Block, port: int, store: str) -> str:
    """What runs for ``block``: bash for ``sh``/``console``, Python for ``python``."""
    text = console_commands(block.text) if block.lang == "console" else block.text
    return rewrite(text, port, store)
