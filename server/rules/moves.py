"""Legal plays: the generator, whole-play text (parse and format) and the checked play.

The generator works on two 26-lists in the mover's numbering (see ``Position.mover_view``)
with apply/undo in place, no copies. Results are told apart by a compact key (the mover's
26 counts as bytes, plus a bit mask of the points where an opponent blot was hit), which
identifies the resulting position exactly. Answers are memoised per (position, roll).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from functools import lru_cache

from server.rules.dice import Roll, check_roll
from server.rules.errors import IllegalPlayError
from server.rules.position import BAR, OFF, Play, Position, Step

MAX_PLAY_TEXT = 200
"""Longest whole-play text accepted (a four-step play needs about 30 characters)."""

_Key = bytes | tuple[bytes, int]
_STEP = tuple(tuple(Step(src, dst) for dst in range(26)) for src in range(26))
"""Every ``Step`` the generator can make, built once: ``_STEP[src][dst]``. Plays share them
(they are immutable), so generating a play builds one tuple and nothing else."""
_Found = tuple[tuple[Play, ...], tuple[_Key, ...]]


# -- the generator --------------------------------------------------------------------------


def legal_plays(position: Position, roll: Roll) -> Iterator[Play]:
    """Every legal play of ``roll`` for the side to move, one per distinct resulting position.

    Rules: a checker on the bar enters before anything else moves; both dice are used when
    any play uses both; when only one die can be used, the larger one if it can be; doubles
    are played up to four times; bearing off needs all 15 checkers home, and a die larger
    than needed bears off only from the highest occupied point; a blot landed on goes to
    the bar. When nothing can move, the only legal play is the empty play ``()`` (the turn
    passes). Steps within a play are in an order in which they can be played.
    """
    a, b = check_roll(roll)
    return iter(_plays_with_keys(position, a, b)[0])


@lru_cache(maxsize=128)
def _plays_with_keys(position: Position, a: int, b: int) -> _Found:
    mine, theirs = position.mover_view()
    found = _generate(mine, theirs, a, b)
    if not found:
        return ((),), (bytes(mine),)
    return tuple(found.values()), tuple(found.keys())


def _generate(mine: list[int], theirs: list[int], a: int, b: int) -> dict[_Key, Play]:
    """The distinct legal plays keyed by resulting position (empty when nothing can move)."""
    if a == b:
        return _generate_doubles(mine, theirs, a)
    hi, lo = (a, b) if a > b else (b, a)
    results: dict[_Key, Play] = {}
    singles: dict[int, list[tuple[int, int]]] = {hi: [], lo: []}
    outside = sum(mine[7:26])
    occupied = [q for q in range(24, 0, -1) if mine[q]]
    for first, second in ((hi, lo), (lo, hi)):
        single = singles[first]
        for p in (BAR,) if mine[BAR] else occupied:
            t = p - first
            if t > 0:
                if theirs[t] >= 2:
                    continue
            elif outside or (t < 0 and any(mine[p + 1 : 7])):
                continue
            else:
                t = 0
            # play the first step
            mine[p] -= 1
            mine[t] += 1
            hit1 = t > 0 and theirs[t] == 1
            out2 = outside - 1 if p > 6 >= t else outside
            single.append((p, t))
            if mine[BAR]:
                seconds: Sequence[int] = (BAR,)
            elif first == lo and t and out2 and p != BAR:
                # Lower die first, not from the bar, nothing to bear off: moving another
                # checker with the higher die gives a position the higher-die-first pass
                # has already found, so only the same checker moving on can be new.
                seconds = (t,)
            elif t and mine[t] == 1:
                seconds = [*occupied, t]  # the checker just moved is a new source
            else:
                seconds = occupied
            for q in seconds:
                if not mine[q]:
                    continue
                u = q - second
                if u > 0:
                    if theirs[u] >= 2:
                        continue
                elif out2 or (u < 0 and any(mine[q + 1 : 7])):
                    continue
                else:
                    u = 0
                mine[q] -= 1
                mine[u] += 1
                mask = (1 << t if hit1 else 0) | (1 << u if u > 0 and theirs[u] == 1 else 0)
                key: _Key = (bytes(mine), mask) if mask else bytes(mine)
                if key not in results:
                    results[key] = (_STEP[p][t], _STEP[q][u])
                mine[u] -= 1
                mine[q] += 1
            mine[t] -= 1
            mine[p] += 1
    if results:
        return results
    for die in (hi, lo):
        for p, t in singles[die]:
            mine[p] -= 1
            mine[t] += 1
            mask = 1 << t if t > 0 and theirs[t] == 1 else 0
            results[(bytes(mine), mask) if mask else bytes(mine)] = (_STEP[p][t],)
            mine[t] -= 1
            mine[p] += 1
        if results:
            return results
    return results


def _generate_doubles(mine: list[int], theirs: list[int], d: int) -> dict[_Key, Play]:
    """Doubles: depth-first over up to four steps with non-increasing source points.

    Every legal sequence of equal dice can be reordered so that sources never increase
    (a step never enables a step from a higher point), so this visits each multiset of
    steps once; only the plays using the most dice are kept. Sources whose landing point
    the opponent holds are left out up front (hits never unblock a point).
    """
    results: dict[_Key, Play] = {}
    best = [1]
    steps: list[Step] = []
    outside = [sum(mine[7:26])]
    step_of = _STEP
    sources = [p for p in range(24, 0, -1) if p <= d or theirs[p - d] < 2]
    count = len(sources)
    entry = BAR - d
    can_enter = theirs[entry] < 2

    def visit(first: int, mask: int) -> None:
        moved = False
        if len(steps) < 4:
            if mine[BAR]:
                if can_enter:
                    moved = True
                    mine[BAR] -= 1
                    mine[entry] += 1
                    steps.append(step_of[BAR][entry])
                    visit(0, mask | (1 << entry) if theirs[entry] == 1 else mask)
                    steps.pop()
                    mine[entry] -= 1
                    mine[BAR] += 1
            else:
                for index in range(first, count):
                    p = sources[index]
                    if not mine[p]:
                        continue
                    t = p - d
                    if t <= 0:
                        if outside[0] or (t < 0 and any(mine[p + 1 : 7])):
                            continue
                        t = 0
                    moved = True
                    mine[p] -= 1
                    mine[t] += 1
                    entered_home = p > 6 >= t
                    if entered_home:
                        outside[0] -= 1
                    steps.append(step_of[p][t])
                    visit(index, mask | (1 << t) if t and theirs[t] == 1 else mask)
                    steps.pop()
                    if entered_home:
                        outside[0] += 1
                    mine[t] -= 1
                    mine[p] += 1
        if moved or not steps:
            return
        depth = len(steps)
        if depth < best[0]:
            return
        if depth > best[0]:
            best[0] = depth
            results.clear()
        key: _Key = (bytes(mine), mask) if mask else bytes(mine)
        if key not in results:
            results[key] = tuple(steps)

    visit(0, 0)
    # visit refers to itself through its closure cell: pointing the cell elsewhere breaks
    # that cycle, so the search's lists are freed now, not at the collector's next pass.
    visit = _searched
    return results


def _searched(first: int, mask: int) -> None:
    """Stands in for a finished search's ``visit`` (see ``_generate_doubles``)."""


