"""One table: its seats and watchers, the game or match played there, clocks, strikes,
disconnect grace, versioned events and the end-of-game settlement.

A table lives on exactly one node, its owner. Everything that changes it runs on that node's
event loop, synchronously, so a table needs no locks: a command is checked, applied to the
``server.rules`` game, and turned into versioned events, all without awaiting. Only joining
(the seat lock is in Redis), ``sync`` (may read the log from Redis) and the end of a game
(settlement, result write) await.

Versions: every event of a table carries ``v`` (1, 2, 3 ...). The last ``recent_events`` are
kept in memory and every event is appended to the table's Redis log by the write-behind
flusher; ``sync(since)`` returns the events after ``since`` and the full state.

The end of a game, in this order (nothing is announced before it is stored):

1. at the same time, so that the two round trips to Redis overlap: settle ratings through the
   rating store (Table42 for a Competitive single game, FIBS when a rated match ends, Boosted
   points for a Boosted game), and, in one pipeline, write the table's buffered events
   (``game_over``/``match_over`` included) and append the result to the table's results;
   each is retried on Redis errors;
2. once both are stored: broadcast ``game_over`` (and ``match_over``) to players and
   watchers, then push the rating events to the players wherever they are connected;
3. put each player's ``rating``/``boosted`` event (with its ``event_id``) in that player's
   inbox, then push it live; the node that writes it to one of the player's sockets removes
   it from the inbox, and a player connected nowhere gets it at the next connection: each
   event is delivered once.

Every write a finished game needs (the result with the buffered events, the inbox, the seat
release) is retried with back-off until Redis has stored it (issue 12: an outage delays the
end of a game, it loses nothing); the settlement is retried the same way in the background.

Clocks: each decision (roll or double, move, take or drop, answer a resignation) must come
within ``decision_time``; its deadline is in every state. When it passes, the player gets a
strike and the rules' default action is taken (roll, first legal play, take, reject); the
``max_strikes``-th strike of a game forfeits it (a match: the match) at the current cube.
A player whose last socket closes has ``grace_period`` to come back; past it, the game (the
match) is forfeited. Leaving a table during a game is the same kind of loss.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

import msgpack
from redis.exceptions import RedisError

from server.accounts import is_bot_id
from server.logs import game_id as log_game_id
from server.protocol.codec import Outgoing, WireFormat
from server.protocol.errors import ErrorCode, ProtocolError
from server.protocol.lean import apply_event, full_form, state_changes
from server.protocol.messages import (
    GAME_ACTIONS,
    AcceptResign,
    Double,
    Drop,
    Join,
    Leave,
    Message,
    Play,
    RejectResign,
    Resign,
    Roll,
    Sync,
    TableMessage,
    TableMode,
    Take,
    Unwatch,
    Watch,
)
from server.ratings import (
    FIBS,
    TABLE42,
    RatedPlayer,
    RatingPlan,
    boosted_events,
    plan_rating,
    rating_events,
)
from server.rules import (
    DiceSource,
    EndReason,
    Game,
    Match,
    Outcome,
    Phase,
    ResultKind,
    RulesError,
    Side,
    format_play,
)

if TYPE_CHECKING:
    from server.lobby import Actor, Lobby

log = logging.getLogger(__name__)

SETTLE_ATTEMPTS = 3
#: The longest wait between two tries of an end-of-game write while Redis is away.
STORE_MAX_DELAY = 1.0
#: The longest wait between two tries of a settlement Redis refused at a game's end.
LATE_SETTLE_MAX_DELAY = 30.0
_GAME_ACTIONS = frozenset(GAME_ACTIONS)


class TableStatus(StrEnum):
    OPEN = "open"  # waiting for an opponent
    PLAYING = "playing"  # a game or match in progress (also between the games of a match)
    FINISHED = "finished"  # over; kept for ``finished_linger`` so players can sync
    CLOSED = "closed"  # gone


@dataclass(slots=True)
class Seat:
    """A seated player. ``nodes`` are the nodes where the player has sockets now."""

    player: str
    name: str
    is_guest: bool
    address: str
    nodes: set[str] = field(default_factory=set)
    grace_deadline: float | None = None
    grace_timer: asyncio.TimerHandle | None = None

    @property
    def is_connected(self) -> bool:
        return bool(self.nodes)

    def to_dict(self, side: int) -> dict[str, Any]:
        return {
            "side": side,
            "player": self.player,
            "name": self.name,
            "guest": self.is_guest,
            "bot": is_bot_id(self.player),
            "connected": self.is_connected,
            "grace_deadline": self.grace_deadline,
        }


def with_event_ids(pushes: list[tuple[str, dict[str, Any]]]
                   ) -> list[tuple[str, dict[str, Any]]]:
    """Each rating event with its ``event_id`` (``<game or match id>:<type>:<player>``): the
    inbox removes a delivered event by it, and a client may acknowledge it."""
    return [(player, {**event, "event_id": f"{event.get('game_id')}:{event.get('type')}:"
                                           f"{player}"}) for player, event in pushes]


def _rules_error(exc: RulesError) -> ProtocolError:
    return ProtocolError(exc.code, str(exc))


class Table:
    """A table owned by this node. Created by the lobby; see the module docstring."""

    def __init__(
        self,
        lobby: Lobby,
        *,
        table_id: str,
        mode: TableMode,
        match_length: int,
        tournament_id: str | None,
        dice_factory: Callable[[], DiceSource],
    ) -> None:
        self.lobby = lobby
        self.settings = lobby.settings
        self.id = table_id
        self.mode = mode
        self.match_length = match_length
        self.tournament_id = tournament_id
        self.created_at = time.time()
        self.status = TableStatus.OPEN
        self.seats: list[Seat | None] = [None, None]
        self.watchers: dict[tuple[str, str], str] = {}
        self.version = 0
        # The latest events as (version, msgpack bytes): sync decodes them, which is rare,
        # and bytes cost far less memory (and garbage-collector time) than the dicts.
        self.recent: deque[tuple[int, bytes]] = deque(maxlen=self.settings.recent_events)
        self.plan: RatingPlan | None = None
        self.match: Match | None = None
        self.game: Game | None = None
        self.game_no = 0
        self.strikes = [0, 0]
        self.deadline: float | None = None
        self._clock: asyncio.TimerHandle | None = None
        self._clock_side: Side | None = None
        self._dice_factory = dice_factory
        self._dice: DiceSource | None = None
        self._pending_seat: str | None = None
        self._finishing = False
        self._next_game: asyncio.TimerHandle | None = None
        self._clock_token: tuple[int, int, Phase] | None = None
        self._clock_due: float | None = None  # loop time the current decision's clock runs out
        self._last_state: dict[str, Any] | None = None  # the state of the latest event
        # The state after the event just before ``recent[0]`` (None: no state yet): the full
        # form of the recent events is rebuilt from it for a sync.
        self._base_state: dict[str, Any] | None = None
        # Top-level state keys the next lean event sends whole: a full state handed out
        # between two events (sync, resume, watch) may differ from the latest event's there.
        self._forced: set[str] = set()
        self._game_starts: list[int] = []  # versions of the game_start events
        self._snapshot_status: TableStatus | None = None
        self._seats_state: list[dict[str, Any] | None] | None = None  # see _seats_dicts
        self._plan_state: dict[str, Any] | None = None
        self._loop = asyncio.get_running_loop()
        self.creator_address: str | None = None  # counts against its address while open
        self._ended_at = 0.0  # perf_counter of the last game's end (metrics)

    # --- reading ---------------------------------------------------------------------------

    @property
    def is_listed(self) -> bool:
        return self.mode is not TableMode.PRIVATE

    @property
    def is_single_game(self) -> bool:
        return self.match_length == 0

    def side_of(self, player: str) -> Side | None:
        for side, seat in enumerate(self.seats):
            if seat is not None and seat.player == player:
                return Side(side)
        return None

    def seated_players(self) -> list[str]:
        return [seat.player for seat in self.seats if seat is not None]

    def summary(self) -> dict[str, Any]:
        """What the lobby lists about the table."""
        return {
            "table": self.id,
            "mode": str(self.mode),
            "match_length": self.match_length,
            "tournament_id": self.tournament_id,
            "status": str(self.status),
            "players": [None if s is None else s.player for s in self.seats],
            "watchers": len(self.watchers),
            "created_at": self.created_at,
            "node": self.lobby.node_id,
        }

    def state(self) -> dict[str, Any]:
        """The full table state sent with every game event (and on resume / sync).

        Built for every event, so the seats and the rating plan, which rarely change, are
        reused from the previous state until they do (nobody mutates a sent state).
        """
        game = self.game
        clock_side = self._clock_side
        plan = self.plan
        if plan is None:
            rating = None
        else:
            rating = self._plan_state
            if rating is None:
                rating = self._plan_state = plan.to_dict()
        return {
            "status": str(self.status),
            "seats": self._seats_dicts(),
            "game_no": self.game_no,
            "game": None if game is None else game.to_dict(),
            "clock": {
                "side": None if clock_side is None else int(clock_side),
                "deadline": self.deadline,
                "limit": self.settings.decision_time,
                "strikes": list(self.strikes),
                "max_strikes": self.settings.max_strikes,
            },
            "match": self._match_state(),
            "rating": rating,
        }

    def _seats_dicts(self) -> list[dict[str, Any] | None]:
        seats = self._seats_state
        if seats is None:
            seats = self._seats_state = [
                None if s is None else s.to_dict(i) for i, s in enumerate(self.seats)
            ]
        return seats

    def _seats_changed(self) -> None:
        """A seat was taken, or its player's connection or grace deadline changed."""
        self._seats_state = None

    def _match_state(self) -> dict[str, Any] | None:
        match = self.match
        if match is None:
            return None
        winner = match.winner
        return {
            "length": match.length,
            "score": list(match.score),
            "crawford": match.is_crawford_game,
            "winner": None if winner is None else int(winner),
        }

    def snapshot(self) -> dict[str, Any]:
        """What the write-behind flusher stores as the table's snapshot in Redis (the state
        of the latest event that carried one: building a state costs more than a move)."""
        state = self._last_state if self._last_state is not None else self.state()
        return {"v": self.version, "summary": self.summary(), "state": state}

    # --- events ----------------------------------------------------------------------------

    def _emit(
        self, kind: str, fields: dict[str, Any], *, with_state: bool = True,
        broadcast: bool = True,
    ) -> Outgoing:
        self.version += 1
        head: dict[str, Any] = {"type": kind, "table": self.id, "v": self.version}
        head.update(fields)
        if with_state:
            # Both forms (PROTOCOL.md §5.1): the full one carries the whole state, the lean
            # one what changed since the previous state-carrying event (a game's start: all).
            self._sync_clock()
            state = self.state()
            before = self._last_state
            obj = dict(head)
            obj["state"] = state
            changes = None if kind == "game_start" else state_changes(before, state,
                                                                       self._forced)
            if changes is None:
                lean = obj
            else:
                lean = head
                head["changes"] = changes
            if self._forced:
                self._forced = set()
            if kind == "game_start":
                self._game_starts.append(self.version)
            self._last_state = state
        else:
            obj = lean = head
        out = Outgoing(obj, None if lean is obj else lean)
        # The log (in memory and in Redis) keeps the lean form; the full form is rebuilt from
        # it for a sync (see _events_in_form).
        packed = out.frame(WireFormat.MSGPACK, True)
        recent = self.recent
        if len(recent) == recent.maxlen:
            _, oldest = recent.popleft()
            self._base_state = apply_event(self._base_state, msgpack.unpackb(oldest))
        recent.append((self.version, packed))
        persistence = self.lobby.persistence
        persistence.append_event(self.id, packed)
        # A new status (open, playing, finished) must reach the snapshot at once: other
        # nodes read it to tell whether a player's seat is in a live game.
        urgent = self.status is not self._snapshot_status
        self._snapshot_status = self.status
        persistence.mark_dirty(self.id, self.snapshot, urgent=urgent)
        if broadcast:
            self._broadcast(out)
        return out

    def _broadcast(self, out: Outgoing) -> None:
        lobby = self.lobby
        for seat in self.seats:
            if seat is not None and seat.nodes:
                lobby.deliver_player(seat.player, seat.nodes, out)
        if self.watchers:
            lobby.deliver_conns(self.watchers.keys(), out)

    # --- commands ----------------------------------------------------------------------------

    async def handle(self, actor: Actor, msg: TableMessage) -> None:
        """Apply one command from ``actor``. Raises ProtocolError (sent back as an error)."""
        if self.status is TableStatus.CLOSED:
            raise ProtocolError(ErrorCode.NO_SUCH_TABLE, f"table {self.id} is closed",
                                field="table")
        if type(msg) in _GAME_ACTIONS:  # the common case first: a move
            started = time.perf_counter()
            self._act(actor, msg)
            metrics = self.lobby.metrics
            metrics.moves.inc()
            metrics.move_time.observe(time.perf_counter() - started)
        elif isinstance(msg, Watch):
            self.watch(actor, msg)
            return
        elif isinstance(msg, Sync):
            await self.sync(actor, msg)
            return
        elif isinstance(msg, Join):
            await self.join(actor)
        elif isinstance(msg, Leave):
            await self.leave(actor)
        elif isinstance(msg, Unwatch):
            self.unwatch(actor.node, actor.conn)
        else:  # pragma: no cover - the lobby routes only table messages here
            raise ProtocolError(ErrorCode.UNKNOWN_TYPE, f"{msg.TYPE} is not a table command")
        if msg.ref is not None:
            # A request that carried an id gets exactly one answer: this, or an error.
            self.lobby.reply(actor, {"type": "ack", "ref": msg.ref, "table": self.id,
                                     "v": self.version})

    def _act(self, actor: Actor, msg: Message) -> None:
        side = self.side_of(actor.player)
        if side is None:
            raise ProtocolError(
                ErrorCode.NOT_SEATED, f"you are not playing at table {self.id}", field="table"
            )
        game = self.game
        if self.status is TableStatus.FINISHED:  # the same answer during and after settling
            raise ProtocolError(ErrorCode.GAME_OVER, "the game is over")
        if game is None or self.status is not TableStatus.PLAYING:
            raise ProtocolError(ErrorCode.NOT_PLAYING, f"no game in progress at table {self.id}")
        if self._finishing or game.is_over:
            raise ProtocolError(ErrorCode.GAME_OVER, "the game is over")
        outcome: Outcome | None = None
        kind: str | None = None
        fields: dict[str, Any] = {"side": int(side)}
        try:
            if isinstance(msg, Play):
                before = game.position
                outcome = game.play(side, msg.play)
                chosen = game.history[-1].play
                kind = "moved"
                # The play in normal form as text (hits marked), however it was sent.
                fields["play"] = "" if chosen is None else format_play(chosen, before)
            elif isinstance(msg, Roll):
                dice = game.roll(side)
                kind = "rolled"
                fields.update(self._roll_record(side, dice))
            elif isinstance(msg, Double):
                if game.cube >= game.max_cube:
                    # Checked first: with the cube at its maximum the server rolls for the
                    # player at once, so a double can only ever arrive in the wrong phase.
                    raise ProtocolError(
                        "max_cube", f"the cube is at its maximum ({game.max_cube})"
                    )
                game.double(side)
                kind = "doubled"
                fields["cube"] = game.cube * 2
            elif isinstance(msg, Take):
                game.take(side)
                kind = "taken"
                fields["cube"] = game.cube
            elif isinstance(msg, Drop):
                outcome = game.drop(side)
                kind = "dropped"
                fields["cube"] = game.cube
            elif isinstance(msg, Resign):
                game.resign(side, str(msg.kind))
                resignation = game.resignation
                kind = "resign_offered"
                fields["kind"] = str(msg.kind)
                fields["points"] = game.cube * (
                    1 if resignation is None else resignation.kind.multiplier
                )
            elif isinstance(msg, AcceptResign):
                outcome = game.accept_resignation(side)
            elif isinstance(msg, RejectResign):
                game.reject_resignation(side)
                kind = "resign_rejected"
        except RulesError as exc:
            raise _rules_error(exc) from None
        if outcome is None:
            fields["rolls"] = self._auto_rolls()
        if kind is not None:
            self._emit(kind, fields)
        if outcome is not None:
            self._game_over(outcome)

    def _roll_record(self, side: Side, dice: tuple[int, int]) -> dict[str, Any]:
        """``{side, dice, passed}`` for a roll just made (passed: it had no legal play)."""
        game = self.game
        assert game is not None
        passed = game.phase is not Phase.MOVE or game.turn != side
        return {"side": int(side), "dice": list(dice), "passed": passed}

    def _auto_rolls(self) -> list[dict[str, Any]]:
        """Roll for every player on roll who has no cube decision to make (the cube is not
        theirs to use), so each event's state waits for a real decision. Returns the rolls,
        in order: ``[{side, dice, passed}]``."""
        game = self.game
        assert game is not None
        rolls: list[dict[str, Any]] = []
        for _ in range(64):  # a pass-pass-pass chain is short; the bound is a safety net
            turn = game.turn
            if game.phase is not Phase.ROLL or turn is None or game.can_double(turn):
                break
            try:
                dice = game.roll(turn)
            except RulesError:
                log.exception("table %s: automatic roll failed", self.id)
                break
            rolls.append(self._roll_record(turn, dice))
        return rolls

    # --- seats ---------------------------------------------------------------------------

    def seat_creator(self, actor: Actor) -> None:
        """Seat the table's creator (seat lock already held) at side 0."""
        self.seats[0] = Seat(actor.player, actor.name, actor.is_guest, actor.address,
                             {actor.node})
        self._seats_changed()
        self._emit("seated", {"side": 0, "player": actor.player, "name": actor.name},
                   with_state=False)

    def seat_pair(self, players: list[tuple[Actor, set[str]]]) -> None:
        """Seat two players at once (matchmaking; both seat locks held) and start."""
        for side, (actor, nodes) in enumerate(players):
            self.seats[side] = Seat(actor.player, actor.name, actor.is_guest, actor.address,
                                    set(nodes))
            self._seats_changed()
            self._emit("seated", {"side": side, "player": actor.player, "name": actor.name},
                       with_state=False)
        self._start_play()

    async def join(self, actor: Actor) -> None:
        if self.side_of(actor.player) is not None:
            self.lobby.reply(actor, self._resume_message(actor.player))
            return
        if self.mode is TableMode.TOURNAMENT and is_bot_id(actor.player):
            raise ProtocolError(ErrorCode.BOT_NOT_ALLOWED,
                                "computer players do not play in tournaments", field="table")
        if self.status is not TableStatus.OPEN or self._pending_seat is not None:
            raise ProtocolError(ErrorCode.TABLE_FULL, f"table {self.id} is not open",
                                field="table")
        free = [i for i, s in enumerate(self.seats) if s is None]
        if not free:
            raise ProtocolError(ErrorCode.TABLE_FULL, f"table {self.id} is full", field="table")
        self._pending_seat = actor.player
        try:
            held = await self.lobby.persistence.take_seat(actor.player, self.id)
        except (RedisError, OSError) as exc:
            raise ProtocolError(ErrorCode.UNAVAILABLE, "Redis is unavailable") from exc
        finally:
            self._pending_seat = None
        if held is not None:
            raise ProtocolError(
                ErrorCode.ALREADY_SEATED, f"you already hold a seat at table {held}",
                field="table",
            )
        if self.status is not TableStatus.OPEN:  # closed while we waited
            await self.lobby.persistence.release_seat(actor.player, self.id)
            raise ProtocolError(ErrorCode.TABLE_FULL, f"table {self.id} is not open",
                                field="table")
        side = free[0]
        self.seats[side] = Seat(actor.player, actor.name, actor.is_guest, actor.address,
                                {actor.node})
        self._seats_changed()
        self._emit("seated", {"side": side, "player": actor.player, "name": actor.name},
                   with_state=False)
        if all(s is not None for s in self.seats):
            self._start_play()

    async def leave(self, actor: Actor) -> None:
        side = self.side_of(actor.player)
        if side is None:
            if (actor.node, actor.conn) in self.watchers:
                self.unwatch(actor.node, actor.conn)
                return
            raise ProtocolError(ErrorCode.NOT_SEATED, f"you are not at table {self.id}",
                                field="table")
        if self.status is TableStatus.OPEN:
            players = self.seated_players()
            self.close("left", release=False)
            await self._release(players)  # before answering, so the seat is free at once
            return
        if self.status is TableStatus.PLAYING and not self._finishing:
            self._forfeit(side, EndReason.LEAVE)
            if self._finishing:
                return
        # Finished (or settling): just give the seat lock back.
        await self.lobby.persistence.release_seat(actor.player, self.id)

    def watch(self, actor: Actor, msg: Watch) -> None:
        key = (actor.node, actor.conn)
        if key not in self.watchers and len(self.watchers) >= self.settings.max_watchers:
            raise ProtocolError(ErrorCode.TOO_MANY_WATCHERS,
                                f"table {self.id} has {len(self.watchers)} watchers",
                                field="table")
        self.watchers[key] = actor.player
        self.lobby.reply(actor, {
            "type": "watching", "table": self.id, "v": self.version, "ref": msg.ref,
            "summary": self.summary(), "state": self._handout(),
        })

    def unwatch(self, node: str, conn: str) -> None:
        self.watchers.pop((node, conn), None)

    async def sync(self, actor: Actor, msg: Sync) -> None:
        since = min(msg.since, self.version)
        recent = self.recent
        events: list[dict[str, Any]]
        if since == self.version:
            events = []
        elif recent and recent[0][0] <= since + 1:
            events = [msgpack.unpackb(packed) for v, packed in recent if v > since]
            if not actor.lean:
                events = self._full_events(events)
        else:
            # From the Redis log; the full form is rebuilt from the start of the game.
            start = since
            if not actor.lean:
                start = max((v - 1 for v in self._game_starts if v <= since + 1), default=since)
            try:
                events = await self.lobby.persistence.events_since(self.id, start)
            except (RedisError, OSError) as exc:
                raise ProtocolError(ErrorCode.UNAVAILABLE, "Redis is unavailable") from exc
            events = [e for e in events if e["v"] <= self.version]
            if not actor.lean:
                events = [e for e in self._full_events(events) if e["v"] > since]
        complete = not events or events[0]["v"] == since + 1 or since == self.version
        self.lobby.reply(actor, {
            "type": "sync", "table": self.id, "ref": msg.ref, "since": msg.since,
            "v": self.version, "complete": complete,
            "events": events,
            "summary": self.summary(), "state": self._handout(),
        })

    def _handout(self) -> dict[str, Any]:
        """The full state for a ``sync``, ``resume`` or ``watching`` answer. Where it differs
        from the latest event's state, the next lean event sends that part whole, so that
        clients holding either state end up with the same one."""
        state = self.state()
        last = self._last_state
        if last is not None:
            self._forced.update(k for k, v in state.items() if last.get(k) != v)
        return state

    def _full_events(self, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """``events`` (lean, in order) in the full form. From the memory log they are rebuilt
        from the state before it; from the Redis log, from the first event that carries a
        whole state (a game's start; change-only events before it keep no state)."""
        state: dict[str, Any] | None = None
        if events and self.recent and events[0]["v"] >= self.recent[0][0]:
            state = self._base_state
            for v, packed in self.recent:
                if v >= events[0]["v"]:
                    break
                state = apply_event(state, msgpack.unpackb(packed))
        out: list[dict[str, Any]] = []
        for event in events:
            try:
                state = apply_event(state, event)
            except ValueError:
                state = None
            out.append(full_form(event, state))
        return out

    def _resume_message(self, player: str) -> dict[str, Any]:
        side = self.side_of(player)
        return {
            "type": "resume", "table": self.id, "v": self.version,
            "side": None if side is None else int(side),
            "summary": self.summary(), "state": self._handout(),
        }

    # --- presence -------------------------------------------------------------------------

    def attach(self, actor: Actor) -> bool:
        """``actor``'s player has a socket on ``actor.node`` again. Sends it ``resume``."""
        side = self.side_of(actor.player)
        if side is None or self.status is TableStatus.CLOSED:
            return False
        seat = self.seats[side]
        assert seat is not None
        seat.nodes.add(actor.node)
        self._seats_changed()
        if seat.grace_timer is not None and self._finishing:
            seat.grace_timer.cancel()  # the game is being settled: no event in between
            seat.grace_timer = None
            seat.grace_deadline = None
            self._seats_changed()
        if seat.grace_timer is not None:
            seat.grace_timer.cancel()
            seat.grace_timer = None
            seat.grace_deadline = None
            self._seats_changed()
            self._emit("player_reconnected", {"side": int(side), "player": seat.player})
        self.lobby.reply(actor, self._resume_message(actor.player))
        return True

    def detach(self, player: str, node: str) -> None:
        """``player`` has no socket on ``node`` any more; start the grace period if that was
        the last node."""
        side = self.side_of(player)
        if side is None:
            return
        seat = self.seats[side]
        assert seat is not None
        seat.nodes.discard(node)
        self._seats_changed()
        if seat.nodes or seat.grace_timer is not None:
            return
        if self.status not in (TableStatus.OPEN, TableStatus.PLAYING) or self._finishing:
            return
        grace = self.settings.grace_period
        seat.grace_deadline = time.time() + grace
        self._seats_changed()
        seat.grace_timer = self._loop.call_later(grace, self._grace_expired, side)
        self._emit(
            "player_disconnected",
            {"side": int(side), "player": player, "deadline": seat.grace_deadline,
             "grace": grace},
        )

    def _grace_expired(self, side: Side) -> None:
        seat = self.seats[side]
        if seat is None:
            return
        seat.grace_timer = None
        if seat.nodes:
            return
        try:
            if self.status is TableStatus.OPEN:
                self.close("abandoned")
            elif self.status is TableStatus.PLAYING and not self._finishing:
                self._forfeit(side, EndReason.DISCONNECT)
        finally:
            self.lobby.kick_flush()

    # --- games -----------------------------------------------------------------------------

    def _start_play(self) -> None:
        """Both seats are filled: decide how the game is rated and start the first game."""
        s0, s1 = self.seats
        assert s0 is not None and s1 is not None
        self.plan = plan_rating(
            self.mode,
            self.match_length,
            (RatedPlayer(s0.player, s0.is_guest, s0.address, is_bot_id(s0.player)),
             RatedPlayer(s1.player, s1.is_guest, s1.address, is_bot_id(s1.player))),
        )
        self.status = TableStatus.PLAYING
        self._dice = self._dice_factory()
        if not self.is_single_game:
            self.match = Match(self.match_length, dice=self._dice)
        self.lobby.table_changed(self)
        self._start_game()

    def _start_game(self) -> None:
        self.game_no += 1
        if self.match is not None:
            self.game = self.match.next_game()
        else:
            self.game = Game(dice=self._dice)
        self.strikes = [0, 0]
        game = self.game
        self.lobby.metrics.games.inc()
        try:
            game.start()
        except RulesError:
            log.exception("table %s: opening roll failed", self.id)
            return
        s0, s1 = self.seats
        assert s0 is not None and s1 is not None and self.plan is not None
        self._emit("game_start", {
            "game_id": self.game_id(),
            "game_no": self.game_no,
            "players": [s0.player, s1.player],
            "names": [s0.name, s1.name],
            "mode": str(self.mode),
            "match_length": self.match_length,
            "opening_rolls": [list(r) for r in game.opening_rolls],
            "rating": self.plan.to_dict(),
            "rolls": self._auto_rolls(),
        })

    def game_id(self) -> str:
        return f"{self.id}-g{self.game_no}"

    def match_id(self) -> str:
        return f"{self.id}-m"

    def _forfeit(self, side: Side, reason: EndReason) -> None:
        """``side`` loses the game (a match: the match) at the current cube."""
        game = self.game
        if game is None or self._finishing:
            return
        try:
            if self.match is not None:
                outcome = self.match.forfeit(side, reason)
            else:
                outcome = game.forfeit(side, reason)
        except RulesError:
            log.exception("table %s: forfeit failed", self.id)
            return
        if outcome is None:
            # Between two games of a match: the match is lost, no game is scored.
            if self._next_game is not None:
                self._next_game.cancel()
                self._next_game = None
            outcome = Outcome.of(side.opponent, ResultKind.SINGLE, reason, 1)
            self._game_over(outcome, game_counted=False)
            return
        self._game_over(outcome)

    def _game_over(self, outcome: Outcome, *, game_counted: bool = True) -> None:
        self._disarm_clock()
        self._finishing = True
        self._ended_at = time.perf_counter()
        metrics = self.lobby.metrics
        metrics.games.dec()
        metrics.games_finished.inc()
        metrics.settlements_pending.inc()
        log_game_id.set(self.game_id())  # the task below, and its log lines, carry it
        task = self.lobby.spawn(self._finish(outcome, game_counted))
        log_game_id.set("")
        del task

    async def _finish(self, outcome: Outcome, game_counted: bool) -> None:
        try:
            await self._settle_and_announce(outcome, game_counted)
        except Exception:
            log.exception("table %s: finishing game %d failed", self.id, self.game_no)
        finally:
            self.lobby.metrics.settlements_pending.dec()
            await self.lobby.flush()

    async def _settle_and_announce(self, outcome: Outcome, game_counted: bool) -> None:
        finished_at = time.time()
        s0, s1 = self.seats
        assert s0 is not None and s1 is not None and self.plan is not None
        seats = (s0, s1)
        winner, loser = seats[outcome.winner], seats[outcome.winner.opponent]
        match = self.match
        match_over = match is None or match.is_over
        game_id = self.game_id()
        plan = self.plan
        result: dict[str, Any] = {
            "game_id": game_id,
            "game_no": self.game_no,
            "table": self.id,
            "mode": str(self.mode),
            "winner": winner.player,
            "loser": loser.player,
            "winner_side": int(outcome.winner),
            "kind": str(outcome.kind),
            "reason": str(outcome.reason),
            "cube": outcome.cube,
            "points": outcome.points if game_counted else 0,
            "finished_at": finished_at,
            "rating": plan.to_dict(),
            "match": self._match_state(),
        }
        # The settlement and the result are written at the same time (two round trips to
        # Redis, overlapped): the announcements are sent once both are stored. The settlement's
        # inputs are fixed now, so a late retry does not depend on the table any more.
        settle_once = self._settlement(outcome, winner, loser, finished_at, match_over,
                                       game_counted)
        settling = asyncio.ensure_future(self._settle(settle_once))
        if match_over:
            self.status = TableStatus.FINISHED
        # The announcements get their versions now and are stored in the same pipeline as
        # the result; they are sent only once that pipeline has been written.
        announcements = [self._emit("game_over", {key: result[key] for key in (
            "game_id", "game_no", "winner", "loser", "winner_side", "kind", "reason", "cube",
            "points", "rating",
        )}, broadcast=False)]
        if match is not None and match_over:
            match_winner = seats[match.winner] if match.winner is not None else winner
            announcements.append(self._emit("match_over", {
                "match_id": self.match_id(), "winner": match_winner.player,
                "loser": seats[1 - seats.index(match_winner)].player,
                "score": list(match.score), "reason": str(outcome.reason),
            }, broadcast=False))
        persistence = self.lobby.persistence
        try:
            await self._retry(game_id, "the result", persistence.write_result, self.id, result,
                              ())
        except BaseException:
            settling.cancel()
            raise
        self.lobby.metrics.settlements.inc()
        if match_over:
            # Every event is in the table's Redis log now; a finished table lingers for a
            # while, and sync reads the log instead of holding the events in memory.
            self.recent.clear()
            self._base_state = self._last_state
        pushes: list[tuple[str, dict[str, Any]]] = []
        note: dict[str, Any] | None = None
        try:
            pushes = await settling
        except (RedisError, OSError) as exc:
            # Redis is away: keep settling in the background until it is back (idempotent by
            # game id), so the rating change is delayed, never lost.
            log.warning("table %s: settlement of %s failed (%s); retrying in the background",
                        self.id, game_id, exc)
            self.lobby.spawn(self._settle_late(game_id, settle_once))
        except Exception as exc:
            log.exception("table %s: settlement of %s failed", self.id, game_id)
            note = {"game_id": game_id, "rating_error": str(exc)[:200]}
        pushes = with_event_ids(pushes)
        for out in announcements:
            self._broadcast(out)
        await self.lobby.flush()
        # The rating events are settled in the rating store; each goes to its player's inbox
        # first, then live: the node that writes it to a socket takes it out of the inbox,
        # and a player connected nowhere gets it at the next connection (once).
        if pushes or note is not None:
            await self._retry(game_id, "the rating inbox", persistence.write_inbox, pushes,
                              table=self.id, note=note)
        self._push_ratings(pushes)
        await self.lobby.flush()
        if match_over:
            await self._wind_up()
            return
        # Between games a leave or a lost connection still forfeits (the match).
        self._finishing = False
        self._next_game = self._loop.call_later(
            self.settings.next_game_delay, self._begin_next_game
        )

    async def _retry(self, game_id: str, what: str, write: Callable[..., Awaitable[Any]],
                     *args: Any, **kwargs: Any) -> None:
        """``await write(*args, **kwargs)``, tried again on Redis errors with back-off (up to
        ``STORE_MAX_DELAY`` between tries) until it is stored; only a node shutdown (the task
        is cancelled) stops it, and that is logged with the game id."""
        delay = 0.05
        attempt = 0
        while True:
            try:
                await write(*args, **kwargs)
                return
            except (RedisError, OSError) as exc:
                attempt += 1
                self.lobby.metrics.settlement_retries.inc()
                if attempt == SETTLE_ATTEMPTS:
                    log.warning("table %s: %s of %s not stored yet (%s); retrying until it is",
                                self.id, what, game_id, exc)
                try:
                    await asyncio.sleep(delay)
                except asyncio.CancelledError:
                    log.error("table %s: node stopping with %s of %s NOT stored", self.id,
                              what, game_id)
                    raise
                delay = min(delay * 2, STORE_MAX_DELAY)

    def _begin_next_game(self) -> None:
        self._next_game = None
        try:
            if self.status is TableStatus.PLAYING and not self._finishing:
                self._start_game()
        finally:
            self.lobby.kick_flush()

    def _settlement(
        self,
        outcome: Outcome,
        winner: Seat,
        loser: Seat,
        finished_at: float,
        match_over: bool,
        game_counted: bool,
    ) -> Callable[[], Awaitable[list[tuple[str, dict[str, Any]]]]]:
        """One attempt at settling this game (or match), with every input fixed now: the rating
        store call for the game's ladder, returning the ``(player, event)`` pushes."""
        plan = self.plan
        assert plan is not None
        store = self.lobby.ratings
        reason = str(outcome.reason)
        table, game_id = self.id, self.game_id()

        async def nothing() -> list[tuple[str, dict[str, Any]]]:
            return []

        if plan.ladder == TABLE42:
            async def table42() -> list[tuple[str, dict[str, Any]]]:
                settlement = await store.settle(
                    game_id, ladder=TABLE42, winner=winner.player, loser=loser.player,
                    cube=outcome.cube, finished_at=finished_at, reason=reason,
                )
                return rating_events(settlement, table=table)
            return table42
        if plan.ladder == FIBS and match_over:
            match = self.match
            assert match is not None and match.winner is not None
            seats = (self.seats[0], self.seats[1])
            mw, ml = seats[match.winner], seats[match.winner.opponent]
            assert mw is not None and ml is not None
            match_id, length = self.match_id(), self.match_length
            match_winner, match_loser = mw.player, ml.player

            async def fibs() -> list[tuple[str, dict[str, Any]]]:
                settlement = await store.settle(
                    match_id, ladder=FIBS, winner=match_winner, loser=match_loser,
                    match_length=length, finished_at=finished_at, reason=reason,
                )
                return rating_events(settlement, table=table)
            return fibs
        if plan.boosted and game_counted:
            async def boosted() -> list[tuple[str, dict[str, Any]]]:
                result = await store.add_boosted_points(
                    game_id, winner=winner.player, loser=loser.player,
                    points=outcome.points, finished_at=finished_at,
                )
                return boosted_events(result, table=table)
            return boosted
        return nothing

    async def _settle(
        self, settle_once: Callable[[], Awaitable[list[tuple[str, dict[str, Any]]]]]
    ) -> list[tuple[str, dict[str, Any]]]:
        """``settle_once()``, tried up to ``SETTLE_ATTEMPTS`` times on Redis errors."""
        for attempt in range(SETTLE_ATTEMPTS):
            try:
                return await settle_once()
            except (RedisError, OSError):
                if attempt == SETTLE_ATTEMPTS - 1:
                    raise
                await asyncio.sleep(0.05 * (attempt + 1))
        return []

    async def _settle_late(
        self, game_id: str, settle_once: Callable[[], Awaitable[list[tuple[str, dict[str, Any]]]]]
    ) -> None:
        """Keep trying a settlement that failed at the game's end, backing off up to
        ``LATE_SETTLE_MAX_DELAY``; then push the rating events and store them in the inboxes.
        A node stopped before Redis came back logs the game id, so it can be settled by hand
        (the store applies a game id once, whenever it comes)."""
        delay = 0.5
        persistence = self.lobby.persistence
        try:
            while True:
                # Back off, but try at once when the health check sees Redis come back.
                was_down = not persistence.redis_up
                waited = 0.0
                while waited < delay and not (was_down and persistence.redis_up):
                    await asyncio.sleep(0.1)
                    waited += 0.1
                try:
                    pushes = await settle_once()
                    break
                except (RedisError, OSError) as exc:
                    log.warning("table %s: settlement of %s still failing: %s", self.id,
                                game_id, exc)
                    delay = min(delay * 2, LATE_SETTLE_MAX_DELAY)
        except asyncio.CancelledError:
            log.error("table %s: node stopping with %s NOT settled: settle it again", self.id,
                      game_id)
            raise
        log.info("table %s: %s settled late", self.id, game_id)
        pushes = with_event_ids(pushes)
        if pushes:
            await self._retry(game_id, "the rating inbox", self.lobby.persistence.write_inbox,
                              pushes, table=self.id, note=None)
        self._push_ratings(pushes)
        await self.lobby.flush()

    def _push_ratings(self, pushes: list[tuple[str, dict[str, Any]]]) -> None:
        if pushes:
            self.lobby.metrics.rating_delay.observe(time.perf_counter() - self._ended_at)
        for player, event in pushes:
            self.lobby.deliver_rating(player, self._nodes_of(player), event)

    def _nodes_of(self, player: str) -> set[str]:
        side = self.side_of(player)
        if side is None:
            return set()
        seat = self.seats[side]
        return set() if seat is None else set(seat.nodes)

    async def _wind_up(self) -> None:
        """The table is finished: free the seats, leave the lobby, linger, then go."""
        for seat in self.seats:
            if seat is not None and seat.grace_timer is not None:
                seat.grace_timer.cancel()
                seat.grace_timer = None
        self.lobby.table_changed(self)
        for player in self.seated_players():
            await self._retry(self.game_id(), f"the seat release of {player}",
                              self.lobby.persistence.release_seat, player, self.id)
        self.lobby.forget_later(self)

    def close(self, reason: str, *, release: bool = True) -> None:
        """Close a table that has no game in progress (its only player left or vanished)."""
        if self.status is TableStatus.CLOSED:
            return
        self._disarm_clock()
        for seat in self.seats:
            if seat is not None and seat.grace_timer is not None:
                seat.grace_timer.cancel()
                seat.grace_timer = None
        self._emit("table_closed", {"reason": reason}, with_state=False)
        self.status = TableStatus.CLOSED
        self.lobby.persistence.mark_dirty(self.id, self.snapshot, urgent=True)
        players = self.seated_players()
        self.lobby.table_changed(self)
        if release:
            self.lobby.spawn(self._release(players))
        self.lobby.forget_later(self, delay=0.0)

    async def _release(self, players: list[str]) -> None:
        for player in players:
            await self._retry(self.id, f"the seat release of {player}",
                              self.lobby.persistence.release_seat, player, self.id)

    def shutdown(self) -> None:
        """The node is stopping: stop every timer (the game stays as its snapshot)."""
        self._disarm_clock()
        if self._next_game is not None:
            self._next_game.cancel()
            self._next_game = None
        for seat in self.seats:
            if seat is not None and seat.grace_timer is not None:
                seat.grace_timer.cancel()
                seat.grace_timer = None

    # --- clocks ---------------------------------------------------------------------------

    def _sync_clock(self) -> None:
        """Start a fresh decision clock whenever the decision awaited has changed."""
        game = self.game
        if game is None or self._finishing or game.is_over or game.to_act is None:
            self._disarm_clock()
            return
        token = (self.game_no, len(game.history), game.phase)
        if token == self._clock_token:
            return
        self._clock_token = token
        self._clock_side = game.to_act
        limit = self.settings.decision_time
        self.deadline = time.time() + limit
        due = self._clock_due = self._loop.time() + limit
        # One timer per table, not one per decision: a timer armed for an earlier decision
        # fires before this one is due and re-arms itself (see _clock_check).
        if self._clock is None:
            self._clock = self._loop.call_at(due, self._clock_check)

    def _disarm_clock(self) -> None:
        if self._clock is not None:
            self._clock.cancel()
            self._clock = None
        self._clock_due = None
        self._clock_side = None
        self._clock_token = None
        self.deadline = None

    def _clock_check(self) -> None:
        self._clock = None
        due = self._clock_due
        if due is None:
            return
        if self._loop.time() < due:
            self._clock = self._loop.call_at(due, self._clock_check)
            return
        self._clock_expired()

    def _clock_expired(self) -> None:
        self._clock_due = None
        try:
            self._timeout()
        except Exception:
            log.exception("table %s: clock handling failed", self.id)
        finally:
            self.lobby.kick_flush()

    def _timeout(self) -> None:
        game = self.game
        side = self._clock_side
        self._clock_token = None
        if game is None or side is None or self._finishing or game.is_over:
            return
        self.strikes[side] += 1
        strikes = self.strikes[side]
        seat = self.seats[side]
        fields: dict[str, Any] = {
            "side": int(side), "player": None if seat is None else seat.player,
            "strikes": strikes,
        }
        if strikes >= self.settings.max_strikes:
            fields["action"] = "forfeit"
            self._emit("timeout", fields)
            self._forfeit(side, EndReason.TIMEOUT)
            return
        action = game.default_action()
        if action is None:
            return
        before = game.position
        fields["action"] = action.kind
        try:
            outcome = game.perform(action)
        except RulesError:
            log.exception("table %s: default action %s failed", self.id, action.kind)
            return
        if action.kind == "play" and action.play is not None:
            fields["play"] = format_play(action.play, before)
        elif action.kind == "roll":
            last = game.history[-1] if game.history else None
            passed = last is not None and last.play == () and game.dice is None
            dice = last.dice if passed and last is not None else game.dice
            fields["dice"] = None if dice is None else list(dice)
            fields["passed"] = passed
        if outcome is None:
            fields["rolls"] = self._auto_rolls()
        self._emit("timeout", fields)
        if outcome is not None:
            self._game_over(outcome)
