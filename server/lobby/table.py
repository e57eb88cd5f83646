"""The driver of one live table: the I/O shell around its pure state machine
(:class:`server.tables.machine.TableMachine`).

The machine decides everything a table does (seats, the game or match, clocks, strikes,
grace periods, versioned events); this driver runs its timers, stores its events, delivers
them and settles finished games. A table lives on exactly one node, its owner. Everything that
changes it runs on that node's event loop, synchronously, so a table needs no locks: a command
is checked and applied by the machine, and its :class:`~server.tables.machine.Step` is carried
out, all without awaiting. Only joining (the seat lock is in Redis), ``sync`` (may read the log
from Redis) and the end of a game (settlement, result write) await.

Timers are data: each :class:`~server.tables.machine.Deadline` of a step arms a timer (one
decision clock per table, re-armed in place; one grace timer per seat; the next game of a
match) and a timer that fires hands its deadline back to :meth:`TableMachine.expire`.

Versions: every event of a table carries ``v`` (1, 2, 3 ...). The last ``recent_events`` are
kept in memory and every event is appended to the table's Redis log; ``sync(since)`` returns
the events after ``since`` and the full state.

Store before announce: an event goes to players and watchers only once Redis holds it
(:meth:`Table.stored`, called when the table's events were written), and so does every reply
that carries the table's ``v`` (``ack``, ``sync``, ``resume``, ``watching``), after the events
it follows. So what any client has seen is a prefix of the stored log: a node that takes the
table over (:meth:`Table.restore`) goes on at the next version, none skipped or repeated. A
table whose writes are refused (its lease went to another node) is :meth:`Table.fenced`.

The end of a game, in this order (nothing is announced before it is stored):

1. at the same time, so that the two round trips to Redis overlap: settle ratings through the
   rating store (Table42 for a Competitive single game, FIBS when a rated match ends, Boosted
   points for a Boosted game), and, in one fenced script, write the table's buffered events
   (``game_over``/``match_over`` included) and append the result to the table's results;
   each is retried on Redis errors;
2. once both are stored: broadcast ``game_over`` (and ``match_over``) to players and
   watchers, then push the rating events to the players wherever they are connected;
3. put each player's ``rating``/``boosted`` event (with its ``event_id``) in that player's
   inbox, then push it live; the node that writes it to one of the player's sockets removes
   it from the inbox, and a player connected nowhere gets it at the next connection: each
   event is delivered once.

Every write a finished game needs (the result with the buffered events, the inbox, the seat
release) is retried with back-off until Redis has stored it (an outage delays the
end of a game, it loses nothing); the settlement is retried the same way in the background.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import msgpack
from redis.exceptions import RedisError

from server.lobby.chat import TableChat
from server.lobby.node_loss import split_by_liveness
from server.logs import game_id as log_game_id
from server.protocol.codec import Outgoing, WireFormat
from server.protocol.errors import ErrorCode, ProtocolError
from server.protocol.lean import apply_event
from server.protocol.messages import (
    GAME_ACTIONS,
    Chat,
    Join,
    Leave,
    Report,
    Sync,
    TableMessage,
    TableMode,
    Unwatch,
    Watch,
)
from server.rules import DiceSource, EndReason, Game, Match, Side
from server.rules.mat import export_mat
from server.store.persistence import Fenced
from server.tables.machine import (
    BOT_PREFIX,
    CLOCK,
    EMPTY,
    HOLD_RETRY_AFTER,
    NEXT_GAME,
    STORE_LOST,
    Deadline,
    MachineSettings,
    Seat,
    Settlement,
    Step,
    TableMachine,
    TableStatus,
)
from server.tables.ratings import (
    FIBS,
    TABLE42,
    RatedPlayer,
    RatingPlan,
    boosted_events,
    rating_events,
)
from server.tables.records import game_events, game_record, replay_events

if TYPE_CHECKING:
    from server.lobby.routing import Actor, Lobby

log = logging.getLogger(__name__)

SETTLE_ATTEMPTS = 3
#: The longest wait between two tries of an end-of-game write while Redis is away.
STORE_MAX_DELAY = 1.0
#: The longest wait between two tries of a settlement Redis refused at a game's end.
LATE_SETTLE_MAX_DELAY = 30.0
_GAME_ACTIONS = frozenset(GAME_ACTIONS)
_PACK = WireFormat.MSGPACK

__all__ = ["Seat", "Table", "TableStatus", "with_event_ids"]


def with_event_ids(pushes: list[tuple[str, dict[str, Any]]]
                   ) -> list[tuple[str, dict[str, Any]]]:
    """Each rating event with its ``event_id`` (``<game or match id>:<type>:<player>``): the
    inbox removes a delivered event by it, and a client may acknowledge it."""
    return [(player, {**event, "event_id": f"{event.get('game_id')}:{event.get('type')}:"
                                           f"{player}"}) for player, event in pushes]


# A held announcement: (version it waits for, event or None, reply's actor, reply).
_Held = tuple[int, Outgoing | None, "Actor | None", "dict[str, Any] | None"]


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
        created_at: float | None = None,
        machine: TableMachine | None = None,
    ) -> None:
        self.lobby = lobby
        self.settings = lobby.settings
        self.id = table_id
        self.mode = mode
        self.match_length = match_length
        self.tournament_id = tournament_id
        self.created_at = time.time() if created_at is None else created_at
        self.machine = machine if machine is not None else TableMachine(
            table_id=table_id, mode=mode, match_length=match_length,
            tournament_id=tournament_id, created_at=self.created_at,
            settings=MachineSettings.of(self.settings), dice_factory=dice_factory,
        )
        self.watchers: dict[tuple[str, str], str] = {}
        # The latest events as (version, msgpack bytes): sync decodes them, which is rare,
        # and bytes cost far less memory (and garbage-collector time) than the dicts.
        self.recent: deque[tuple[int, bytes]] = deque(maxlen=self.settings.recent_events)
        # The state after the event just before ``recent[0]`` (None: no state yet): the full
        # form of the recent events is rebuilt from it for a sync.
        self._base_state: dict[str, Any] | None = None
        # (v, the state after version v) the last protocol-1 sync from memory folded up to.
        self._folded: tuple[int, dict[str, Any] | None] | None = None
        self._loop = asyncio.get_running_loop()
        # Timers, from the machine's deadlines. One decision clock per table, not one per
        # decision: a timer armed for an earlier decision fires before this one is due and
        # re-arms itself (see _clock_check).
        self._clock: asyncio.TimerHandle | None = None
        self._clock_due: float | None = None  # loop time the current decision's clock runs out
        self._clock_deadline: Deadline | None = None
        self._timers: dict[tuple[str, int | None], tuple[Deadline, asyncio.TimerHandle]] = {}
        self._pending_seat: str | None = None
        self._snapshot_status: TableStatus | None = None
        # Store before announce: versions up to _stored_v are in Redis; what waits for a
        # later one is held, in order. From _hold_from on, the end of a game waits for its
        # settlement too.
        self._stored_v = 0
        self._held: deque[_Held] = deque()
        self._hold_from: int | None = None
        self._fenced = False
        # Another node owns the table now (fenced, or handed over unfinished): the writes a
        # game's end still retries here stop (the new owner makes them).
        self._gone = False
        # The last game's end is fully stored (see _wind_up): a drain gives the lease up as
        # done; a finished table not yet wound up is handed on, for its peer to settle it.
        self.wound_up = False
        self.creator_address: str | None = None  # counts against its address while open
        # A finished game's logged events (msgpack, as in the log), taken from the memory log
        # when it ends, until its record is stored (None: read them from Redis then).
        self._game_logs: dict[str, list[bytes] | None] = {}
        self.chat = TableChat(self.settings.chat_history)
        self._ended_at = 0.0  # perf_counter of the last game's end (metrics)

    # --- reading ---------------------------------------------------------------------------

    @property
    def status(self) -> TableStatus:
        return self.machine.status

    @property
    def seats(self) -> list[Seat | None]:
        return self.machine.seats

    @property
    def plan(self) -> RatingPlan | None:
        return self.machine.plan

    @property
    def version(self) -> int:
        return self.machine.version

    @property
    def game(self) -> Game | None:
        return self.machine.game

    @property
    def match(self) -> Match | None:
        return self.machine.match

    @property
    def strikes(self) -> list[int]:
        return self.machine.strikes

    @property
    def deadline(self) -> float | None:
        return self.machine.deadline

    @property
    def is_listed(self) -> bool:
        return self.mode is not TableMode.PRIVATE

    @property
    def is_single_game(self) -> bool:
        return self.match_length == 0

    def side_of(self, player: str) -> Side | None:
        return self.machine.side_of(player)

    def seated_players(self) -> list[str]:
        return self.machine.seated_players()

    def game_id(self) -> str:
        return self.machine.game_id()

    def match_id(self) -> str:
        return self.machine.match_id()

    def summary(self) -> dict[str, Any]:
        """What the lobby lists about the table."""
        return {
            "table": self.id,
            "mode": str(self.mode),
            "match_length": self.match_length,
            "tournament_id": self.tournament_id,
            "status": str(self.machine.status),
            "players": [None if s is None else s.player for s in self.machine.seats],
            "names": [None if s is None else s.name or s.player for s in self.machine.seats],
            "watchers": len(self.watchers),
            "created_at": self.created_at,
            "node": self.lobby.node_id,
        }

    def state(self) -> dict[str, Any]:
        """The full table state sent with every game event (and on resume / sync)."""
        return self.machine.state()

    def snapshot(self) -> dict[str, Any]:
        """What the write-behind flusher stores as the table's snapshot in Redis (the state
        of the latest event that carried one: building a state costs more than a move)."""
        last = self.machine.last_state
        state = last if last is not None else self.machine.state()
        return {"v": self.machine.version, "summary": self.summary(), "state": state}

    # --- carrying out a step -------------------------------------------------------------

    def _apply(self, step: Step, now: float) -> None:
        """Store the step's events (announced once stored), arm and disarm its timers, and
        start the settlement of a game that ended."""
        if step is EMPTY or self._fenced:
            return
        for out in step.events:
            self._record(out)
        # Armed first, then disarmed: a deadline armed and dropped in one step is not left.
        for deadline in step.deadlines:
            self._arm(deadline, now)
        for deadline in step.cancelled:
            self._disarm(deadline)
        if step.settle is not None:
            self._game_over(step.settle)

    def _record(self, out: Outgoing) -> None:
        version: int = out.obj["v"]
        # The log (in memory and in Redis) keeps the lean form; the full form is rebuilt from
        # it for a sync (see _full_events).
        packed = out.frame(_PACK, True)
        recent = self.recent
        if len(recent) == recent.maxlen:
            _, oldest = recent.popleft()
            self._base_state = apply_event(self._base_state, msgpack.unpackb(oldest))
        recent.append((version, packed))
        persistence = self.lobby.persistence
        persistence.append_event(self.id, version, packed, self.stored)
        # A new status (open, playing, finished) must reach the snapshot at once: other
        # nodes read it to tell whether a player's seat is in a live game.
        status = self.machine.status
        urgent = status is not self._snapshot_status
        self._snapshot_status = status
        persistence.mark_dirty(self.id, self.snapshot, urgent=urgent)
        self._held.append((version, out, None, None))
        if out.obj.get("type") == "game_start":
            self.lobby.metrics.games.inc()

    def _reply(self, actor: Actor, message: dict[str, Any]) -> None:
        """Answer ``actor`` with a message that carries the table's ``v``: at once when
        everything up to it is stored and announced, else right after the events it follows."""
        version = int(message.get("v") or 0)
        if not self._held and version <= self._stored_v:
            self.lobby.reply(actor, message)
        else:
            self._held.append((version, None, actor, message))

    def stored(self, version: int) -> None:
        """Every event of this table up to ``version`` is in Redis: announce what waited for
        it (events, then the replies that follow them), in order."""
        if version > self._stored_v:
            self._stored_v = version
        self._announce_stored()

    def _announce_stored(self) -> None:
        held = self._held
        if not held or self._fenced:
            return
        stored = self._stored_v
        stop = self._hold_from
        lobby = self.lobby
        sent = False
        while held:
            version, out, actor, message = held[0]
            if version > stored or (stop is not None and version >= stop):
                break
            held.popleft()
            sent = True
            if out is not None:
                self._broadcast(out)
            elif actor is not None and message is not None:
                lobby.reply(actor, message)
        if sent:
            lobby.kick_flush()

    def _broadcast(self, out: Outgoing) -> None:
        lobby = self.lobby
        for seat in self.machine.seats:
            if seat is not None and seat.nodes:
                lobby.deliver_player(seat.player, seat.nodes, out)
        if self.watchers:
            lobby.deliver_conns(self.watchers.keys(), out)

    def fenced(self) -> None:
        """Redis refused this node's write for the table (another node owns it now): stop
        every timer, announce nothing more, refuse later commands, leave the lobby."""
        if self._fenced:
            return
        self.let_go()
        log.warning("table %s: fenced (another node owns it now)", self.id)
        self.lobby.table_lost(self)

    def let_go(self, *, finished: bool = False) -> None:
        """This node stops serving the table (fenced, handed over in a drain, taken over by
        another node): every timer stops, nothing more is announced (what was not stored is
        not the table's), and each request still waiting for its answer gets one:
        ``unavailable``, to be sent again (it reaches the table's new owner). An unfinished
        table's end-of-game writes still in flight here stop (its new owner makes them);
        ``finished`` (its end fully stored, nobody takes it over): its seat releases go on.
        The caller forgets it (:meth:`Lobby.table_lost`)."""
        if self._fenced:
            return
        self.shutdown()
        self._fenced = True
        self._gone = not finished
        held, self._held = self._held, deque()
        for _version, _out, actor, message in held:
            if actor is not None and message is not None and message.get("ref") is not None:
                self.lobby.reply(actor, {
                    "type": "error", "code": str(ErrorCode.UNAVAILABLE),
                    "message": f"table {self.id} moved to another node; send it again",
                    "ref": message["ref"], "table": self.id, "retry_after": 1.0,
                })

    # --- timers --------------------------------------------------------------------------

    def _arm(self, deadline: Deadline, now: float) -> None:
        loop = self._loop
        if deadline.kind == CLOCK:
            self._clock_deadline = deadline
            due = self._clock_due = loop.time() + (deadline.at - now)
            if self._clock is None:
                self._clock = loop.call_at(due, self._clock_check)
            return
        key = (deadline.kind, deadline.side)
        old = self._timers.pop(key, None)
        if old is not None:
            old[1].cancel()
        self._timers[key] = (deadline, loop.call_later(max(0.0, deadline.at - now),
                                                       self._fire, deadline))

    def _disarm(self, deadline: Deadline) -> None:
        if deadline.kind == CLOCK:
            if deadline is self._clock_deadline:
                self._disarm_clock()
            return
        key = (deadline.kind, deadline.side)
        entry = self._timers.get(key)
        if entry is not None and entry[0] is deadline:
            del self._timers[key]
            entry[1].cancel()

    def _disarm_clock(self) -> None:
        if self._clock is not None:
            self._clock.cancel()
            self._clock = None
        self._clock_due = None
        self._clock_deadline = None

    def _clock_check(self) -> None:
        self._clock = None
        due = self._clock_due
        if due is None:
            return
        if self._loop.time() < due:
            self._clock = self._loop.call_at(due, self._clock_check)
            return
        deadline = self._clock_deadline
        self._clock_due = None
        self._clock_deadline = None
        if deadline is not None:
            self._fire(deadline)

    def _fire(self, deadline: Deadline) -> None:
        if deadline.kind != CLOCK:
            key = (deadline.kind, deadline.side)
            entry = self._timers.get(key)
            if entry is not None and entry[0] is deadline:
                del self._timers[key]
        if deadline.kind != NEXT_GAME:
            # A strike, an automatic move or a forfeit only once the store answered after
            # the deadline passed (see _expire_confirmed).
            self.lobby.spawn(self._expire_confirmed(deadline))
            return
        self._expire(deadline)

    async def _expire_confirmed(self, deadline: Deadline) -> None:
        """Hand ``deadline`` to the machine once a check of the store answered: Redis away
        since just before the deadline (not noticed yet by the health check) must not cost
        the player; the failed check holds the table instead (:meth:`hold`), and the clock
        goes on at :meth:`resume`."""
        persistence = self.lobby.persistence
        if not await persistence.confirm_up():
            if not persistence.redis_up:
                self.hold()  # held already, unless it started after the others were held
            return
        if not self._fenced:
            self._expire(deadline)

    def _expire(self, deadline: Deadline) -> None:
        try:
            now = time.time()
            was = self.machine.status
            step = self.machine.expire(deadline, now)
            self._apply(step, now)
            if self.machine.status is TableStatus.CLOSED and was is not TableStatus.CLOSED:
                self._closed(release=True)
        except Exception:
            log.exception("table %s: %s timer handling failed", self.id, deadline.kind)
        finally:
            self.lobby.kick_flush()

    # --- a hold: the node cannot store ----------------------------------------------------

    def hold(self) -> None:
        """This node cannot store (Redis is away): the machine stops the table's timers
        (:meth:`TableMachine.hold`) and the players and watchers get ``held`` at once (not
        versioned: it cannot be stored first)."""
        if self._fenced:
            return
        machine = self.machine
        if machine.held is not None:
            return
        now = time.time()
        step = machine.hold(now)
        if machine.held is None:
            return  # finished or closed: nothing to hold
        self._apply(step, now)
        self._broadcast(Outgoing({"type": "held", "table": self.id, "since": now,
                                  "retry_after": HOLD_RETRY_AFTER}))

    def resume(self) -> None:
        """This node can store again: the machine's timers go on with the time they had left
        plus ``settings.hold_allowance`` and it emits ``resumed`` (stored, then announced)."""
        if self._fenced:
            return
        now = time.time()
        self._apply(self.machine.resume(now, self.settings.hold_allowance), now)

    def shutdown(self) -> None:
        """The node is stopping: stop every timer (the game stays as its snapshot and log)."""
        self._disarm_clock()
        for _deadline, handle in self._timers.values():
            handle.cancel()
        self._timers.clear()

    # --- commands ----------------------------------------------------------------------------

    async def handle(self, actor: Actor, msg: TableMessage) -> None:
        """Apply one command from ``actor``. Raises ProtocolError (sent back as an error)."""
        machine = self.machine
        if self._fenced:
            raise ProtocolError(ErrorCode.UNAVAILABLE,
                                f"table {self.id} moved to another node; retry", field="table")
        if machine.status is TableStatus.CLOSED:
            raise ProtocolError(ErrorCode.NO_SUCH_TABLE, f"table {self.id} is closed",
                                field="table")
        if type(msg) in _GAME_ACTIONS:  # the common case first: a move
            started = time.perf_counter()
            now = time.time()
            self._apply(machine.act(actor.player, msg, now), now)
            metrics = self.lobby.metrics
            metrics.moves.inc()
            metrics.move_time.observe(time.perf_counter() - started)
        elif isinstance(msg, Chat):
            await self.chat.post(self, actor, msg)
            return
        elif isinstance(msg, Report):
            await self.chat.report(self, actor, msg)
            return
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
            self._reply(actor, {"type": "ack", "ref": msg.ref, "table": self.id,
                                "v": machine.version})

    # --- seats ---------------------------------------------------------------------------

    def _seat(self, side: int, actor: Actor, nodes: set[str], now: float) -> None:
        self._apply(self.machine.seat(
            side, actor.player, actor.name, is_guest=actor.is_guest, address=actor.address,
            nodes=nodes, now=now, is_bot=actor.player.startswith(BOT_PREFIX),
        ), now)

    def seat_creator(self, actor: Actor) -> None:
        """Seat the table's creator (seat lock already held) at side 0."""
        self._seat(0, actor, {actor.node}, time.time())

    def seat_pair(self, players: list[tuple[Actor, set[str]]], *,
                  pair_limited: bool = False) -> None:
        """Seat two players at once (matchmaking; both seat locks held) and start;
        ``pair_limited``: the pair limit refused the game a rating (counted by the caller)."""
        now = time.time()
        for side, (actor, nodes) in enumerate(players):
            self._seat(side, actor, set(nodes), now)
        self._start_play(now, pair_limited=pair_limited)

    def _start_play(self, now: float, *, pair_limited: bool = False) -> None:
        step = self.machine.start(now, pair_limited=pair_limited)
        self.lobby.table_changed(self)
        self._apply(step, now)

    async def join(self, actor: Actor) -> None:
        machine = self.machine
        if machine.side_of(actor.player) is not None:
            self._reply(actor, self._resume_message(actor.player))
            return
        if self.mode is TableMode.TOURNAMENT and actor.player.startswith(BOT_PREFIX):
            raise ProtocolError(ErrorCode.BOT_NOT_ALLOWED,
                                "computer players do not play in tournaments", field="table")
        if machine.status is not TableStatus.OPEN or self._pending_seat is not None:
            raise ProtocolError(ErrorCode.TABLE_FULL, f"table {self.id} is not open",
                                field="table")
        free = [i for i, s in enumerate(machine.seats) if s is None]
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
        limited = False
        other = next((s for s in machine.seats if s is not None), None)
        if other is not None and len(free) == 1 and machine.status is TableStatus.OPEN:
            # This seat fills the table: count the game against the pair's limit first.
            joiner = RatedPlayer(actor.player, actor.is_guest, actor.address,
                                 actor.player.startswith(BOT_PREFIX))
            seated = RatedPlayer(other.player, other.is_guest, other.address, other.is_bot)
            pair = (joiner, seated) if free[0] == 0 else (seated, joiner)
            self._pending_seat = actor.player  # no other join meanwhile
            try:
                limited = await self.lobby.pair_limited(self.id, self.mode,
                                                        machine.match_length, pair)
            except ProtocolError:
                await self.lobby.persistence.release_seat(actor.player, self.id)
                raise
            finally:
                self._pending_seat = None
        if machine.status is not TableStatus.OPEN or machine.seats[free[0]] is not None:
            # closed (or the seat taken) while we waited
            await self.lobby.persistence.release_seat(actor.player, self.id)
            raise ProtocolError(ErrorCode.TABLE_FULL, f"table {self.id} is not open",
                                field="table")
        now = time.time()
        self._seat(free[0], actor, {actor.node}, now)
        if machine.is_full:
            self._start_play(now, pair_limited=limited)

    async def leave(self, actor: Actor) -> None:
        machine = self.machine
        side = machine.side_of(actor.player)
        if side is None:
            if (actor.node, actor.conn) in self.watchers:
                self.unwatch(actor.node, actor.conn)
                return
            raise ProtocolError(ErrorCode.NOT_SEATED, f"you are not at table {self.id}",
                                field="table")
        if machine.status is TableStatus.OPEN:
            players = machine.seated_players()
            self.close("left", release=False)
            await self._release(players)  # before answering, so the seat is free at once
            return
        if machine.status is TableStatus.PLAYING and not machine.finishing:
            now = time.time()
            self._apply(machine.forfeit(actor.player, EndReason.LEAVE, now), now)
            if machine.finishing:
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
        self._reply(actor, {
            "type": "watching", "table": self.id, "v": self.machine.version, "ref": msg.ref,
            "summary": self.summary(), "state": self.machine.handout(),
            "chat": self.chat.for_watcher(self),
        })

    def unwatch(self, node: str, conn: str) -> None:
        self.watchers.pop((node, conn), None)

    async def sync(self, actor: Actor, msg: Sync) -> None:
        """Answer ``sync``: for the table's seated players and watchers only (``not_seated``
        otherwise), one page of at most ``sync_page`` events after ``since`` with the
        current state; ``next`` (when more events follow) is the ``since`` of the next
        page. A page is read from memory or as one bounded range of the Redis log."""
        side = self.machine.side_of(actor.player)
        if side is None and (actor.node, actor.conn) not in self.watchers:
            raise ProtocolError(ErrorCode.NOT_SEATED,
                                f"sync is for the players and watchers of table {self.id}: "
                                "watch it first", field="table")
        if side is not None and actor.conn:
            seat = self.machine.seats[side]
            if seat is not None and actor.node not in seat.nodes:
                # A player resuming by sync (e.g. at a table taken over by this node) gets
                # the table's events from now on, as after a reconnect.
                now = time.time()
                step = self.machine.connect(actor.player, actor.node, now)
                if step is not None:
                    self._apply(step, now)
        version = self.machine.version
        since = min(msg.since, version)
        upto = min(version, since + self.settings.sync_page)
        recent = self.recent
        events: list[dict[str, Any]]
        if since == version:
            events = []
        elif recent and recent[0][0] <= since + 1:
            events = [msgpack.unpackb(packed) for v, packed in recent if since < v <= upto]
            if not actor.lean:
                events = self._full_events(events)
        else:
            events = await self._logged_page(since, upto, lean=actor.lean)
        # Complete: the events are exactly since+1 .. version (each once, in order). Not when
        # the client asked from beyond the table's version (it holds versions this table does
        # not: it rebuilds from ``state``), nor when some are missing (a log trimmed, or an
        # in-memory window that does not reach the version), nor when more pages follow.
        whole = len(events) == upto - since and (
            not events or (events[0]["v"] == since + 1 and events[-1]["v"] == upto))
        complete = msg.since <= version and whole and upto == version
        more = bool(events) and events[-1]["v"] < version
        self._reply(actor, {
            "type": "sync", "table": self.id, "ref": msg.ref, "since": msg.since,
            "v": version, "complete": complete, "next": events[-1]["v"] if more else None,
            "events": events,
            "summary": self.summary(), "state": self.machine.handout(),
        })

    async def _logged_page(self, since: int, upto: int, *, lean: bool) -> list[dict[str, Any]]:
        """The events ``since + 1 .. upto`` from the Redis log (fewer when it is trimmed), in
        the lean form or rebuilt in the full one (from the start of their game)."""
        start = since
        if not lean:
            start = max((v - 1 for v in self.machine.game_starts if v <= since + 1),
                        default=since)
        try:
            events = await self.lobby.persistence.events_between(
                self.id, start, upto, self.machine.version)
        except (RedisError, OSError) as exc:
            raise ProtocolError(ErrorCode.UNAVAILABLE, "Redis is unavailable") from exc
        if not lean:
            events = [e for e in self._full_events(events) if e["v"] > since]
        return events

    def _full_events(self, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """``events`` (lean, in order) in the full form. From the memory log they are rebuilt
        from the state before it; from the Redis log, from the first event that carries a
        whole state (a game's start; change-only events before it keep no state)."""
        state: dict[str, Any] | None = None
        recent = self.recent
        if events and recent and events[0]["v"] >= recent[0][0]:
            first = events[0]["v"]
            # Folded on from the state a previous sync reached (still in the window), so
            # repeated syncs near the end of the window fold only what is new.
            folded = self._folded
            if folded is not None and recent[0][0] - 1 <= folded[0] < first:
                after, state = folded
            else:
                after, state = recent[0][0] - 1, self._base_state
            for v, packed in recent:
                if v <= after:
                    continue
                if v >= first:
                    break
                state = apply_event(state, msgpack.unpackb(packed))
            self._folded = (first - 1, state)
        return replay_events(events, state)

    def _resume_message(self, player: str) -> dict[str, Any]:
        side = self.machine.side_of(player)
        return {
            "type": "resume", "table": self.id, "v": self.machine.version,
            "side": None if side is None else int(side),
            "summary": self.summary(), "state": self.machine.handout(),
            "chat": self.chat.for_player(self),
        }

    # --- presence -------------------------------------------------------------------------

    def attach(self, actor: Actor) -> bool:
        """``actor``'s player has a socket on ``actor.node`` again. Sends it ``resume``."""
        if self._fenced:
            return False
        now = time.time()
        step = self.machine.connect(actor.player, actor.node, now)
        if step is None:
            return False
        self._apply(step, now)
        self._reply(actor, self._resume_message(actor.player))
        return True

    def detach(self, player: str, node: str, *, lost_at: float | None = None) -> None:
        """``player`` has no socket on ``node`` any more; start the grace period if that was
        the last node (the node-loss grace when ``node`` was found dead at ``lost_at``)."""
        now = time.time()
        self._apply(self.machine.disconnect(player, node, now, lost_at=lost_at), now)

    # --- the end of a game ----------------------------------------------------------------

    def _game_over(self, settlement: Settlement, *, write_result: bool = True) -> None:
        self._ended_at = time.perf_counter()
        self._game_logs[settlement.game_id] = self._game_log()
        # game_over and what follows wait for the settlement as well as for Redis.
        self._hold_from = self.machine.version - (1 if settlement.match_over
                                                  and self.machine.match is not None else 0)
        metrics = self.lobby.metrics
        metrics.games.dec()
        metrics.games_finished.inc()
        metrics.settlements_pending.inc()
        log_game_id.set(settlement.game_id)  # the task below, and its log lines, carry it
        task = self.lobby.spawn(self._finish(settlement, write_result))
        log_game_id.set("")
        del task

    async def _finish(self, settlement: Settlement, write_result: bool = True) -> None:
        try:
            await self._settle_and_announce(settlement, write_result=write_result)
        except Fenced:
            log.warning("table %s: %s is finished by the table's new owner", self.id,
                        settlement.game_id)
        except Exception:
            log.exception("table %s: finishing %s failed", self.id, settlement.game_id)
        finally:
            self.lobby.metrics.settlements_pending.dec()
            await self.lobby.flush()

    async def _settle_and_announce(self, settlement: Settlement, *,
                                   write_result: bool = True) -> None:
        game_id = settlement.game_id
        # The result first (a fenced write, with the game's last events), then the rating:
        # a node that lost the table (paused past its lease, the game over only in its own
        # memory) is refused there (Fenced) and settles nothing. The announcements are sent
        # once both are stored. The settlement's inputs are fixed now, so a late retry does
        # not depend on the table any more.
        settle_once = self._settlement_call(settlement)
        persistence = self.lobby.persistence
        if write_result:
            await self._retry(game_id, "the result", persistence.write_result, self.id,
                              settlement.result, ())
        settling = asyncio.ensure_future(self._settle(settle_once))
        self.lobby.metrics.settlements.inc()
        if settlement.match_over:
            # Every event is in the table's Redis log now; a finished table lingers for a
            # while, and sync reads the log instead of holding the events in memory.
            self.recent.clear()
            self._base_state = self.machine.last_state
            self._folded = None
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
        # The record too, before game_over goes out: whoever saw the end can replay it.
        await self._retry(game_id, "the game record", self._save_record, settlement, pushes)
        self._hold_from = None
        self._announce_stored()
        await self.lobby.flush()
        # The rating events are settled in the rating store; each goes to its player's inbox
        # first, then live: the node that writes it to a socket takes it out of the inbox,
        # and a player connected nowhere gets it at the next connection (once).
        if pushes or note is not None:
            await self._retry(game_id, "the rating inbox", persistence.write_inbox, pushes,
                              table=self.id, note=note, game=game_id)
        self._push_ratings(pushes)
        await self.lobby.flush()
        now = time.time()
        self._apply(self.machine.settled(now), now)
        if settlement.match_over:
            await self._wind_up()

    def _mat_texts(self) -> tuple[str, str | None]:
        """The current game, and its match so far, as .mat text (empty when it fails: a
        record without its .mat is better than none)."""
        seats = self.machine.seats
        names = [s.name if s is not None else f"Player{i}" for i, s in enumerate(seats)]
        try:
            game = self.machine.game
            match = self.machine.match
            game_text = "" if game is None else export_mat(game, names=names)
            match_text = None if match is None else export_mat(match, names=names)
        except Exception:
            log.exception("table %s: .mat export failed", self.id)
            return "", None
        return game_text, match_text

    def _game_log(self) -> list[bytes] | None:
        """The current game's events as logged (msgpack), from its start to now, when the
        memory log still holds them all; else None."""
        machine = self.machine
        start = max((v for v in machine.game_starts if v <= machine.version), default=1)
        recent = self.recent
        if not recent or recent[0][0] > start:
            return None
        return [packed for v, packed in recent if v >= start]

    async def _save_record(self, settlement: Settlement,
                           pushes: list[tuple[str, dict[str, Any]]]) -> None:
        """Store the finished game's record (its logged events, result, rating changes and
        .mat text) and index it in both players' histories: once per game id. Called before
        the match's next game starts (``machine.game`` is the finished one)."""
        game_id = settlement.game_id
        packed = self._game_logs.get(game_id)
        if packed is None:
            start = max((v for v in self.machine.game_starts if v <= self.machine.version),
                        default=1)
            log_events = await self.lobby.persistence.events_since(self.id, start - 1)
            packed = [msgpack.packb(e) for e in game_events(log_events, game_id)]
        changes = {player: event["change"] for player, event in pushes
                   if event.get("type") == "rating" and event.get("change") is not None}
        seats = [s for s in self.machine.seats if s is not None]
        mat_game, mat_match = self._mat_texts()
        try:
            record = game_record(
                table=self.id, mode=str(self.mode), match_length=self.match_length,
                tournament_id=self.tournament_id, result=settlement.result,
                players=[s.player for s in seats], names=[s.name or s.player for s in seats],
                events=packed, changes=changes, mat_game=mat_game, mat_match=mat_match)
        except Exception:
            # A fault of the record must not hold the game's end back.
            log.exception("table %s: the record of %s could not be built", self.id, game_id)
            return
        await self.lobby.records.save(record)
        self._game_logs.pop(game_id, None)

    async def _retry(self, game_id: str, what: str, write: Callable[..., Awaitable[Any]],
                     *args: Any, **kwargs: Any) -> None:
        """``await write(*args, **kwargs)``, tried again on Redis errors with back-off (up to
        ``STORE_MAX_DELAY`` between tries) until it is stored; only a node shutdown (the task
        is cancelled) stops it, and that is logged with the game id."""
        delay = 0.05
        attempt = 0
        while True:
            if self._gone:  # another node owns the table now: it makes this write
                raise Fenced(self.id)
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

    def _settlement_call(
        self, s: Settlement
    ) -> Callable[[], Awaitable[list[tuple[str, dict[str, Any]]]]]:
        """One attempt at settling this game (or match), with every input fixed now: the rating
        store call for the game's ladder, returning the ``(player, event)`` pushes."""
        store = self.lobby.ratings
        reason = str(s.outcome.reason)
        table = self.id

        async def nothing() -> list[tuple[str, dict[str, Any]]]:
            return []

        if s.ladder == TABLE42:
            async def table42() -> list[tuple[str, dict[str, Any]]]:
                settlement = await store.settle(
                    s.game_id, ladder=TABLE42, winner=s.winner, loser=s.loser,
                    cube=s.outcome.cube, finished_at=s.finished_at, reason=reason,
                )
                return rating_events(settlement, table=table)
            return table42
        if s.ladder == FIBS and s.match_over:
            assert s.match_winner is not None and s.match_loser is not None
            match_winner, match_loser = s.match_winner, s.match_loser

            async def fibs() -> list[tuple[str, dict[str, Any]]]:
                settlement = await store.settle(
                    s.match_id, ladder=FIBS, winner=match_winner, loser=match_loser,
                    match_length=s.match_length, finished_at=s.finished_at, reason=reason,
                )
                return rating_events(settlement, table=table)
            return fibs
        if s.boosted and s.game_counted:
            async def boosted() -> list[tuple[str, dict[str, Any]]]:
                result = await store.add_boosted_points(
                    s.game_id, winner=s.winner, loser=s.loser,
                    points=s.outcome.points, finished_at=s.finished_at,
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
                if self._gone:
                    log.warning("table %s: %s is settled by the table's new owner", self.id,
                                game_id)
                    return
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
                              pushes, table=self.id, note=None, game=game_id)
        self._push_ratings(pushes)
        await self.lobby.flush()

    def _push_ratings(self, pushes: list[tuple[str, dict[str, Any]]]) -> None:
        if pushes:
            self.lobby.metrics.rating_delay.observe(time.perf_counter() - self._ended_at)
        for player, event in pushes:
            self.lobby.deliver_rating(player, self._nodes_of(player), event)

    def _nodes_of(self, player: str) -> set[str]:
        side = self.machine.side_of(player)
        if side is None:
            return set()
        seat = self.machine.seats[side]
        return set() if seat is None else set(seat.nodes)

    async def _wind_up(self) -> None:
        """The table is finished: free the seats, leave the lobby, linger, then go."""
        self.wound_up = True  # result, settlement and inbox stored: nothing left to hand on
        self.shutdown()
        self.lobby.table_changed(self)
        for player in self.machine.seated_players():
            await self._retry(self.machine.game_id(), f"the seat release of {player}",
                              self.lobby.persistence.release_seat, player, self.id)
        self.lobby.forget_later(self)

    def close(self, reason: str, *, release: bool = True) -> None:
        """Close a table that has no game in progress (its only player left or vanished)."""
        if self.machine.status is TableStatus.CLOSED:
            return
        now = time.time()
        self._apply(self.machine.close(reason, now), now)
        self._closed(release=release)

    def end_store_lost(self) -> None:
        """The store forgot this table (emptied or replaced): close it with ``table_closed``
        (reason ``store_lost``), told to its players and watchers at once, since there is no
        log left to store it in first. A game in progress ends with no result and no rating
        change; events not stored yet were never announced and are dropped. The caller
        forgets the table (:meth:`Lobby.table_lost`)."""
        if self._fenced:
            return
        now = time.time()
        step = self.machine.close(STORE_LOST, now)
        self.shutdown()
        for out in step.events:
            self._broadcast(out)

    def cancel_tournament(self) -> None:
        """The table's tournament was cancelled: the machine closes the table whatever is in
        progress (``table_closed``, reason ``tournament_cancelled``) and the seats are freed.
        A finished or closed table is left as it is."""
        machine = self.machine
        if machine.status in (TableStatus.FINISHED, TableStatus.CLOSED):
            return
        now = time.time()
        self._apply(machine.cancel_tournament(now), now)
        self._closed(release=True)

    def _closed(self, *, release: bool) -> None:
        self.shutdown()
        self.lobby.persistence.mark_dirty(self.id, self.snapshot, urgent=True)
        players = self.machine.seated_players()
        self.lobby.table_changed(self)
        if release:
            self.lobby.spawn(self._release(players))
        self.lobby.forget_later(self, delay=0.0)

    async def _release(self, players: list[str]) -> None:
        for player in players:
            await self._retry(self.id, f"the seat release of {player}",
                              self.lobby.persistence.release_seat, player, self.id)

    # --- a table taken over from another node ----------------------------------------------

    @classmethod
    async def restore(
        cls, lobby: Lobby, table_id: str, snapshot: dict[str, Any] | None,
        events: list[dict[str, Any]], now: float,
    ) -> Table:
        """Rebuild a live table from its Redis log (``events``: what
        ``persistence.events_since(table_id, 0)`` returns; ``snapshot``: its stored snapshot,
        for the table's mode, length, tournament and creation time) on this node.

        A player with sockets on other live nodes (presence; not the old owner) stays connected
        there; every other seat is away, in grace from ``now`` (players come back by
        ``sync``/``attach`` on any node); the player to act gets the time left on the clock at
        the last stored event plus ``settings.takeover_allowance``. A game that ended in the
        log and is not settled (no result stored) is settled now, once, and its rating events
        pushed. The table emits nothing until a player acts or a timer fires: its next event
        is the log's last + 1.
        Raises ValueError when the log does not replay. The caller registers the table.
        """
        summary: dict[str, Any] = dict((snapshot or {}).get("summary") or {})
        first = next((e for e in events if e.get("type") == "game_start"), {})
        mode = TableMode(str(summary.get("mode") or first.get("mode") or TableMode.COMPETITIVE))
        length = int(summary.get("match_length") or first.get("match_length") or 0)
        tournament = summary.get("tournament_id")
        created = float(summary.get("created_at") or now)
        factory: Callable[[], DiceSource] = lobby.dice_factory
        settings = lobby.settings
        machine = TableMachine.replay(
            events, table_id=table_id, mode=mode, match_length=length,
            tournament_id=None if tournament is None else str(tournament), created_at=created,
            settings=MachineSettings.of(settings), dice_factory=factory,
        )
        table = cls(lobby, table_id=table_id, mode=mode, match_length=length,
                    tournament_id=machine.tournament_id, dice_factory=factory,
                    created_at=created, machine=machine)
        for event in events:
            if event["v"] <= machine.version and (table.recent or event["v"] == 1
                                                  or event.get("type") == "game_start"):
                if len(table.recent) == table.recent.maxlen:
                    _, oldest = table.recent.popleft()
                    table._base_state = apply_event(table._base_state,
                                                    msgpack.unpackb(oldest))
                table.recent.append((int(event["v"]), msgpack.packb(event)))
        table._stored_v = machine.version
        table._snapshot_status = machine.status
        await table.chat.restore(table)
        # Players whose sockets are on live nodes stay connected there (not the old owner's:
        # a draining owner closes them); those whose sockets were on dead nodes get the
        # node-loss grace, from when the node died.
        old_owner = summary.get("node")
        present: list[set[str]] = []
        lost_at: list[float | None] = []
        for seat in machine.seats:
            nodes: list[str] = []
            if seat is not None:
                try:
                    nodes, _address = await lobby.persistence.presence(seat.player)
                except (RedisError, OSError):
                    nodes = []
            live, died = split_by_liveness(nodes, lobby.liveness.peers, lobby.node_id,
                                           now)
            present.append({n for n in live if n != old_owner})
            lost_at.append(died)
        table._apply(machine.take_over(now, settings.takeover_allowance, present, lost_at),
                     now)
        settlement = machine.settlement
        if settlement is not None:
            stored = await table._result_stored(settlement.game_id)
            # Done only when the rating events reached the inboxes too: a node may die after
            # settling and before that (the store gives the same settlement back; each event
            # keeps its event_id).
            if (stored and not await table._rating_missing(settlement)
                    and not await table._inbox_missing(settlement)):
                if not await table._record_stored(settlement.game_id):
                    # Its node died after the settlement, before the record: written now
                    # (without the rating changes, which the record would only repeat).
                    await table._retry(settlement.game_id, "the game record",
                                       table._save_record, settlement, [])
                table._apply(machine.settled(now), now)
                if settlement.match_over:
                    lobby.spawn(table._wind_up())
            else:
                # The result and the rating are written at the same time at a game's end: a
                # node may die between the two. The store applies a game id once.
                table._game_over(settlement, write_result=not stored)
        elif machine.status is TableStatus.FINISHED:
            lobby.spawn(table._wind_up())
        elif machine.status is TableStatus.CLOSED:
            lobby.forget_later(table, delay=0.0)
        return table

    async def _rating_missing(self, s: Settlement) -> bool:
        """Whether the rating store has no settlement of this rated game (match) yet."""
        rated_id = s.game_id if s.ladder == TABLE42 else (
            s.match_id if s.ladder == FIBS and s.match_over else None)
        if rated_id is None:
            return False
        try:
            return await self.lobby.ratings.settlement(rated_id) is None
        except (RedisError, OSError):
            return True  # settle again: the store gives back the same settlement

    async def _inbox_missing(self, s: Settlement) -> bool:
        """Whether the game's rating events may not be in the players' inboxes yet (only
        games that push rating events write them)."""
        rated = s.ladder == TABLE42 or (s.ladder == FIBS and s.match_over) or s.boosted
        if not rated:
            return False
        try:
            return not await self.lobby.persistence.inboxed(self.id, s.game_id)
        except (RedisError, OSError):
            return True

    async def _record_stored(self, game_id: str) -> bool:
        try:
            return await self.lobby.records.exists(game_id)
        except (RedisError, OSError):
            return False

    async def _result_stored(self, game_id: str) -> bool:
        """Whether the table's results hold ``game_id`` (its settlement was made)."""
        return await self.lobby.persistence.has_result(self.id, game_id)
