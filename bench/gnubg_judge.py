"""GNU Backgammon as a judge and an opponent for the benchmarks (never used by the product).

:class:`Judge` starts ``gnubg -t -q -p bench/gnubg_server.py`` (a script run by gnubg's
embedded Python) and talks to it with one JSON line per request on its stdin; answers are
the stdout lines starting with ``@@``. Evaluation is gnubg's cubeless 0-ply.

Boards are in this project's own numbering: per side 26 counts (0 off, 1..24 its points,
25 its bar); gnubg's board is each side's points 1..24 then its bar (25 entries), the side
not on roll first.

:meth:`Judge.cube_equities` asks for gnubg's 0-ply *cubeful* equities of a cube decision
(no double, double/take, double/drop; ``gnubg.cfevaluate``), money or match play.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

GNUBG = "/usr/games/gnubg"
SERVER = Path(__file__).with_name("gnubg_server.py")


@dataclass(frozen=True, slots=True)
class CubeItem:
    """A cube decision for gnubg: ``roller`` is on roll and may double (each side in its
    own numbering, 26 counts); ``owned``: ``roller`` owns the cube (else centred);
    ``length`` 0 is money play, else ``score`` is ``(roller's, other's)`` points in a
    match of that length (not the Crawford game)."""

    roller: Sequence[int]
    other: Sequence[int]
    cube: int = 1
    owned: bool = False
    length: int = 0
    score: tuple[int, int] = (0, 0)


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

    def cube_equities(self, items: Sequence[CubeItem]) -> list[list[float]]:
        """Per item: gnubg's 0-ply cubeful ``[no double, double/take, double/drop, scale]``
        for ``item.roller`` (on roll, before rolling, about to double), normalised per unit
        of the current cube (in a match: gnubg's normalised match equity); ``scale`` turns
        a normalised difference into points (money: the cube value) or match-winning
        chance. One request for all the items."""
        request = [{"board": [to_gnubg(i.other), to_gnubg(i.roller)], "cube": i.cube,
                    "owner": 0 if i.owned else -1, "length": i.length,
                    "score": [i.score[0], i.score[1]]} for i in items]
        result: list[list[float]] = self._ask({"op": "cube", "items": request})
        return result

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class JudgePool:
    """Several :class:`Judge` processes answering one batch together. Each evaluation call
    of gnubg's Python module waits about 10 ms for its worker thread (little CPU), so
    ``size`` processes each given a share of a batch cut its wall time about ``size``-fold."""

    def __init__(self, size: int, gnubg: str = GNUBG) -> None:
        self.judges = [Judge(gnubg) for _ in range(max(1, size))]
        self.pool = ThreadPoolExecutor(len(self.judges))

    def cube_equities(self, items: Sequence[CubeItem]) -> list[list[float]]:
        """:meth:`Judge.cube_equities` of ``items``, in order, shared out among the judges."""
        n = len(self.judges)
        share = -(-len(items) // n) if items else 0
        parts = [items[i * share:(i + 1) * share] for i in range(n)]
        answers = self.pool.map(lambda pair: pair[0].cube_equities(pair[1]) if pair[1] else [],
                                zip(self.judges, parts, strict=True))
        return [row for part in answers for row in part]

    def close(self) -> None:
        self.pool.shutdown()
        for judge in self.judges:
            judge.close()