@lru_cache(maxsize=128)
def play_texts(position: Position, a: int, b: int) -> tuple[tuple[str, ...], dict[str, Play]]:
    """The text of each legal play of the roll ``a``-``b`` (in ``legal_plays`` order) and
    the play each text names, memoised per (position, roll). A text two plays would share
    is left out of the map (``parse_play`` then decides). Treat both as read-only."""
    plays, _ = _plays_with_keys(position, a, b)
    texts = tuple(format_plays(plays, position))
    by_text = dict(zip(texts, plays, strict=True))
    if len(by_text) != len(texts):
        for text in {t for t in texts if texts.count(t) > 1}:
            del by_text[text]
    return texts, by_text


def legal_outcomes(position: Position, roll: Roll) -> tuple[tuple[bytes, int], ...]:
    """The result of each legal play of ``roll``, in ``legal_plays`` order, without building
    a ``Position``: the mover's 26 checker counts afterwards (``bytes``, the mover's own
    numbering: index 0 off, 1..24 points, 25 the bar) and a bit mask of the mover's points
    where an opponent blot was hit (bit ``t`` = the mover's point ``t``). Memoised per
    (position, roll); for bots that evaluate thousands of results per decision."""
    a, b = check_roll(roll)
    return _outcomes(position, a, b)


