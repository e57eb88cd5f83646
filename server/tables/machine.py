"""One table as a pure state machine: seats, the game or match, clocks, strikes, disconnect
grace and versioned events. No asyncio, aiohttp or redis here; the time is an argument.
It is made of parts, each in its own module and tested directly in ``tests/tables/``, and
compiled as one unit with the game and the change-only form (``server/builds.py``):

- the state model (:mod:`server.tables.model`): seats, the game or match, the clock, versions;
- the commands (:mod:`server.tables.commands`): what each command and timer does to it;
- admission (:mod:`server.tables.admission`): who may sit, join and leave;
- the timers (:mod:`server.tables.clocks`): which deadlines are in force, from the state;
- the event builder (:mod:`server.tables.events`): each event's full and lean forms;
- the replay (:mod:`server.tables.replay`): a machine rebuilt from its events, from outside.

Commands go in (:meth:`TableMachine.act`, :meth:`~TableMachine.seat`,
:meth:`~TableMachine.leave`, :meth:`~TableMachine.connect`, :meth:`~TableMachine.disconnect`,
:meth:`~TableMachine.forfeit`, :meth:`~TableMachine.close`, :meth:`~TableMachine.settled`) and
timers come back as data: every call returns :class:`Effects` (also named ``Step``) with

- ``events``: the new versioned events (each an :class:`~server.protocol.codec.Outgoing` with
  its full and lean forms; the lean ``changes`` built from what the step changed, see
  :meth:`~server.tables.events.EventBuilder.built_changes`), to be stored before they are
  announced;
- ``deadlines``: timers to arm (:class:`Deadline`: "``side`` must act by ``at``", a grace
  period's end, the next game of a match); ``cancelled``: timers no longer in force (both
  the difference between the timers in force after the command and those armed before,
  :class:`~server.tables.clocks.Timers`);
- ``settle``: a game just ended: the :class:`FinishedGame` the shell must settle, once.

When a deadline passes the shell calls :meth:`TableMachine.expire` with it.

The machine makes every check of the table's rules; the shell asks before it awaits and
carries out the answer:

- a new table's specification (mode, match length, tournament, who opens it):
  :func:`~server.tables.admission.check_new_table`, for a table a player creates and for a
  pair seated by matchmaking, a tournament or a game against the computer;
- who may sit: :meth:`TableMachine.check_join` (before the shell takes the seat lock in
  Redis) and :meth:`TableMachine.seat` (which checks again, after the awaits): an open table,
  a free seat, no computer player at a tournament table; one seat per player
  (:func:`already_seated`, from the seat lock's answer);
- what leaving does: :meth:`TableMachine.leave` (:class:`LeaveKind`: close an open table,
  forfeit a game in play, or give back only the seat);
- what to settle: :attr:`FinishedGame.settles` and :attr:`FinishedGame.rated_id`.

Clocks: each decision (roll or double, move, take or drop, answer a resignation) must come
within ``decision_time``; its deadline is in every state. When it passes, the player gets a
strike and the rules' default action is taken (roll, first legal play, take, reject); the
``max_strikes``-th strike of a game forfeits it (a match: the match) at the current cube.
A player whose last socket closes has ``grace_period`` to come back; past it, the game (the
match) is forfeited. Leaving a table during a game is the same kind of loss. A player whose
socket was on a node found dead (the server's fault, not the player's: the shell says when
the node was found dead, ``lost_at``) has ``node_loss_grace`` from then instead, when that
ends later (:meth:`~TableMachine.disconnect`, :meth:`~TableMachine.take_over`).

Held: while the table's node cannot store (Redis is away), :meth:`TableMachine.hold` stops
every timer where it is (nobody gets a strike, an automatic move or a forfeit), commands are
refused with ``unavailable`` and presence changes wait; :meth:`TableMachine.resume` starts the
timers again with the time they had left plus an allowance, emits ``resumed``, then applies the
presence changes made meanwhile. The state's ``held`` says whether play is held.

Presence events are bounded: a seat's ``player_disconnected`` is announced only while the seat
has used fewer than ``presence_events`` of its presence events in the current game (each
announced disconnect counts two: itself and the ``player_reconnected`` that answers it; only an
announced disconnect's reconnect is announced). Past that, a disconnect and its reconnect
change the seat (``connected``, ``grace_deadline``: in the state of the next event) and the
grace period runs as always, but no event is logged or sent. So one seat adds at most
``presence_events`` events per game (+1: the reconnect of a disconnect announced in the game
before), however often its player reconnects.

Replay: :meth:`TableMachine.replay` (:func:`server.tables.replay.replay`) rebuilds a machine
from its stored (lean) events: the game is played again through the machine's commands with
the dice the events recorded, and the clocks, strikes and seats are taken from the states the
events carry (``server.protocol.lean.apply_event`` folds them). Which nodes a player's sockets
are on is not in the log: a replayed seat has none (its ``connected`` shows what the log last
said until the seat changes).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from server.protocol.messages import TableMode
from server.rules import DiceSource
from server.tables.admission import already_seated, bot_not_allowed, check_new_table
from server.tables.commands import TableCommands
from server.tables.model import (
    BOOSTED,
    BOT_PREFIX,
    CLOCK,
    EMPTY,
    GRACE,
    GUEST_PREFIX,
    HOLD_RETRY_AFTER,
    NEXT_GAME,
    STORE_LOST,
    TOURNAMENT_CANCELLED,
    Deadline,
    Effects,
    FinishedGame,
    Hold,
    LeaveKind,
    MachineSettings,
    Seat,
    TableStatus,
    merged,
)
from server.tables.ratings import FIBS, TABLE42
from server.tables.replay import replay

Step = Effects
"""The name :class:`~server.tables.model.Effects` had first; both name the same class."""


class TableMachine(TableCommands):
    """A table's state and its commands; see the module docstring. Not thread-safe, never
    awaits."""

    @classmethod
    def replay(
        cls,
        events: Iterable[Mapping[str, Any]],
        *,
        table_id: str,
        mode: TableMode,
        match_length: int,
        settings: MachineSettings,
        dice_factory: Callable[[], DiceSource],
        tournament_id: str | None = None,
        created_at: float = 0.0,
    ) -> TableMachine:
        """The machine whose events are ``events`` (:func:`server.tables.replay.replay`)."""
        return replay(cls, events, table_id=table_id, mode=mode, match_length=match_length,
                      settings=settings, dice_factory=dice_factory,
                      tournament_id=tournament_id, created_at=created_at)


__all__ = [
    "BOOSTED",
    "BOT_PREFIX",
    "CLOCK",
    "EMPTY",
    "FIBS",
    "GRACE",
    "GUEST_PREFIX",
    "HOLD_RETRY_AFTER",
    "NEXT_GAME",
    "STORE_LOST",
    "TABLE42",
    "TOURNAMENT_CANCELLED",
    "Deadline",
    "Effects",
    "FinishedGame",
    "Hold",
    "LeaveKind",
    "MachineSettings",
    "Seat",
    "Step",
    "TableMachine",
    "TableStatus",
    "already_seated",
    "bot_not_allowed",
    "check_new_table",
    "merged",
]
