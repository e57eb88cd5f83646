"""The review of a finished game: each decision's equity lost, each roll's luck, a summary
per player. Pure (numpy and the rules; no I/O beyond the weights file).

Input: the game's decisions in order (:class:`Turn`), built from a stored game's events
(:func:`turns_from_events`, the HTTP route) or from a ``.mat`` file
(:func:`server.rules.mat.import_mat` then :func:`turns_from_mat`, the command line).

Judged by the best evaluator the computer has, the top level's (``advanced``,
:mod:`server.bot.ladder`): the neural evaluator (:mod:`server.bot.neural`) with its search,
in cubeless money equity per unit of cube (EMG), whatever the cube and the match score
(``judge`` in the review says so, and ``search_depth``):

- a checker play: every play of the roll at 0 ply; the best ``SEARCH_CANDIDATES`` and the
  one played looked at 1 ply deep, the best ``DEEP_CANDIDATES`` of those and the one played
  2 ply deep (:mod:`server.bot.expert`); ``error`` = the best play's equity minus the
  chosen play's, each at the deepest ply it reached (0 when the best was played or the
  play was forced);
- the roll before it: ``luck`` = the 0-ply equity of the best play of the roll rolled minus the
  average over the 36 rolls of their best plays' equities (the opening roll: over the 30
  rolls that are not doubles), positive when the roll was good for the roller;
- a cube decision (double, no double, take, drop): the equities of its options from the
  cube model of :mod:`server.bot.cube` (``money_equities``), ``error`` = the best option's
  minus the chosen one's.

Per player: ``moves`` (unforced checker plays), ``error_total``, ``error_rate_memg`` (the
total error of all its decisions per unforced checker play, in thousandths: mEMG),
``luck_total`` and ``worst``: the indexes of its three costliest decisions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from server.bot.cube import money_equities
from server.bot.expert import (
    DEEP_CANDIDATES,
    SEARCH_CANDIDATES,
    SEARCH_WINDOW,
    reply_value,
    two_ply_value,
)
from server.bot.neural import (
    Array,
    IntArray,
    Net,
    default_net,
    equity,
    evaluate_batch,
    flip,
    roll_afterstates,
)
from server.rules import MAX_CUBE, Position, Side, Step
from server.rules.mat import MatGame, import_mat
from server.rules.moves import play_texts

KINDS = ("play", "double", "no_double", "take", "drop")
REVIEW_DEPTH = 2
"""The search of each checker play reviewed: the top level's (``server/bot/ladder.py``)."""
JUDGES = {
    0: "table42 evaluator, 0 ply, cubeless money equity",
    1: "table42 evaluator, the best plays and the one played 1 ply deep, cubeless money equity",
    2: "table42 evaluator with the advanced level's search: the best plays and the one played "
       "1 and 2 ply deep, cubeless money equity",
}
"""The review's ``judge``: what judged it, by the search depth."""
_ALL_ROLLS = tuple((a, b) for a in range(1, 7) for b in range(a, 7))


@dataclass(frozen=True, slots=True)
class Turn:
    """One decision. ``position`` is before it, with ``position.turn`` the side on roll (for
    ``take``/``drop``: the doubler, ``side`` being the taker). A ``play`` has ``dice``
    and ``after`` (the position once played; a roll with no legal play has ``after`` equal
    to ``position``); cube decisions have ``owned`` (the doubler owned the cube)."""

    kind: str
    side: Side
    position: Position
    dice: tuple[int, int] | None = None
    after: Position | None = None
    cube: int = 1
    owned: bool = False
    opening: bool = False


def _sides(position: Position) -> tuple[list[int], list[int]]:
    """The side on roll's and the other side's checkers, each in its own numbering."""
    s = position.turn
    return list(position.checkers(s)), list(position.checkers(s.opponent))