@lru_cache(maxsize=256)
def _outcomes(position: Position, a: int, b: int) -> tuple[tuple[bytes, int], ...]:
    _, keys = _plays_with_keys(position, a, b)
    return tuple((key, 0) if isinstance(key, bytes) else key for key in keys)


def legal_results(position: Position, roll: Roll) -> dict[Position, Play]:
    """Each legal play of ``roll`` by the resulting position (the mover still to move)."""
    a, b = check_roll(roll)
    return dict(_results(position, a, b))


@lru_cache(maxsize=128)
def _results(position: Position, a: int, b: int) -> tuple[tuple[Position, Play], ...]:
    plays, keys = _plays_with_keys(position, a, b)
    _, theirs = position.mover_view()
    return tuple(
        (_position_from_key(key, theirs, position), play)
        for key, play in zip(keys, plays, strict=True)
    )


def _position_from_key(key: _Key, theirs: list[int], position: Position) -> Position:
    raw, mask = (key, 0) if isinstance(key, bytes) else key
    their_after = list(theirs)
    if mask:
        for point in range(1, 25):
            if mask >> point & 1:
                their_after[point] = 0
                their_after[BAR] += 1
    return Position.from_mover_view(list(raw), their_after, position.turn)


# -- text -----------------------------------------------------------------------------------

_TOKEN = re.compile(r"[^\s,;]+")
_SEGMENT = re.compile(r"^(?P<chain>[0-9a-z]+(?:/[0-9a-z]+\*?)+)(?:\((?P<times>[1-4])\))?$")


def _read_point(text: str, whole: str) -> int:
    if text == "bar" or text == "b":
        return BAR
    if text == "off" or text == "o":
        return OFF
    if text.isdigit() and len(text) <= 2 and 0 <= int(text) <= 25:
        return int(text)
    raise IllegalPlayError(f"cannot read point {text!r} in {whole!r}", reason="syntax")


def _parse_text(text: str) -> tuple[list[Step], set[int]]:
    """Syntax only: the steps written (a step may span several dice) and the hits marked."""
    if len(text) > MAX_PLAY_TEXT:
        raise IllegalPlayError(
            f"play text longer than {MAX_PLAY_TEXT} characters", reason="too_long"
        )
    whole = text
    text = text.strip().lower()
    if text in ("", "-", "pass", "no move", "none"):
        return [], set()
    steps: list[Step] = []
    marked: set[int] = set()
    for token in _TOKEN.findall(text):
        match = _SEGMENT.match(token)
        if not match:
            raise IllegalPlayError(
                f"cannot read {token!r} in {whole!r}: write moves like 24/18 13/8, "
                "bar/20, 6/off, 8/4(2) or 24/18*/13",
                reason="syntax",
            )
        parts = match["chain"].split("/")
        times = int(match["times"] or 1)
        points = [_read_point(part.rstrip("*"), whole) for part in parts]
        for part, point in zip(parts[1:], points[1:], strict=True):
            if part.endswith("*"):
                marked.add(point)
        chain = [Step(points[i], points[i + 1]) for i in range(len(points) - 1)]
        for step in chain:
            if not step.from_point > step.to_point:
                raise IllegalPlayError(
                    f"{step} moves the wrong way: checkers move from higher to lower points",
                    reason="syntax",
                )
            if step.from_point != BAR and step.from_point > 24:
                raise IllegalPlayError(f"no point {step.from_point}", reason="syntax")
        steps.extend(chain * times)
        if len(steps) > 4:
            raise IllegalPlayError(
                f"{whole!r} moves more than four checker steps", reason="too_long"
            )
    return steps, marked


