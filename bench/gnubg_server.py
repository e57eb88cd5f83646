# Runs inside GNU Backgammon (gnubg -t -q -p bench/gnubg_server.py): reads JSON requests
# on stdin, one per line, and writes "@@" + a JSON answer per request on stdout.
#   {"op": "eval", "boards": [[b0, b1], ...]}  b1 = the side on roll (25 entries: points
#       1..24, bar); answers, per board, the outputs of the side NOT on roll (b0) and
#       its cubeless equity, gnubg 0-ply.
#   {"op": "best", "board": [b0, b1], "dice": [d1, d2]}  gnubg's 0-ply play for b1:
#       [[from, to], ...] (25 = bar, 0 = off).
#   {"op": "cube", "items": [{"board": [b0, b1], "cube": c, "owner": o, "length": n,
#       "score": [s1, s0]}, ...]}  gnubg's 0-ply CUBEFUL equities of b1 (on roll, about
#       to double) per item: [no double, double/take, double/drop, scale]. ``owner`` -1
#       centred, 0 b1 owns it (1, b0 owns it, leaves b1 no double); ``length`` 0 is money
#       play, else a match with ``score`` [b1's, b0's] (never the Crawford game: a side at
#       length - 1 means post-Crawford). Money: no Jacoby rule, no beavers. The equities
#       are gnubg's normalised ones, per unit of the current cube (in a match, MWC mapped
#       linearly so that losing/winning the cube's points is -1/+1); ``scale`` turns a
#       normalised difference into points (money: the cube value) or into match-winning
#       chance (eq2mwc(1) - eq2mwc(0)).
# For the benchmarks of bench/ only (the product never runs GNU Backgammon).
from __future__ import annotations

import json
import sys
from typing import Any

import gnubg  # type: ignore[import-not-found]

CUBE = gnubg.cubeinfo(1, -1, 0, 0, (0, 0), 0, 0)
EVAL = gnubg.evalcontext(0, 0, 0, 1, 0.0)
# (cubeful, plies, deterministic, prune, noise): cubeful 0-ply, no noise
CUBEFUL = gnubg.evalcontext(1, 0, 0, 1, 0.0)


def cube_equities(item: dict[str, Any]) -> list[float]:
    b0, b1 = item["board"]
    length = int(item.get("length", 0))
    score = item.get("score") or [0, 0]
    cube = int(item["cube"])
    # cubeinfo(cube, owner, player on roll, match length, score, crawford, variant); the
    # player on roll is 0 = b1, so score is [b1's, b0's]
    info = gnubg.cubeinfo(cube, int(item["owner"]), 0, length, (int(score[0]), int(score[1])),
                          0, 0)
    info["jacoby"] = 0  # gnubg's default for money is on; the product plays without it
    info["beavers"] = 0
    info = gnubg.calcgammonprice(info)  # the gammon prices of the dict follow the Jacoby rule
    _best, no_double, take, drop, _code, _text = gnubg.cfevaluate(
        (tuple(b0), tuple(b1)), info, CUBEFUL)
    scale = (gnubg.eq2mwc(1.0, info) - gnubg.eq2mwc(0.0, info)) if length else float(cube)
    return [no_double, take, drop, scale]


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
    if request["op"] == "cube":
        return [cube_equities(item) for item in request["items"]]
    raise ValueError(request["op"])


for line in sys.stdin:
    line = line.strip()
    if not line:
        continue
    sys.stdout.write("@@" + json.dumps(answer(json.loads(line))) + "\n")
    sys.stdout.flush()