def _review_play(net: Net, turn: Turn, depth: int) -> dict[str, Any]:
    assert turn.dice is not None and turn.after is not None
    mine, theirs = _sides(turn.position)
    rolls = [r for r in _ALL_ROLLS if not (turn.opening and r[0] == r[1])]
    all_mine, all_theirs, sizes = roll_afterstates(mine, theirs, rolls)
    values = equity(evaluate_batch(net, all_mine, all_theirs))
    best_of = []
    weights = []
    at = 0
    actual = tuple(sorted(turn.dice))
    chosen_at, chosen_size = 0, 0
    for roll, size in zip(rolls, sizes, strict=True):
        best_of.append(float(values[at:at + size].max()))
        weights.append(1.0 if roll[0] == roll[1] else 2.0)
        if roll == actual:
            chosen_at, chosen_size = at, size
        at += size
    chosen_values = values[chosen_at:chosen_at + chosen_size]
    block_m = all_mine[chosen_at:chosen_at + chosen_size]
    block_t = all_theirs[chosen_at:chosen_at + chosen_size]
    average = float(np.dot(best_of, weights) / sum(weights))
    after_mine = np.asarray(turn.after.checkers(turn.side))
    after_theirs = np.asarray(turn.after.checkers(turn.side.opponent))
    rows = np.nonzero((block_m == after_mine).all(axis=1)
                      & (block_t == after_theirs).all(axis=1))[0]
    if len(rows) == 0:
        raise ValueError(f"the play after {turn.position.position_id()} with "
                         f"{turn.dice} is not a legal play")
    chosen = int(rows[0])
    deep = _searched(net, block_m, block_t, chosen_values, chosen, depth)
    best = max(deep, key=lambda i: (deep[i], -i))
    position = turn.position
    texts, _ = play_texts(position, turn.dice[0], turn.dice[1])
    forced = len(chosen_values) == 1
    return {
        "kind": "play", "side": int(turn.side), "dice": list(turn.dice),
        "played": texts[chosen] if not forced or texts[chosen] else "",
        "best": texts[best], "forced": forced,
        "equity": round(deep[chosen], 4),
        "best_equity": round(deep[best], 4),
        "error": round(max(0.0, deep[best] - deep[chosen]), 4),
        "luck": round(float(chosen_values.max()) - average, 4),
    }


def _searched(net: Net, mine: IntArray, theirs: IntArray, values: Array, chosen: int,
              depth: int) -> dict[int, float]:
    """The values of the plays of one roll that the search looks at (the played one always
    among them), at the deepest ply each reached: the best ``SEARCH_CANDIDATES`` by 0 ply
    within ``SEARCH_WINDOW`` and the played one at 1 ply, the best ``DEEP_CANDIDATES`` of
    those (the played one among them when it ranks there) and the played one at 2 ply. The
    top level's own search (``server.bot.expert``) with two differences: the played play
    is always searched, and a lone play within the window is searched too (the top level
    plays it at once)."""
    if len(values) == 1 or depth <= 0:
        return {i: float(values[i]) for i in range(len(values))}
    order = [int(i) for i in np.argsort(-values, kind="stable")]
    top = [i for i in order[:SEARCH_CANDIDATES] if values[i] >= values[order[0]] - SEARCH_WINDOW]
    looked = list(dict.fromkeys([*top, chosen]))
    one = {i: reply_value(net, mine[i], theirs[i], equity) for i in looked}
    if depth == 1:
        return one
    ranked = sorted(one, key=lambda i: (-one[i], i))
    finalists = list(dict.fromkeys([*ranked[:DEEP_CANDIDATES], chosen]))
    return {i: two_ply_value(net, mine[i], theirs[i], equity) for i in finalists}


def _review_cube(net: Net, turn: Turn) -> dict[str, Any]:
    mine, theirs = _sides(turn.position)  # the doubler (on roll) and the other side
    out = flip(evaluate_batch(net, np.asarray([theirs]), np.asarray([mine])))[0]
    e = float(equity(out))
    no_double, take, drop = money_equities(out, turn.owned)
    doubled = min(take, drop)
    if turn.kind in ("double", "no_double"):
        best = "double" if doubled > no_double else "no_double"
        chosen, other = (doubled, no_double) if turn.kind == "double" else (no_double, doubled)
    else:  # the taker's view: minus the doubler's equities
        best = "take" if take < drop else "drop"
        chosen, other = (-take, -drop) if turn.kind == "take" else (-drop, -take)
    return {
        "kind": turn.kind, "side": int(turn.side), "best": best, "forced": False,
        "equity": round(chosen, 4), "best_equity": round(max(chosen, other), 4),
        "error": round(max(0.0, other - chosen), 4), "cube": turn.cube,
        "doubler_equity": round(e, 4),
    }