def _coerce_steps(value: object) -> list[Step]:
    if not isinstance(value, (list, tuple)):
        raise IllegalPlayError(
            f"a play is text or a list of [from, to] steps, got {type(value).__name__}",
            reason="syntax",
        )
    if len(value) > 4:
        raise IllegalPlayError("a play has at most four steps", reason="too_long")
    steps: list[Step] = []
    for item in value:
        if not isinstance(item, (list, tuple)) or len(item) != 2:
            raise IllegalPlayError(f"a step is [from, to], got {item!r}", reason="syntax")
        src, dst = item
        for point in (src, dst):
            if isinstance(point, bool) or not isinstance(point, int) or not 0 <= point <= 25:
                raise IllegalPlayError(
                    f"step points are ints 0..25 (25 bar, 0 off), got {item!r}",
                    reason="syntax",
                )
        if not src > dst:
            raise IllegalPlayError(f"step {src}/{dst} moves the wrong way", reason="syntax")
        steps.append(Step(src, dst))
    return steps


def parse_play(
    text_or_steps: str | Sequence[Sequence[int]],
    position: Position | None = None,
    roll: Roll | None = None,
) -> Play:
    """Read a play from text (``"24/18 13/8"``, ``"bar/20"``, ``"6/off"``, ``"8/4(2)"``,
    ``"24/18*/13"``, ``"24/13"``) or from a list of ``[from, to]`` steps.

    Without ``position`` and ``roll`` this is syntax only: the steps as written (a step may
    span several dice). With both, the result is the legal play it names, with one step per
    die in a playable order; anything else raises ``IllegalPlayError`` saying why. Steps
    may be given in any order. Where a step spanning two dice could pass over a blot or
    not, the route that does not hit is taken unless the hit is written (``24/18*/13``).
    """
    if isinstance(text_or_steps, str):
        steps, marked = _parse_text(text_or_steps)
    else:
        steps, marked = _coerce_steps(text_or_steps), set()
    if position is None and roll is None:
        return tuple(steps)
    if position is None or roll is None:
        raise ValueError("parse_play needs both position and roll, or neither")
    return resolve_play(position, check_roll(roll), steps, marked)


def resolve_play(
    position: Position, roll: Roll, steps: Sequence[Step], marked: set[int] | None = None
) -> Play:
    """The legal play of ``roll`` that ``steps`` describe, or ``IllegalPlayError`` with why."""
    plays, keys = _plays_with_keys(position, *roll)
    legal = list(plays)
    if not steps:
        if legal == [()]:
            return ()
        raise IllegalPlayError(
            f"the roll {roll[0]}-{roll[1]} can be played; an empty play is only legal "
            "when no checker can move",
            reason="must_use_more_dice",
        )
    if legal == [()]:
        raise IllegalPlayError(
            f"no checker can move with {roll[0]}-{roll[1]}: the only legal play is to pass",
            reason="must_enter" if position.mover_view()[0][BAR] else "blocked",
        )
    as_given = tuple(steps)
    if as_given in legal:
        return as_given
    by_key = dict(zip(keys, plays, strict=True))
    marked = marked or set()
    expansions = _expand(steps, roll)
    if not expansions:
        written = " ".join(f"{_name(a)}/{_name(b)}" for a, b in steps)
        raise IllegalPlayError(
            f"{written} does not fit the dice {roll[0]}-{roll[1]}", reason="dice"
        )
    first_error: IllegalPlayError | None = None
    candidates: list[tuple[int, int, _Key]] = []
    for expansion in expansions:
        realised = _simulate(position, expansion, marked)
        if isinstance(realised, IllegalPlayError):
            first_error = first_error or realised
            continue
        implicit_hits, after = realised
        candidates.append((implicit_hits, -len(expansion), after))
    matching = sorted(
        (c for c in candidates if c[2] in by_key), key=lambda c: (c[0], c[1])
    )
    if matching:
        return by_key[matching[0][2]]
    if candidates:
        used = -min(c[1] for c in candidates)
        most = max(len(play) for play in legal)
        if used < most:
            what = "both dice" if roll[0] != roll[1] else f"{most} of the four dice"
            raise IllegalPlayError(
                f"the roll {roll[0]}-{roll[1]} allows a play using {what}; "
                "as many dice as possible must be used",
                reason="must_use_more_dice",
            )
        # Every sub-step was legal and as many dice were used as any play uses, so the
        # play is legal unless it broke the larger-die rule.
        raise IllegalPlayError(
            f"only one die can be played and the larger die ({max(roll)}) can be, so it must be",
            reason="must_use_larger_die",
        )
    assert first_error is not None
    raise first_error


