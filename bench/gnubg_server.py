# Runs inside GNU Backgammon (gnubg -t -q -p bench/gnubg_server.py): reads JSON requests
# on stdin, one per line, and writes "@@" + a JSON answer per request on stdout.
#   {"op": "eval", "boards": [[b0, b1], ...]}  b1 = the side on roll (25 entries: points
#       1..24, bar); answers, per board, the outputs of the side NOT on roll (b0) and
#       its cubeless equity, gnubg 0-ply.
#   {"op": "best", "board": [b0, b1], "dice": [d1, d2]}  gnubg's 0-ply play for b1:
#       [[from, to], ...] (25 = bar, 0 = off).
# For the benchmarks of bench/ only (the product never runs GNU Backgammon).
from __future__ import annotations

import json
import sys
from typing import Any

import gnubg  # type: ignore[import-not-found]

CUBE = gnubg.cubeinfo(1, -1, 0, 0, (0, 0), 0, 0)
EVAL = gnubg.evalcontext(0, 0, 0, 1, 0.0)


def answer(request: dict[str, Any]) -> Any:
    if request["op"] == "eval":
        out = []
        for b0, b1 in request["boards"]:
            if sum(b0) == 0:  # the side that moved has borne everything off
                gammon = sum(b1) == 15
                bg = gammon and any(b1[18:25])
                out.append([1.0, float(gammon), float(bg), 0.0, 0.0,
                            1.0 + gammon + bg])
                continue
            w, wg, wbg, lg, lbg, e = gnubg.evaluate((tuple(b0), tuple(b1)), CUBE, EVAL)
            out.append([1.0 - w, lg, lbg, wg, wbg, -e])
        return out
    if request["op"] == "best":
        b0, b1 = request["board"]
        move = gnubg.findbestmove((tuple(b0), tuple(b1)), CUBE, EVAL,
                                  tuple(request["dice"]))
        return [[move[i], move[i + 1]] for i in range(0, len(move), 2) if move[i] or
                move[i + 1]]
    raise ValueError(request["op"])


for line in sys.stdin:
    line = line.strip()
    if not line:
        continue
    sys.stdout.write("@@" + json.dumps(answer(json.loads(line))) + "\n")
    sys.stdout.flush()