def review(turns: Sequence[Turn], net: Net | None = None, *,
           depth: int = REVIEW_DEPTH) -> dict[str, Any]:
    """The review of a game's decisions (see the module docstring for the fields);
    ``depth``: the search of each checker play (0: the evaluator alone)."""
    net = net or default_net()
    decisions = []
    for index, turn in enumerate(turns):
        if turn.kind not in KINDS:
            raise ValueError(f"unknown decision kind {turn.kind!r}")
        entry = (_review_play(net, turn, depth) if turn.kind == "play"
                 else _review_cube(net, turn))
        decisions.append({"index": index, **entry})
    players = []
    for side in (0, 1):
        mine = [d for d in decisions if d["side"] == side]
        moves = sum(1 for d in mine if d["kind"] == "play" and not d["forced"])
        error = sum(d["error"] for d in mine)
        luck = sum(d.get("luck", 0.0) for d in mine)
        worst = sorted((d for d in mine if d["error"] > 0),
                       key=lambda d: (-d["error"], d["index"]))[:3]
        players.append({
            "side": side, "moves": moves, "decisions": len(mine),
            "error_total": round(error, 4),
            "error_rate_memg": round(1000.0 * error / moves, 1) if moves else 0.0,
            "luck_total": round(luck, 4),
            "worst": [d["index"] for d in worst],
        })
    return {"decisions": decisions, "players": players,
            "judge": JUDGES[min(max(depth, 0), 2)], "search_depth": min(max(depth, 0), 2)}


# -- building the decisions from a stored game's events -----------------------------------------


def _position(game: Mapping[str, Any], turn: int) -> Position:
    return Position(tuple(int(n) for n in game["board"]),
                    (int(game["bar"][0]), int(game["bar"][1])),
                    (int(game["off"][0]), int(game["off"][1])), Side(turn))


def turns_from_events(events: Sequence[Mapping[str, Any]]) -> list[Turn]:
    """The decisions of one game from its table events in the full form (each carrying its
    whole ``state``), from ``game_start`` to ``game_over``: plays (with the rolls that
    passed), doubles, rolls that could have been doubles, takes and drops."""
    turns: list[Turn] = []
    prev: Mapping[str, Any] | None = None
    doubled: Turn | None = None
    played = False
    for event in events:
        state = event.get("state")
        game = state.get("game") if isinstance(state, Mapping) else None
        kind = event.get("type")
        side = event.get("side")
        if prev is not None and isinstance(side, int) and side in (0, 1):
            who = Side(side)
            if kind == "moved" and prev.get("phase") == "move" and game is not None:
                dice = prev["dice"]
                turns.append(Turn("play", who, _position(prev, side), (dice[0], dice[1]),
                                  _position(game, side), opening=not played))
                played = True
            elif kind == "rolled":
                if prev.get("phase") == "roll" and prev.get("can_double"):
                    turns.append(Turn("no_double", who, _position(prev, side),
                                      cube=int(prev["cube"]),
                                      owned=prev.get("cube_owner") == side))
                if event.get("passed"):
                    dice = event["dice"]
                    here = _position(prev, side)
                    turns.append(Turn("play", who, here, (dice[0], dice[1]), here))
            elif kind == "doubled":
                doubled = Turn("double", who, _position(prev, side), cube=int(prev["cube"]),
                               owned=prev.get("cube_owner") == side)
                turns.append(doubled)
            elif kind in ("taken", "dropped") and doubled is not None:
                turns.append(Turn("take" if kind == "taken" else "drop", who,
                                  doubled.position, cube=doubled.cube, owned=doubled.owned))
        if game is not None:
            for roll in event.get("rolls") or ():
                if roll.get("passed"):
                    roller = int(roll["side"])
                    here = _position(game, roller)
                    dice = roll["dice"]
                    turns.append(Turn("play", Side(roller), here, (dice[0], dice[1]), here))
            prev = game
    return turns


def review_events(events: Sequence[Mapping[str, Any]], net: Net | None = None) -> dict[str, Any]:
    """The review of a stored game from its events in the full form (the HTTP route)."""
    return review(turns_from_events(events), net)


# -- building the decisions from a .mat file ------------------------------------------------------


def _crawford_games(games: Sequence[MatGame]) -> set[int]:
    """The indexes of the Crawford games of a match (the first game where a side needs one
    point): no cube decisions there."""
    found: set[int] = set()
    seen = False
    for index, game in enumerate(games):
        length = game.match_length
        if length and not seen and length - 1 in game.score:
            found.add(index)
            seen = True
    return found