_SubStep = tuple[int, int, int, bool]  # from, to, die, whether it ends a written step


def _expand(steps: Sequence[Step], roll: Roll) -> list[list[_SubStep]]:
    """Every way to split the written steps into one-die sub-steps with the dice rolled.

    A written step may span several dice (``24/13``), each landing short of its end on a
    point; a step to off may end with a die larger than needed (the rules decide later).
    """
    dice = [roll[0]] * 4 if roll[0] == roll[1] else list(roll)
    found: list[list[_SubStep]] = []
    acc: list[_SubStep] = []

    def from_step(index: int, left: list[int]) -> None:
        if index == len(steps):
            found.append(list(acc))
            return
        walk(index, steps[index].from_point, left)

    def walk(index: int, cur: int, left: list[int]) -> None:
        target = steps[index].to_point
        for d in sorted(set(left), reverse=True):
            land = cur - d
            if land < target:
                if target != OFF:
                    continue
                land = OFF
            rest = list(left)
            rest.remove(d)
            final = land == target
            acc.append((cur, land, d, final))
            if final:
                from_step(index + 1, rest)
            else:
                walk(index, land, rest)
            acc.pop()

    from_step(0, dice)
    return found


def _simulate(
    position: Position, expansion: list[_SubStep], marked: set[int]
) -> tuple[int, _Key] | IllegalPlayError:
    """Play the sub-steps by the rules, highest source first (an order in which any legal
    set of steps can be played); the hits nobody wrote and the resulting position's key
    (as the generator keys it), or why not.
    """
    mine, theirs = position.mover_view()
    implicit = 0
    mask = 0
    for src, _land, die, final in sorted(expansion, key=lambda sub: -sub[0]):
        if mine[src] <= 0:
            where = "on the bar" if src == BAR else f"on point {src}"
            return IllegalPlayError(f"you have no checker {where}", reason="no_checker")
        if mine[BAR] and src != BAR:
            return IllegalPlayError(
                "you have a checker on the bar: it must enter before any other checker moves",
                reason="must_enter",
            )
        t = src - die
        if t > 0:
            if theirs[t] >= 2:
                return IllegalPlayError(
                    f"point {t} is held by the opponent ({theirs[t]} checkers)",
                    reason="blocked",
                )
        else:
            if sum(mine[7:26]):
                return IllegalPlayError(
                    "you cannot bear off until all 15 of your checkers are in your home board",
                    reason="not_all_home",
                )
            if t < 0 and any(mine[src + 1 : 7]):
                return IllegalPlayError(
                    f"a {die} bears off from point {src} only when no checker is on a "
                    "higher point",
                    reason="higher_checker",
                )
            t = OFF
        mine[src] -= 1
        mine[t] += 1
        if t != OFF and theirs[t] == 1:
            theirs[t] = 0
            mask |= 1 << t
            if not final and t not in marked:
                implicit += 1
    return implicit, (bytes(mine), mask) if mask else bytes(mine)


