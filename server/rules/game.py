"""One game of backgammon as a state machine: opening roll, rolls, plays, cube, resignation.
(Pure, compiled with the table core; its values are ``server/rules/game_values.py``.)

Phases (``Game.phase``) and who acts (``Game.to_act``)::

    opening ──start()──▶ move ──play()──▶ roll ──roll()──▶ move ──play()──▶ roll …
                                          │  ▲                    (no legal play: the
                                   double()  take()                turn passes, roll)
                                          ▼  │
                                     double_offered ──drop()──▶ over
    roll/move ──resign()──▶ resign_offered ──accept──▶ over   (reject: back where it was)
    any phase but over ──forfeit()──▶ over                    (a play that wins ▶ over)

``Game.to_dict()`` is the snapshot sent to clients; its fields:

- ``phase``: one of ``opening``, ``roll``, ``double_offered``, ``move``, ``resign_offered``,
  ``over``.
- ``turn``: the side on roll (0/1), ``null`` before the opening roll.
- ``to_act``: the side whose decision is awaited (the opponent of the doubler while a
  double is offered, of the resigner while a resignation is offered), ``null`` when over.
- ``board``: 24 signed ints seen from side 0: index ``i`` is side 0's point ``i + 1``;
  positive = side 0's checkers, negative = side 1's. Side 1's point ``p`` is side 0's
  point ``25 - p``.
- ``bar``, ``off``, ``pips``: ``[side 0, side 1]``.
- ``dice``: ``[d1, d2]`` while the side on roll has to move, else ``null``.
- ``cube``: its value (1 = centred at the start); ``cube_owner``: 0/1, ``null`` = centred.
- ``cube_enabled``: false in the Crawford game, in 1-point matches or when switched off;
  ``crawford``: true in the Crawford game; ``max_cube``; ``can_double``: whether the side
  on roll may offer a double now.
- ``legal_plays``: the legal plays of the side on roll (``move`` phase only, else ``[]``),
  each a list of ``[from, to]`` steps in the mover's numbering (25 = bar, 0 = off) in an
  order they can be played, e.g. ``[[24, 18], [13, 8]]``; each is accepted back as it is
  by ``play()`` (a lookup, not a search). ``legal_play_texts`` has them as text.
- ``resignation``: ``{"side", "kind", "points"}`` while one is offered, else ``null``.
- ``outcome``: ``{"winner", "kind", "reason", "cube", "points"}`` once over, else ``null``.
- ``position_id``, ``match_id``: GNU Backgammon IDs of the current state.

Default actions for a clock running out (``default_action()``): on roll → roll (no double);
must move → the first legal play; double offered → take (a drop would end the game for a
slow click, too harsh); resignation offered → reject.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from server.protocol.errors import ErrorCode
from server.rules.dice import DiceSource, Roll, SecretDice
from server.rules.errors import IllegalActionError
from server.rules.game_values import (
    MAX_CUBE,
    Action,
    EndReason,
    Outcome,
    Phase,
    Record,
    Resignation,
    as_kind,
    check_max_cube,
    forfeit_reason,
)
from server.rules.moves import legal_plays, parse_play, play_texts
from server.rules.position import Play, Position, ResultKind, Side, as_side

_Inputs = tuple[Position, Phase, Side | None, Roll | None, int, Side | None,
                Resignation | None, Outcome | None, list[Play], tuple[bool, bool, int]]
"""What a game's snapshot is built from (``Game._inputs``)."""


