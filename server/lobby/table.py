"""The driver of one live table: the I/O shell around its pure state machine
(:class:`server.tables.machine.TableMachine`).

The machine decides everything a table does (seats, the game or match, clocks, strikes,
grace periods, versioned events); this driver runs its timers, stores its events, delivers
them and settles finished games. A table lives on exactly one node, its owner. Everything that
changes it runs on that node's event loop, synchronously, so a table needs no locks: a command
is checked and applied by the machine, and its :class:`~server.tables.machine.Step` is carried
out, all without awaiting. Only joining (the seat lock is in Redis), ``sync`` (may read the log
from Redis) and the end of a game (settlement, result write) await.

Timers are data: each :class:`~server.tables.machine.Deadline` of a step arms a timer
(:class:`~server.lobby.timers.TableTimers`: one decision clock per table, re-armed in place;
one grace timer per seat; the next game of a match) and a timer that fires hands its deadline
back to :meth:`TableMachine.expire`.

Versions: every event of a table carries ``v`` (1, 2, 3 ...). Every event is appended to the
table's Redis log and the last ``recent_events`` are kept in memory
(:class:`~server.lobby.recent.RecentEvents`); ``sync(since)`` returns the events after
``since`` and the full state.

Store before announce (:class:`~server.lobby.announce.Announcer`): an event goes to players
and watchers only once Redis holds it (:meth:`Table.stored`, called when the table's events
were written), and so does every reply that carries the table's ``v``, after the events it
follows. So what any client has seen is a prefix of the stored log: a node that takes the
table over (:meth:`Table.restore`) goes on at the next version, none skipped or repeated. A
table whose writes are refused (its lease went to another node) is :meth:`Table.fenced`.

The rules (who may sit, what leaving does, what a game's end settles) are the machine's: the
driver asks it before awaiting anything (:meth:`TableMachine.check_join`) and carries out its
answers. A game's end is handed to the table's :class:`~server.lobby.finisher.Finisher`, which
settles, stores and announces it.

A table is given the node's parts it uses (:class:`~server.lobby.table_deps.TableDeps`: the
store, the delivery, the clock, the spawner...) and its :class:`TableHost`, never the lobby.
Each job with state of its own lives beside it: ``finisher.py``, ``recent.py``,
``timers.py``, ``announce.py``, ``chat.py``.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable
from typing import Any, Protocol

from redis.exceptions import RedisError

from server.lobby.announce import Announcer
from server.lobby.chat import TableChat
from server.lobby.finisher import Finisher
from server.lobby.node_loss import split_by_liveness
from server.lobby.recent import RecentEvents
from server.lobby.table_deps import TableDeps
from server.lobby.timers import TableTimers
from server.lobby.view import MachineView
from server.protocol.codec import Outgoing, WireFormat
from server.protocol.errors import ErrorCode, ProtocolError
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
from server.protocol.node_messages import Actor
from server.protocol.visibility import Audience, Viewer, audience_of, may_see
from server.rules import DiceSource
from server.tables.machine import (
    BOT_PREFIX,
    EMPTY,
    HOLD_RETRY_AFTER,
    NEXT_GAME,
    STORE_LOST,
    Deadline,
    LeaveKind,
    MachineSettings,
    Seat,
    Step,
    TableMachine,
    TableStatus,
    already_seated,
)
from server.tables.ratings import RatedPlayer

log = logging.getLogger(__name__)

_GAME_ACTIONS = frozenset(GAME_ACTIONS)
_PACK = WireFormat.MSGPACK

__all__ = ["Seat", "Table", "TableHost", "TableStatus"]


class TableHost(Protocol):
    """What a table tells the node it lives on (:class:`~server.lobby.lifecycle.TableLife`
    on a node; a test may record the calls): its status ``changed``; it is ``closed`` (to
    forget after ``delay``, None: ``finished_linger``); it is ``lost`` (fenced)."""

    def changed(self, table: Table) -> None: ...

    def closed(self, table: Table, delay: float | None = None) -> None: ...

    def lost(self, table: Table) -> None: ...


class Table(MachineView):
    """A table owned by this node. Created by the lobby; see the module docstring."""

    def __init__(
        self,
        deps: TableDeps,
        host: TableHost,
        *,
        table_id: str,
        mode: TableMode,
        match_length: int,
        tournament_id: str | None,
        created_at: float | None = None,
        machine: TableMachine | None = None,
        audience: Audience | None = None,
    ) -> None:
        """``audience``: who may see the table and its games (by default, as its ``mode``
        has it; a private tournament's table is given its own)."""
        self.deps = deps
        self.host = host
        self.settings = deps.settings
        self.clock = deps.clock
        self.audience = audience if audience is not None else audience_of(str(mode))
        self.machine = machine if machine is not None else TableMachine(
            table_id=table_id, mode=mode, match_length=match_length,
            tournament_id=tournament_id,
            created_at=self.clock.now() if created_at is None else created_at,
            settings=MachineSettings.of(self.settings), dice_factory=deps.dice_factory,
        )
        self.watchers: dict[tuple[str, str], str] = {}
        self.events = RecentEvents(self.settings.recent_events)
        self.timers = TableTimers(self.clock)
        self._snapshot_status: TableStatus | None = None
        self.announcer = Announcer(deps.delivery, self.machine, self.watchers)
        self._fenced = False
        self.creator_address: str | None = None  # counts against its address while open
        self.chat = TableChat(deps, self.machine, self.watchers)
        self.finisher = Finisher(deps, self.machine, self.events, self.announcer,
                                 self.audience)

    # --- reading ---------------------------------------------------------------------------

    @property
    def recent(self) -> deque[tuple[int, bytes]]:
        """The recent events in memory: (version, msgpack of the lean form)."""
        return self.events.window

    @property
    def wound_up(self) -> bool:
        """The last game's end is fully stored: a drain gives the lease up as done; a
        finished table not yet wound up is handed on, for its peer to settle it."""
        return self.finisher.wound_up

    @property
    def is_listed(self) -> bool:
        return self.audience.listed

    def may_see(self, actor: Actor) -> bool:
        """Whether ``actor`` may see this table live (watch, chat, sync):
        :func:`server.protocol.visibility.may_see` with its seated players."""
        return may_see(self.audience, self.machine.seated_players(),
                       Viewer(player=actor.player), live=True)

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
            "node": self.deps.node_id,
        }

    def state(self) -> dict[str, Any]:
        """The full table state sent with every game event (and on resume / sync)."""
        return self.machine.state()

    def snapshot(self) -> dict[str, Any]:
        """What the write-behind flusher stores as the table's snapshot in Redis (the state
        of the latest event that carried one: building a state costs more than a move)."""
        last = self.machine.last_state
        state = last if last is not None else self.machine.state()
        return {"v": self.machine.version, "summary": self.summary(), "state": state,
                "audience": self.audience.to_json()}

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
            self.timers.arm(deadline, now, self._fire)
        for deadline in step.cancelled:
            self.timers.disarm(deadline)
        if step.settle is not None:
            self.finisher.game_over(self, step.settle)

    def settled(self) -> None:
        """The finished game is settled, stored and announced: tell the machine."""
        now = self.clock.now()
        self._apply(self.machine.settled(now), now)

    def _record(self, out: Outgoing) -> None:
        version: int = out.obj["v"]
        # The log (in memory and in Redis) keeps the lean form; the full form is rebuilt from
        # it for a sync (see _full_events).
        packed = out.frame(_PACK, True)
        self.events.append(version, packed)
        persistence = self.deps.persistence
        persistence.append_event(self.id, version, packed, self.stored)
        # A new status (open, playing, finished) must reach the snapshot at once: other
        # nodes read it to tell whether a player's seat is in a live game.
        status = self.machine.status
        urgent = status is not self._snapshot_status
        self._snapshot_status = status
        persistence.mark_dirty(self.id, self.snapshot, urgent=urgent)
        self.announcer.event(version, out)
        if out.obj.get("type") == "game_start":
            self.deps.metrics.games.inc()

    def _reply(self, actor: Actor, message: dict[str, Any]) -> None:
        self.announcer.reply(actor, message)

    def stored(self, version: int) -> None:
        """Every event of this table up to ``version`` is in Redis: announce what waited."""
        self.announcer.stored(version)

    def fenced(self) -> None:
        """Redis refused this node's write for the table (another node owns it now): stop
        every timer, announce nothing more, refuse later commands, leave the lobby."""
        if self._fenced:
            return
        self.let_go()
        log.warning("table %s: fenced (another node owns it now)", self.id)
        self.host.lost(self)

    def let_go(self, *, finished: bool = False) -> None:
        """This node stops serving the table (fenced, handed over in a drain, taken over by
        another node): every timer stops, nothing more is announced (what was not stored is
        not the table's), and each request still waiting for its answer gets one:
        ``unavailable``, to be sent again (it reaches the table's new owner). An unfinished
        table's end-of-game writes still in flight here stop (its new owner makes them);
        ``finished`` (its end fully stored, nobody takes it over): its seat releases go on.
        The caller forgets it (:meth:`TableHost.lost`)."""
        if self._fenced:
            return
        self.shutdown()
        self._fenced = True
        self.finisher.gone = not finished
        self.announcer.stop()

    # --- timers --------------------------------------------------------------------------

    def _fire(self, deadline: Deadline) -> None:
        """A timer is due: a clock or grace deadline goes back to the machine once the store
        answered; a match's next game at once."""
        if deadline.kind != NEXT_GAME:
            # A strike, an automatic move or a forfeit only once the store answered after
            # the deadline passed (see _expire_confirmed).
            self.deps.tasks.spawn(self._expire_confirmed(deadline))
            return
        self._expire(deadline)

    async def _expire_confirmed(self, deadline: Deadline) -> None:
        """Hand ``deadline`` to the machine once a check of the store answered: Redis away
        since just before the deadline (not noticed yet by the health check) must not cost
        the player; the failed check holds the table instead (:meth:`hold`), and the clock
        goes on at :meth:`resume`."""
        persistence = self.deps.persistence
        if not await persistence.confirm_up():
            if not persistence.redis_up:
                self.hold()  # held already, unless it started after the others were held
            return
        if not self._fenced:
            self._expire(deadline)

    def _expire(self, deadline: Deadline) -> None:
        try:
            now = self.clock.now()
            was = self.machine.status
            step = self.machine.expire(deadline, now)
            self._apply(step, now)
            if self.machine.status is TableStatus.CLOSED and was is not TableStatus.CLOSED:
                self._closed(release=True)
        except Exception:
            log.exception("table %s: %s timer handling failed", self.id, deadline.kind)

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
        now = self.clock.now()
        step = machine.hold(now)
        if machine.held is None:
            return  # finished or closed: nothing to hold
        self._apply(step, now)
        self.announcer.broadcast(Outgoing({"type": "held", "table": self.id, "since": now,
                                           "retry_after": HOLD_RETRY_AFTER}))

    def resume(self) -> None:
        """This node can store again: the machine's timers go on with the time they had left
        plus ``settings.hold_allowance`` and it emits ``resumed`` (stored, then announced)."""
        if self._fenced:
            return
        now = self.clock.now()
        self._apply(self.machine.resume(now, self.settings.hold_allowance), now)

    def shutdown(self) -> None:
        """The node is stopping: stop every timer (the game stays as its snapshot and log)."""
        self.timers.stop()

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
        if not self.audience.listed and not self.may_see(actor):
            # Told as a table that does not exist: its existence is not for this player.
            raise ProtocolError(ErrorCode.NO_SUCH_TABLE, f"no table {self.id}", field="table")
        if type(msg) in _GAME_ACTIONS:  # the common case first: a move
            started = time.perf_counter()
            now = self.clock.now()
            self._apply(machine.act(actor.player, msg, now), now)
            metrics = self.deps.metrics
            metrics.moves.inc()
            metrics.move_time.observe(time.perf_counter() - started)
        elif isinstance(msg, Chat):
            await self.chat.post(actor, msg)
            return
        elif isinstance(msg, Report):
            await self.chat.report(actor, msg)
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
        self.deps.summons(actor, self.id, seated=True)

    def seat_creator(self, actor: Actor) -> None:
        """Seat the table's creator (seat lock already held) at side 0."""
        self._seat(0, actor, {actor.node}, self.clock.now())

    def seat_pair(self, players: list[tuple[Actor, set[str]]], *,
                  pair_limited: bool = False) -> None:
        """Seat two players at once (matchmaking; both seat locks held) and start;
        ``pair_limited``: the pair limit refused the game a rating (counted by the caller)."""
        now = self.clock.now()
        for side, (actor, nodes) in enumerate(players):
            self._seat(side, actor, set(nodes), now)
        self._start_play(now, pair_limited=pair_limited)

    def _start_play(self, now: float, *, pair_limited: bool = False) -> None:
        step = self.machine.start(now, pair_limited=pair_limited)
        self.host.changed(self)
        self._apply(step, now)

    async def join(self, actor: Actor) -> None:
        """Seat ``actor`` if the machine lets them sit (a player seated here already gets
        ``resume``). Their seat lock is taken in Redis and, when this seat fills the table,
        the game counted against the pair's limit; the machine checks the seat again after
        those awaits (the table may have closed meanwhile), and the lock is given back on
        every refusal."""
        machine = self.machine
        is_bot = actor.player.startswith(BOT_PREFIX)
        side = machine.check_join(actor.player, is_bot=is_bot)
        if side is None:
            self._reply(actor, self._resume_message(actor.player))
            return
        persistence = self.deps.persistence
        machine.joining = actor.player  # no other join while this one awaits
        try:
            try:
                held = await persistence.take_seat(actor.player, self.id)
            except (RedisError, OSError) as exc:
                raise ProtocolError(ErrorCode.UNAVAILABLE, "Redis is unavailable") from exc
            if held is not None:
                raise already_seated(held)
            limited = False
            other = machine.seats[1 - side]
            try:
                if other is not None and machine.status is TableStatus.OPEN:
                    # This seat fills the table: count the game against the pair's limit.
                    joiner = RatedPlayer(actor.player, actor.is_guest, actor.address, is_bot)
                    seated = RatedPlayer(other.player, other.is_guest, other.address,
                                         other.is_bot)
                    pair = (joiner, seated) if side == 0 else (seated, joiner)
                    limited = await self.deps.pair_limit.limited(self.id, self.mode,
                                                                 machine.match_length, pair)
                now = self.clock.now()
                self._seat(side, actor, {actor.node}, now)
            except ProtocolError:
                await persistence.release_seat(actor.player, self.id)
                raise
        finally:
            machine.joining = None
        if machine.is_full:
            self._start_play(now, pair_limited=limited)

    async def leave(self, actor: Actor) -> None:
        """``actor`` leaves: a watcher stops watching; a seated player gets what the machine
        decides (:class:`LeaveKind`). The seat locks are given back before the answer, so
        the seat is free at once."""
        machine = self.machine
        if machine.side_of(actor.player) is None and (actor.node, actor.conn) in self.watchers:
            self.unwatch(actor.node, actor.conn)
            return
        now = self.clock.now()
        kind, step = machine.leave(actor.player, now)
        if kind is LeaveKind.CLOSE:
            self._apply(step, now)
            self._closed(release=False)
            await self.finisher.release(machine.seated_players())
        elif kind is LeaveKind.FORFEIT:
            self._apply(step, now)  # the seats are given back at the table's end
        else:
            self._apply(step, now)
            await self.deps.persistence.release_seat(actor.player, self.id)

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
            "chat": self.chat.for_watcher(actor.player),
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
                now = self.clock.now()
                step = self.machine.connect(actor.player, actor.node, now)
                if step is not None:
                    self._apply(step, now)
        version = self.machine.version
        page = await self.events.page(
            msg.since, version, self.settings.sync_page, lean=actor.lean,
            game_starts=self.machine.game_starts, read_log=self._read_log)
        self._reply(actor, {
            "type": "sync", "table": self.id, "ref": msg.ref, "since": msg.since,
            "v": version, "complete": page.complete, "next": page.next,
            "events": page.events,
            "summary": self.summary(), "state": self.machine.handout(),
        })

    async def _read_log(self, start: int, upto: int) -> list[dict[str, Any]]:
        try:
            return await self.deps.persistence.events_between(self.id, start, upto,
                                                              self.machine.version)
        except (RedisError, OSError) as exc:
            raise ProtocolError(ErrorCode.UNAVAILABLE, "Redis is unavailable") from exc

    def _resume_message(self, player: str) -> dict[str, Any]:
        side = self.machine.side_of(player)
        return {
            "type": "resume", "table": self.id, "v": self.machine.version,
            "side": None if side is None else int(side),
            "summary": self.summary(), "state": self.machine.handout(),
            "chat": self.chat.for_player(),
        }

    # --- presence -------------------------------------------------------------------------

    def attach(self, actor: Actor) -> bool:
        """``actor``'s player has a socket on ``actor.node`` again. Sends it ``resume``."""
        if self._fenced:
            return False
        now = self.clock.now()
        step = self.machine.connect(actor.player, actor.node, now)
        if step is None:
            return False
        self._apply(step, now)
        self._reply(actor, self._resume_message(actor.player))
        return True

    def arrive(self, old: Actor, new: Actor, *, last_there: bool) -> None:
        """A seated player's socket moved from ``old.node`` to ``new.node`` (a sibling
        worker handed it over): the player has a socket on ``new.node`` (no ``resume``: the
        socket has every event already), and none left on ``old.node`` when that was the
        last one there."""
        now = self.clock.now()
        step = self.machine.connect(new.player, new.node, now)
        if step is not None:
            self._apply(step, now)
            if last_there:
                self._apply(self.machine.disconnect(new.player, old.node, now), now)

    def rewatch(self, old: Actor, new: Actor) -> None:
        """The watching socket ``old`` is ``new`` now (handed over between workers)."""
        player = self.watchers.pop((old.node, old.conn), None)
        if player is not None:
            self.watchers[(new.node, new.conn)] = player

    def detach(self, player: str, node: str, *, lost_at: float | None = None) -> None:
        """``player`` has no socket on ``node`` any more; start the grace period if that was
        the last node (the node-loss grace when ``node`` was found dead at ``lost_at``)."""
        now = self.clock.now()
        self._apply(self.machine.disconnect(player, node, now, lost_at=lost_at), now)

    def end_store_lost(self, reason: str = STORE_LOST) -> None:
        """The store forgot this table (emptied or replaced; ``log_lost``: events of its log
        that it no longer holds): close it with ``table_closed`` (``reason``), told to its
        players and watchers at once, since there is no log left to store it in first. A
        game in progress ends with no result and no rating change; events not stored yet
        were never announced and are dropped. The caller forgets the table
        (:meth:`TableHost.lost`)."""
        if self._fenced:
            return
        now = self.clock.now()
        step = self.machine.close(reason, now)
        self.shutdown()
        for out in step.events:
            self.announcer.broadcast(out)

    def cancel_tournament(self) -> None:
        """The table's tournament was cancelled: the machine closes the table whatever is in
        progress (``table_closed``, reason ``tournament_cancelled``) and the seats are freed.
        A finished or closed table is left as it is."""
        machine = self.machine
        if machine.status in (TableStatus.FINISHED, TableStatus.CLOSED):
            return
        now = self.clock.now()
        self._apply(machine.cancel_tournament(now), now)
        self._closed(release=True)

    def _closed(self, *, release: bool) -> None:
        self.shutdown()
        self.deps.persistence.mark_dirty(self.id, self.snapshot, urgent=True)
        players = self.machine.seated_players()
        self.host.changed(self)
        if release:
            self.deps.tasks.spawn(self.finisher.release(players))
        self.host.closed(self, delay=0.0)

    async def wind_up(self) -> None:
        """The table is finished and its last game's end fully stored: its timers stop,
        the seats are given back, it lingers ``finished_linger`` seconds, then goes."""
        self.shutdown()
        self.host.changed(self)
        await self.finisher.release_seats()
        self.host.closed(self)

    # --- a table taken over from another node ----------------------------------------------

    @classmethod
    async def restore(
        cls, deps: TableDeps, host: TableHost, table_id: str, snapshot: dict[str, Any] | None,
        events: list[dict[str, Any]], now: float,
    ) -> Table:
        """Rebuild a live table from its Redis log (``events``: what
        ``persistence.events_since(table_id, 0)`` returns; ``snapshot``: its stored snapshot,
        for the table's mode, length, tournament, audience and creation time) on this node.

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
        audience = Audience.from_json((snapshot or {}).get("audience"), mode=str(mode))
        length = int(summary.get("match_length") or first.get("match_length") or 0)
        tournament = summary.get("tournament_id")
        created = float(summary.get("created_at") or now)
        factory: Callable[[], DiceSource] = deps.dice_factory
        settings = deps.settings
        machine = TableMachine.replay(
            events, table_id=table_id, mode=mode, match_length=length,
            tournament_id=None if tournament is None else str(tournament), created_at=created,
            settings=MachineSettings.of(settings), dice_factory=factory,
        )
        table = cls(deps, host, table_id=table_id, mode=mode, match_length=length,
                    tournament_id=machine.tournament_id, created_at=created, machine=machine,
                    audience=audience)
        table.events.load(events, machine.version)
        table.announcer.stored_v = machine.version
        table._snapshot_status = machine.status
        await table.chat.restore()
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
                    nodes, _address = await deps.persistence.presence(seat.player)
                except (RedisError, OSError):
                    nodes = []
            live, died = split_by_liveness(nodes, deps.peers.peers, deps.node_id, now)
            present.append({n for n in live if n != old_owner})
            lost_at.append(died)
        table._apply(machine.take_over(now, settings.takeover_allowance, present, lost_at),
                     now)
        settlement = machine.settlement
        if settlement is not None:
            await table.finisher.resume(table, settlement)
        elif machine.status is TableStatus.FINISHED:
            deps.tasks.spawn(table.wind_up())
        elif machine.status is TableStatus.CLOSED:
            host.closed(table, delay=0.0)
        return table