def format_play(play: Play, position: Position | None = None) -> str:
    """Whole-play text in the usual notation: ``"24/18 13/8"``, ``"bar/20"``, ``"6/off"``.

    One checker's consecutive steps are joined (``"24/13"``), identical moves are counted
    (``"8/4(2)"``) and, given the ``position`` the play starts from, hits are marked with
    ``*`` (``"24/18*/13"``). The empty play is ``""``. ``parse_play`` reads the text back
    to the same play. ``format_plays`` formats all the plays of one position faster.
    """
    return _format(play, _blots(position) if position is not None else frozenset())


def _blots(position: Position) -> frozenset[int]:
    """The points (in the mover's numbering) where the opponent has exactly one checker."""
    board = position.board
    if position.turn == 0:
        return frozenset(i + 1 for i, n in enumerate(board) if n == -1)
    return frozenset(24 - i for i, n in enumerate(board) if n == 1)


def _format(play: Play, blots: frozenset[int]) -> str:
    if not play:
        return ""
    # A step that starts where an earlier one ended continues that checker's chain (the
    # position is the same whichever checker it was). A point is marked as a hit when it is
    # one of the opponent's blots: every point of a chain after its start was landed on.
    # Inside a chain only the hit points stay written.
    names, hit_names = _NAMES, _HIT_NAMES
    starts: list[int] = []
    ends: list[int] = []
    mids: list[str] | None = None  # per chain, its hit points inside, as text
    for src, dst in play:
        if src in ends:
            i = ends.index(src)
            if src in blots:
                if mids is None:
                    mids = ["", "", "", ""]
                mids[i] += "/" + hit_names[src]
            ends[i] = dst
        else:
            starts.append(src)
            ends.append(dst)
    if len(starts) == 1:
        end = ends[0]
        return (f"{names[starts[0]]}{mids[0] if mids else ''}/"
                f"{(hit_names if end in blots else names)[end]}")
    # Highest start first, then highest end; identical moves are counted: "8/4(2)".
    chains = sorted(zip(starts, ends, mids or _NO_MIDS, strict=False), reverse=True)
    out: list[str] = []
    i = 0
    n = len(chains)
    while i < n:
        j = i + 1
        chain = chains[i]
        while j < n and chains[j] == chain:
            j += 1
        start, end, mid = chain
        text = f"{names[start]}{mid}/{(hit_names if end in blots else names)[end]}"
        out.append(text if j - i == 1 else f"{text}({j - i})")
        i = j
    return " ".join(out)


def _name(point: int) -> str:
    if point == BAR:
        return "bar"
    if point == OFF:
        return "off"
    return str(point)


_NAMES = tuple(_name(point) for point in range(26))
_HIT_NAMES = tuple(name + "*" for name in _NAMES)
_NO_MIDS = ("", "", "", "")


def format_plays(plays: Sequence[Play], position: Position) -> list[str]:
    """``[format_play(play, position) for play in plays]``, the same strings at a fraction of
    the cost: the opponent's blots are found once, and plays of one or two steps (all but
    doubles) take a short path."""
    blots = _blots(position)
    names, hit_names = _NAMES, _HIT_NAMES
    out: list[str] = []
    append = out.append
    for play in plays:
        if len(play) != 2:
            if len(play) == 1:
                (a, b), = play
                append(f"{names[a]}/{(hit_names if b in blots else names)[b]}")
            else:
                append(_format(play, blots))
            continue
        (a, b), (c, d) = play
        if c == b:  # one checker moved twice: a/b/d, with b written only when it is hit
            end = (hit_names if d in blots else names)[d]
            append(f"{names[a]}/{hit_names[b]}/{end}" if b in blots else f"{names[a]}/{end}")
        else:
            first = names[a] + "/" + (hit_names if b in blots else names)[b]
            second = names[c] + "/" + (hit_names if d in blots else names)[d]
            if first == second:
                append(first + "(2)")
            elif (a, b) > (c, d):
                append(first + " " + second)
            else:
                append(second + " " + first)
    return out