class Game:
    """One game; the server drives it, every method checks phase and side first.

    ``dice`` defaults to ``SecretDice()``. ``position`` (for tests and analysis) replaces
    the standard starting position; the opening roll still decides who moves first.
    ``crawford`` marks the Crawford game of a match (no doubling); ``match_length`` and
    ``score`` (the score before this game) only feed the Match ID and the ``.mat`` export.
    """

    def __init__(
        self,
        *,
        dice: DiceSource | None = None,
        cube_enabled: bool = True,
        max_cube: int = MAX_CUBE,
        crawford: bool = False,
        position: Position | None = None,
        match_length: int = 0,
        score: tuple[int, int] = (0, 0),
    ) -> None:
        self._dice_source: DiceSource = dice if dice is not None else SecretDice()
        self.max_cube = check_max_cube(max_cube)
        self.crawford = bool(crawford)
        self.cube_enabled = bool(cube_enabled) and not self.crawford
        self.match_length = match_length
        self.score = score
        self.initial_position = position if position is not None else Position.initial()
        self.position = self.initial_position
        self.turn: Side | None = None
        self.phase = Phase.OPENING
        self.cube = 1
        self.cube_owner: Side | None = None
        self.dice: Roll | None = None
        self.outcome: Outcome | None = None
        self.resignation: Resignation | None = None
        self.opening_rolls: list[Roll] = []
        self.history: list[Record] = []
        self._legal: list[Play] = []
        self._texts: tuple[tuple[str, ...], dict[str, Play]] | None = None
        self._by_steps: dict[Play, Play] | None = None
        # Per position: the position, its board, bar, off and pips as lists, its Position ID.
        self._seen: (tuple[Position, list[int], list[int], list[int], list[int], str]
                     | None) = None
        self._legal_list: tuple[list[Play], list[Play]] | None = None  # (_legal, its copy)
        self._phase_before_resign = Phase.ROLL
        # The latest snapshot (to_dict, snapshot_changes) and what it was built from.
        self._snap: dict[str, object] | None = None
        self._snap_of: _Inputs | None = None

    def use_dice(self, dice: DiceSource) -> None:
        """Roll with ``dice`` from now on (a game rebuilt from recorded dice goes on)."""
        self._dice_source = dice

    # -- reading ------------------------------------------------------------------------

    @property
    def legal_plays(self) -> list[Play]:
        """The legal plays of the side on roll in the ``move`` phase (else ``[]``)."""
        return list(self._legal) if self.phase == Phase.MOVE else []

    @property
    def legal_play_texts(self) -> list[str]:
        """``legal_plays`` as whole-play text (``format_play`` with hits marked), computed
        once per roll; each text is accepted back by ``play()``."""
        if self.phase != Phase.MOVE:
            return []
        return list(self._roll_texts()[0])

    @property
    def is_over(self) -> bool:
        return self.phase == Phase.OVER

    @property
    def to_act(self) -> Side | None:
        """The side whose decision the game waits for (``None`` before start and when over)."""
        if self.phase in (Phase.OPENING, Phase.OVER) or self.turn is None:
            return None
        if self.phase == Phase.DOUBLE_OFFERED:
            return self.turn.opponent
        if self.phase == Phase.RESIGN_OFFERED:
            assert self.resignation is not None
            return self.resignation.side.opponent
        return self.turn

    # -- the opening roll, rolls and plays --------------------------------------------

    def start(self) -> Roll:
        """The opening roll: each side rolls one die, ties roll again, the higher starts.

        Returns the starter's dice ``(starter's die, other's die)``, which are also
        ``self.dice``; ``opening_rolls`` keeps every ``(side 0, side 1)`` pair, ties too.
        Phase becomes ``move`` for the starter.
        """
        self._require_phase(Phase.OPENING)
        while True:
            zero, one = self._roll_die(), self._roll_die()
            self.opening_rolls.append((zero, one))
            if zero != one:
                break
        self.turn = Side.ZERO if zero > one else Side.ONE
        self.dice = (max(zero, one), min(zero, one))
        self.position = self.position.with_turn(self.turn)
        return self._begin_move()

    def roll(self, side: Side | int) -> Roll:
        """Roll for the side on roll (phase ``roll``); phase becomes ``move``.

        When the roll has no legal play the turn passes at once: the empty play is recorded
        and phase is ``roll`` again, for the opponent.
        """
        self._require_turn(side, Phase.ROLL)
        self.dice = (self._roll_die(), self._roll_die())
        return self._begin_move()

    def play(self, side: Side | int, play: Play | str | Sequence[Sequence[int]]) -> Outcome | None:
        """Play for the side on roll (phase ``move``): ``play`` is a ``Play``, whole-play text
        or ``[from, to]`` steps. Raises ``IllegalPlayError`` saying why when it is not legal.

        Returns the ``Outcome`` when the play bears off the last checker, else ``None``
        (and the turn passes).
        """
        who = self._require_turn(side, Phase.MOVE)
        assert self.dice is not None
        # A legal play sent as offered (``legal_plays`` steps, or its ``legal_play_texts``
        # text) is looked up; any other spelling or step list is parsed and checked.
        if isinstance(play, str):
            chosen = self._roll_texts()[1].get(play)
        else:
            try:  # steps sent back as offered; anything else is parsed (and explained)
                key: Any = tuple(map(tuple, play))
                chosen = self._offered().get(key)
            except TypeError:
                chosen = None
        if chosen is None:
            chosen = parse_play(play, self.position, self.dice)
        self.history.append(Record("play", who, self.dice, chosen))
        self.position = self.position.apply(chosen, pass_turn=False)
        if self.position.winner is not None:
            kind = self.position.result_kind(who)
            return self._end(Outcome.of(who, kind, EndReason.NORMAL, self.cube))
        self._pass_turn()
        return None

    # -- the cube -------------------------------------------------------------------------

    def can_double(self, side: Side | int) -> bool:
        """Whether ``side`` may offer a double now (never raises); the same conditions as
        ``double()`` checks."""
        if isinstance(side, bool) or not isinstance(side, int):
            return False
        return (
            self.phase == Phase.ROLL
            and side == self.turn
            and self.cube_enabled
            and (self.cube_owner is None or self.cube_owner == side)
            and self.cube * 2 <= self.max_cube
        )

    def double(self, side: Side | int) -> None:
        """Offer a double before rolling: the owner of the cube, or either side while it is
        centred. Phase becomes ``double_offered``; the opponent takes or drops."""
        who = self._check_double(side)
        self.history.append(Record("double", who))
        self.phase = Phase.DOUBLE_OFFERED

    def take(self, side: Side | int) -> None:
        """Take the double: the cube doubles and passes to the taker; the doubler rolls."""
        who = self._require_doubled(side)
        self.history.append(Record("take", who))
        self.cube *= 2
        self.cube_owner = who
        self.phase = Phase.ROLL

    def drop(self, side: Side | int) -> Outcome:
        """Drop the double: the game ends, the dropper loses a single game at the cube value
        before the double (never a gammon)."""
        who = self._require_doubled(side)
        self.history.append(Record("drop", who))
        return self._end(Outcome.of(who.opponent, ResultKind.SINGLE, EndReason.DROP, self.cube))

    # -- resignations and forfeits -------------------------------------------------------

    def resign(self, side: Side | int, kind: ResultKind | str = ResultKind.SINGLE) -> None:
        """Offer to resign a ``kind`` win (single, gammon, backgammon) to the opponent.

        Either side may offer in the ``roll`` or ``move`` phase; the opponent accepts or
        rejects. Phase becomes ``resign_offered``.
        """
        who = as_side(side)
        self._require_live()
        if self.phase not in (Phase.ROLL, Phase.MOVE):
            raise IllegalActionError(
                f"a resignation can be offered only before rolling or moving (now {self.phase})",
                code=ErrorCode.WRONG_PHASE,
            )
        level = as_kind(kind)
        self.history.append(Record("resign", who, result=level))
        self.resignation = Resignation(who, level)
        self._phase_before_resign = self.phase
        self.phase = Phase.RESIGN_OFFERED

    def accept_resignation(self, side: Side | int) -> Outcome:
        """Accept the resignation on offer: the game ends at its level times the cube."""
        offer = self._require_resignation(side)
        self.history.append(Record("accept", offer.side.opponent))
        return self._end(Outcome.of(offer.side.opponent, offer.kind, EndReason.RESIGN, self.cube))

    def reject_resignation(self, side: Side | int) -> None:
        """Reject the resignation on offer: the game goes on where it was."""
        offer = self._require_resignation(side)
        self.history.append(Record("reject", offer.side.opponent))
        self.resignation = None
        self.phase = self._phase_before_resign

    def forfeit(self, side: Side | int, reason: EndReason | str) -> Outcome:
        """``side`` forfeits (timeout, disconnect or leave): a single-game loss at the
        current cube value, in any phase but ``over``."""
        who = as_side(side)
        self._require_live()
        why = forfeit_reason(reason)
        self.history.append(Record("forfeit", who))
        return self._end(Outcome.of(who.opponent, ResultKind.SINGLE, why, self.cube))

    # -- clocks -----------------------------------------------------------------------------

    def default_action(self) -> Action | None:
        """What to do for the side to act when its clock runs out (``None`` when over).

        Opening → ``start``; on roll → ``roll`` (no double); must move → ``play`` the first
        legal play; double offered → ``take``; resignation offered → ``reject``.
        """
        if self.phase == Phase.OPENING:
            return Action("start", None)
        if self.phase == Phase.ROLL:
            return Action("roll", self.turn)
        if self.phase == Phase.MOVE:
            return Action("play", self.turn, self._legal[0])
        if self.phase == Phase.DOUBLE_OFFERED:
            return Action("take", self.to_act)
        if self.phase == Phase.RESIGN_OFFERED:
            return Action("reject", self.to_act)
        return None

    def perform(self, action: Action) -> Outcome | None:
        """Carry out an ``Action`` (as from ``default_action``); returns the outcome if any."""
        if action.kind == "start":
            self.start()
            return None
        if action.side is None:
            raise IllegalActionError(f"{action.kind} needs a side", code=ErrorCode.INVALID_SIDE)
        if action.kind == "roll":
            self.roll(action.side)
            return None
        if action.kind == "play":
            assert action.play is not None
            return self.play(action.side, action.play)
        if action.kind == "take":
            self.take(action.side)
            return None
        if action.kind == "reject":
            self.reject_resignation(action.side)
            return None
        raise IllegalActionError(f"unknown action {action.kind!r}", code=ErrorCode.WRONG_PHASE)

    # -- snapshot ---------------------------------------------------------------------------

    def to_dict(self) -> dict[str, object]:
        """The JSON/msgpack-able snapshot for clients (fields in the module docstring).

        The parts that change only with the position (board, pips, Position ID) are computed
        once per position, and the legal plays' text once per roll. The snapshot is kept
        with what it was built from, for :meth:`snapshot_changes`.
        """
        seen = self._position_parts()
        turn = self.turn
        to_act = self.to_act
        snap: dict[str, object] = {
            "phase": str(self.phase),
            "turn": None if turn is None else int(turn),
            "to_act": None if to_act is None else int(to_act),
            # The same list objects while the position stands (nobody mutates a sent
            # state), so telling two states apart is mostly identity checks.
            "board": seen[1],
            "bar": seen[2],
            "off": seen[3],
            "pips": seen[4],
            "dice": list(self.dice) if self.dice is not None else None,
            "cube": self.cube,
            "cube_owner": None if self.cube_owner is None else int(self.cube_owner),
            "cube_enabled": self.cube_enabled,
            "crawford": self.crawford,
            "max_cube": self.max_cube,
            "can_double": turn is not None and self.can_double(turn),
            "legal_plays": self._legal_offer() if self.phase == Phase.MOVE else [],
            "resignation": self._resignation_dict(),
            "outcome": None if self.outcome is None else self.outcome.to_dict(),
            "position_id": seen[5],
            "match_id": _gnubg_ids()[0](self),
        }
        self._snap = snap
        self._snap_of = self._inputs()
        return snap

    def snapshot_changes(self, before: Mapping[str, object]
                         ) -> tuple[dict[str, object], dict[str, object]] | None:
        """``(snapshot, changes)``: the snapshot now (what :meth:`to_dict` gives) and its keys
        whose values differ from ``before``'s, in snapshot order, exactly as
        ``server.protocol.lean.state_changes`` would find them; built from what changed in the
        game since ``before`` was built (each key is looked at only when something it is made
        of was replaced), not by building and comparing whole snapshots. None when ``before``
        is not this game's latest snapshot (then diff :meth:`to_dict`). Nothing changed:
        ``before`` itself and no changes."""
        was, last = self._snap_of, self._snap
        if was is None or last is None or before is not last:
            return None
        now = self._inputs()
        pos0, phase0, turn0, dice0, cube0, owner0, offer0, outcome0, legal0, flags0 = was
        pos, phase, turn, dice, cube, owner, offer, outcome, legal, flags = now
        part: dict[str, object] = {}
        new_phase = phase is not phase0
        new_turn = turn is not turn0
        new_dice = dice != dice0
        new_cube = cube != cube0 or owner is not owner0 or flags != flags0
        new_offer = offer is not offer0
        new_outcome = outcome is not outcome0
        if new_phase:
            _put(part, before, "phase", str(phase))
        if new_turn:
            _put(part, before, "turn", None if turn is None else int(turn))
        if new_phase or new_turn or new_offer:
            to_act = self.to_act
            _put(part, before, "to_act", None if to_act is None else int(to_act))
        seen = self._position_parts() if pos is not pos0 else None
        if seen is not None:
            _put(part, before, "board", seen[1])
            _put(part, before, "bar", seen[2])
            _put(part, before, "off", seen[3])
            _put(part, before, "pips", seen[4])
        if new_dice:
            _put(part, before, "dice", None if dice is None else list(dice))
        if new_cube:
            _put(part, before, "cube", cube)
            _put(part, before, "cube_owner", None if owner is None else int(owner))
            _put(part, before, "cube_enabled", self.cube_enabled)
            _put(part, before, "crawford", self.crawford)
            _put(part, before, "max_cube", self.max_cube)
        if new_phase or new_turn or new_cube:
            _put(part, before, "can_double", turn is not None and self.can_double(turn))
        if new_phase or legal is not legal0:
            _put(part, before, "legal_plays",
                 self._legal_offer() if phase == Phase.MOVE else [])
        if new_offer or new_cube:
            _put(part, before, "resignation", self._resignation_dict())
        if new_outcome:
            _put(part, before, "outcome", None if outcome is None else outcome.to_dict())
        if seen is not None:
            _put(part, before, "position_id", seen[5])
        if new_phase or new_turn or new_dice or new_cube or new_offer or new_outcome:
            _put(part, before, "match_id", _gnubg_ids()[0](self))
        self._snap_of = now
        if not part:
            return last, part
        snap = dict(last)
        snap.update(part)
        self._snap = snap
        return snap, part

    # -- internals ------------------------------------------------------------------------

    def _inputs(self) -> _Inputs:
        """What the snapshot is built from (each part is replaced, never changed in place)."""
        return (self.position, self.phase, self.turn, self.dice, self.cube, self.cube_owner,
                self.resignation, self.outcome, self._legal,
                (self.cube_enabled, self.crawford, self.max_cube))

    def _position_parts(self) -> tuple[Position, list[int], list[int], list[int], list[int],
                                       str]:
        """The position, its board, bar, off and pips as lists and its Position ID: the same
        objects while the position stands."""
        pos = self.position
        seen = self._seen
        if seen is None or seen[0] is not pos:
            board = pos.board
            pips = [
                sum(i * n for i, n in enumerate(board, 1) if n > 0) + 25 * pos.bar[0],
                sum((i - 25) * n for i, n in enumerate(board, 1) if n < 0) + 25 * pos.bar[1],
            ]
            seen = self._seen = (pos, list(board), list(pos.bar), list(pos.off), pips,
                                 _gnubg_ids()[1](pos))
        return seen

    def _resignation_dict(self) -> dict[str, object] | None:
        resignation = self.resignation
        if resignation is None:
            return None
        return {
            "side": int(resignation.side),
            "kind": str(resignation.kind),
            "points": resignation.kind.multiplier * self.cube,
        }

    def _legal_offer(self) -> list[Play]:
        """The legal plays as one list per roll (the same object until they change)."""
        cached = self._legal_list
        legal = self._legal
        if cached is None or cached[0] is not legal:
            cached = self._legal_list = (legal, list(legal))
        return cached[1]

    def _roll_die(self) -> int:
        value = self._dice_source.roll_die()
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 6:
            raise ValueError(f"the dice source rolled {value!r}, not an int in 1..6")
        return value

    def _roll_texts(self) -> tuple[tuple[str, ...], dict[str, Play]]:
        """The legal plays' text and the play each names, for the roll being played."""
        texts = self._texts
        if texts is None:
            assert self.dice is not None
            texts = self._texts = play_texts(self.position, *self.dice)
        return texts

    def _offered(self) -> dict[Play, Play]:
        """Each legal play of the roll being played by its steps as plain tuples (one play
        sent back exactly as ``legal_plays`` offered it is looked up, not searched)."""
        offered = self._by_steps
        if offered is None:
            offered = self._by_steps = {play: play for play in self._legal}
        return offered

    def _begin_move(self) -> Roll:
        """Phase ``move`` for the dice rolled; a roll that cannot be played passes at once."""
        rolled, who = self.dice, self.turn
        assert rolled is not None and who is not None
        self._legal = list(legal_plays(self.position, rolled))
        self._texts = None
        self._by_steps = None
        self.phase = Phase.MOVE
        if self._legal == [()]:
            self.history.append(Record("play", who, rolled, ()))
            self._pass_turn()
        return rolled

    def _pass_turn(self) -> None:
        assert self.turn is not None
        self.turn = self.turn.opponent
        self.position = self.position.with_turn(self.turn)
        self.dice = None
        self._legal = []
        self._texts = None
        self._by_steps = None
        self.phase = Phase.ROLL

    def _end(self, outcome: Outcome) -> Outcome:
        self.outcome = outcome
        self.resignation = None
        self._legal = []
        self._texts = None
        self._by_steps = None
        self.phase = Phase.OVER
        return outcome

    def _require_live(self) -> None:
        if self.phase == Phase.OVER:
            raise IllegalActionError("the game is over", code=ErrorCode.GAME_OVER)

    def _require_phase(self, phase: Phase) -> None:
        self._require_live()
        if self.phase != phase:
            raise IllegalActionError(
                f"that needs phase {phase}, the game is in phase {self.phase}",
                code=ErrorCode.WRONG_PHASE
            )

    def _require_turn(self, side: Side | int, phase: Phase) -> Side:
        who = as_side(side)
        self._require_phase(phase)
        if who != self.turn:
            raise IllegalActionError(f"it is side {self.turn}'s turn", code=ErrorCode.NOT_YOUR_TURN)
        return who

    def _check_double(self, side: Side | int) -> Side:
        who = self._require_turn(side, Phase.ROLL)
        if not self.cube_enabled:
            why = "no doubling in the Crawford game" if self.crawford else "the cube is off"
            raise IllegalActionError(why, code=ErrorCode.CUBE_DISABLED)
        if self.cube_owner is not None and self.cube_owner != who:
            raise IllegalActionError("your opponent owns the cube", code=ErrorCode.CANNOT_DOUBLE)
        if self.cube * 2 > self.max_cube:
            raise IllegalActionError(
                f"the cube is at its maximum ({self.max_cube})", code=ErrorCode.MAX_CUBE
            )
        return who

    def _require_doubled(self, side: Side | int) -> Side:
        who = as_side(side)
        self._require_phase(Phase.DOUBLE_OFFERED)
        assert self.turn is not None
        if who != self.turn.opponent:
            raise IllegalActionError(
                "only the side that was doubled can take or drop", code=ErrorCode.NOT_YOUR_TURN
            )
        return who

    def _require_resignation(self, side: Side | int) -> Resignation:
        who = as_side(side)
        self._require_live()
        if self.phase != Phase.RESIGN_OFFERED or self.resignation is None:
            raise IllegalActionError("no resignation is on offer", code=ErrorCode.NO_RESIGNATION)
        if who != self.resignation.side.opponent:
            raise IllegalActionError(
                "only the opponent of the resigning side can answer", code=ErrorCode.NOT_YOUR_TURN
            )
        return self.resignation


_GNUBG_IDS: list[Callable[[Any], str]] = []


def _gnubg_ids() -> list[Callable[[Any], str]]:
    """``[match_id, position_id]`` of ``server.rules.gnubg`` (which imports this module),
    imported once: an import in a function runs at every call once compiled."""
    if not _GNUBG_IDS:
        from server.rules.gnubg import match_id, position_id

        _GNUBG_IDS.extend((match_id, position_id))
    return _GNUBG_IDS


def _put(part: dict[str, object], before: Mapping[str, object], key: str,
         value: object) -> None:
    """``part[key] = value`` when ``value`` is not what ``before`` has (lean.state_changes'
    test: not the same object, and unequal or of another type)."""
    old = before[key]
    if old is not value and (old != value or type(old) is not type(value)):
        part[key] = value


__all__ = [
    "MAX_CUBE",
    "Action",
    "EndReason",
    "Game",
    "Outcome",
    "Phase",
    "Record",
    "Resignation",
]