def turns_from_mat(game: MatGame, *, crawford: bool = False) -> list[Turn]:
    """The decisions of a game read from a ``.mat`` file (from the standard start). A roll
    by a side that could have doubled (money play, or a match game that is not the
    Crawford game and needs more than one point to win) counts as a ``no_double``."""
    turns: list[Turn] = []
    position = Position.initial()
    cube, owner = 1, None
    cube_live = not crawford and game.match_length != 1
    played = False
    offered: Turn | None = None
    for action in game.actions:
        side = action.side
        if action.kind == "play":
            assert action.dice is not None
            here = position.with_turn(side)
            if played and cube_live and owner in (None, side) and offered is None \
                    and cube < MAX_CUBE:
                turns.append(Turn("no_double", side, here, cube=cube, owned=owner == side))
            offered = None
            steps = tuple(Step(src, dst) for src, dst in action.steps)
            after = here.apply(steps, pass_turn=False) if steps else here
            turns.append(Turn("play", side, here, action.dice, after, opening=not played))
            played = True
            position = after
        elif action.kind == "double":
            offered = Turn("double", side, position.with_turn(side), cube=cube,
                           owned=owner == side)
            turns.append(offered)
        elif action.kind in ("take", "drop") and offered is not None:
            turns.append(Turn(action.kind, side, offered.position, cube=offered.cube,
                              owned=offered.owned))
            if action.kind == "take":
                cube, owner = cube * 2, side
    return turns


def review_mat(text: str, net: Net | None = None) -> list[dict[str, Any]]:
    """The review of every game of a ``.mat`` text, each with its number and names."""
    games = import_mat(text)
    crawford = _crawford_games(games)
    out = []
    for index, game in enumerate(games):
        result = review(turns_from_mat(game, crawford=index in crawford), net)
        out.append({"game": game.number, "names": list(game.names),
                    "score": list(game.score), "match_length": game.match_length, **result})
    return out


def format_review(games: Sequence[Mapping[str, Any]]) -> str:
    """A plain-text report of :func:`review_mat`'s result."""
    lines = []
    for game in games:
        names = game["names"]
        lines.append(f"Game {game['game']}: {names[0]} (side 0) vs {names[1]} (side 1)")
        for player in game["players"]:
            lines.append(
                f"  {names[player['side']]}: {player['moves']} unforced moves, error rate "
                f"{player['error_rate_memg']} mEMG per move, total error "
                f"{player['error_total']:+.3f}, luck {player['luck_total']:+.3f}")
            for index in player["worst"]:
                d = game["decisions"][index]
                what = f"{d['dice'][0]}{d['dice'][1]}: {d['played'] or '(no move)'}" \
                    if d["kind"] == "play" else d["kind"]
                lines.append(f"    worst: #{index} {what}, best {d['best']}, "
                             f"lost {d['error']:.3f}")
        for d in game["decisions"]:
            if d["kind"] == "play":
                what = f"{d['dice'][0]}{d['dice'][1]}: {d['played'] or '(no move)'}"
                luck = f" luck {d['luck']:+.3f}"
            else:
                what, luck = d["kind"], ""
            mark = f"  best {d['best']}, lost {d['error']:.3f}" if d["error"] > 0 else ""
            lines.append(f"  {d['index']:3d} {names[d['side']]:>12} {what}{luck}{mark}")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m server.bot.review game.mat [--json]``: the review of each game. A file
    that cannot be read or holds no game is one line on stderr and exit status 2
    (``server/exits.py``)."""
    import json
    import sys
    from pathlib import Path

    from server.exits import EXIT_USAGE, CommandFailed, Parser, run_command

    prog = "python -m server.bot.review"
    parser = Parser(prog=prog, description="Review the games of a .mat "
                                     "file: each decision's equity lost and each roll's luck.")
    parser.add_argument("mat", type=Path, help="a Jellyfish .mat file")
    parser.add_argument("--json", action="store_true", help="print the review as JSON")
    args = parser.parse_args(argv)

    def body() -> int:
        try:
            games = review_mat(args.mat.read_text(encoding="utf-8", errors="replace"))
        except OSError as exc:
            raise CommandFailed(f"cannot read {args.mat}: {exc.strerror or exc}",
                                EXIT_USAGE) from None
        except ValueError as exc:
            raise CommandFailed(f"{args.mat}: {exc} (not a Jellyfish .mat file?)",
                                EXIT_USAGE) from None
        if not games:
            raise CommandFailed(f"{args.mat}: no game found (not a Jellyfish .mat file? "
                                "Export a match as .mat and give that file)", EXIT_USAGE)
        sys.stdout.write(json.dumps(games, indent=1) + "\n" if args.json
                         else format_review(games))
        return 0

    return run_command(prog, body)


if __name__ == "__main__":
    raise SystemExit(main())
