"""GNU Backgammon as a judge and an opponent for the benchmarks (never used by the product).

:class:`Judge` starts ``gnubg -t -q -p bench/gnubg_server.py`` (a script run by gnubg's
embedded Python) and talks to it with one JSON line per request on its stdin; answers are
the stdout lines starting with ``@@``. Evaluation is gnubg's cubeless 0-ply.

Boards are in this project's own numbering: per side 26 counts (0 off, 1..24 its points,
25 its bar); gnubg's board is each side's points 1..24 then its bar (25 entries), the side
not on roll first.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

GNUBG = "/usr/games/gnubg"
SERVER = Path(__file__).with_name("gnubg_server.py")


def to_gnubg(side: Sequence[int]) -> list[int]:
    return [int(side[p]) for p in range(1, 26)]


class Judge:
    def __init__(self, gnubg: str = GNUBG) -> None:
        self.proc = subprocess.Popen(
            [gnubg, "-t", "-q", "-p", str(SERVER)], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1,
        )

    def _ask(self, request: dict[str, Any]) -> Any:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError("gnubg judge exited")
            if line.startswith("@@"):
                return json.loads(line[2:])

    def evaluate_after(self, pairs: Sequence[tuple[Sequence[int], Sequence[int]]]
                       ) -> list[list[float]]:
        """For each ``(a, b)`` (``a`` just moved, ``b`` on roll): gnubg's 0-ply cubeless
        outputs for ``a`` (win, wg, wbg, lg, lbg) and its cubeless equity (6 numbers)."""
        boards = [[to_gnubg(a), to_gnubg(b)] for a, b in pairs]
        result: list[list[float]] = self._ask({"op": "eval", "boards": boards})
        return result

    def best_move(self, mover: Sequence[int], other: Sequence[int],
                  dice: tuple[int, int]) -> list[tuple[int, int]]:
        """gnubg's 0-ply best play for ``mover`` as ``(from, to)`` steps (25 bar, 0 off)."""
        steps = self._ask({"op": "best", "board": [to_gnubg(other), to_gnubg(mover)],
                           "dice": list(dice)})
        return [(int(s), int(t)) for s, t in steps]

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
