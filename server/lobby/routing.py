"""The lobby: the node's tables, and each command handed to the collaborator whose job it is.

:class:`Lobby` owns what the node's parts share (the tables owned here, the background tasks,
the listeners) and spends about one line per command; the work is done by

* :class:`~server.lobby.delivery.Delivery` (``delivery.py``): replies, table events, chat
  and inbox events to sockets here or on other nodes;
* :class:`~server.lobby.forwarding.Forwarding` (``forwarding.py``): commands to the node that
  owns their table, one answer per request, where a seated player's sockets are;
* :class:`~server.lobby.takeover.Takeover` (``takeover.py``): tables gained from dead or
  draining nodes and lost to others, dead nodes, the drain, a lost store (the loops that
  decide when are ``ownership.py``'s);
* :class:`~server.cluster.liveness.NodeLiveness` (``server/cluster/liveness.py``): which
  peers are alive;
* :class:`~server.lobby.creation.TableCreation` (``creation.py``): opening tables (by a
  player, by matchmaking, by a tournament), the creation limits, the lobby listing;
* :class:`~server.lobby.chat.LobbyChat` (``chat.py``): a socket's chat checks and mutes.

Messages from this node's sockets come in through :meth:`Lobby.on_message`, messages from
other nodes (the typed structs of ``server/protocol/node_messages.py``) through
:meth:`Lobby.on_node_message`; each is one short dispatch.

Parts built after the lobby hear of its events through the :class:`LobbyListeners` given at
construction: players sat down (matchmaking drops their tickets), a node died (its tickets
go), a table was rebuilt here after a takeover (a computer opponent resumes its seat) or lost
to another node, a draining peer handed its tables over (the takeover scan looks at once).

For matchmaking: :meth:`Lobby.start_rated_game` seats two players at a new Competitive table
(a single game or a match to n), :meth:`Lobby.start_boosted_game` at a new Boosted one, and
:meth:`Lobby.push_to_player` sends any message to a player wherever they are connected.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from redis.exceptions import RedisError

from rating_plugin.store import RatingStore
from server.cluster.bus import NodeBus
from server.cluster.liveness import NodeLiveness
from server.config import Settings
from server.lobby.chat import LobbyChat
from server.lobby.creation import TableCreation
from server.lobby.delivery import Delivery
from server.lobby.forwarding import Forwarding
from server.lobby.refusals import error_reply, store_away
from server.lobby.table import Table
from server.lobby.takeover import Takeover
from server.lobby.watches import SocketWatches
from server.metrics import Metrics
from server.net.connection import Connection, Hub
from server.protocol import node_messages as ops
from server.protocol.codec import Outgoing
from server.protocol.messages import (
    AckEvents,
    Chat,
    CreateTable,
    Hello,
    ListTables,
    Message,
    Mute,
    Ping,
    Report,
    TableMessage,
    TableMode,
    Unmute,
    Unwatch,
    Watch,
)
from server.protocol.node_messages import Actor, NodeMessage
from server.protocol.visibility import Audience
from server.rules import DiceSource
from server.store.accounts import BOT_PREFIX, Identity
from server.store.games import GameRecords
from server.store.persistence import Persistence
from server.store.record_budget import RecordBudget
from server.tables.ratings import RatedPlayer, RatingPlan

__all__ = ["Actor", "Lobby", "LobbyListeners", "store_away"]

log = logging.getLogger(__name__)

_WRITES = (ops.Deliver, ops.Push, ops.Chat)
"""Node messages whose handling only writes to sockets here (no ``await``)."""

PONG = Outgoing({"type": "pong", "ref": None})
"""The answer to a ``ping`` without ``id`` (the clients' silence watch, PROTOCOL.md §1): one
message for every socket, each format encoded once."""


@dataclass(frozen=True, slots=True)
class LobbyListeners:
    """Who the lobby tells of its events; each is called in the order given."""

    seated: tuple[Callable[[list[str]], Coroutine[Any, Any, None]], ...] = ()
    """Players who just sat down at a table (run in the background)."""
    node_dead: tuple[Callable[[str], Awaitable[None]], ...] = ()
    """A node seen dead for the first time (awaited; a Redis error is logged)."""
    restored: tuple[Callable[[Table], None], ...] = ()
    """A game table this node rebuilt after a takeover (an error is logged)."""
    table_lost: tuple[Callable[[str], None], ...] = ()
    """The id of a table this node lost to another (fenced, handed over, store lost)."""
    released: tuple[Callable[[str], None], ...] = ()
    """A peer (its node id) handed its tables over."""


class Lobby:
    """The tables of one node and the commands for them. See the module docstring."""

    def __init__(
        self,
        settings: Settings,
        persistence: Persistence,
        bus: NodeBus,
        hub: Hub,
        ratings: RatingStore,
        dice_factory: Callable[[], DiceSource],
        metrics: Metrics | None = None,
        listeners: LobbyListeners | None = None,
    ) -> None:
        self.settings = settings
        self.metrics = metrics if metrics is not None else Metrics(enabled=False)
        self.persistence = persistence
        self.bus = bus
        self.hub = hub
        self.ratings = ratings
        self.records = GameRecords(persistence.redis, persistence.keys, settings)
        self.record_budget = RecordBudget(persistence.redis, persistence.keys, settings)
        self.node_id = settings.node_id
        self.tables: dict[str, Table] = {}
        self.dice_factory = dice_factory
        self.listeners = listeners if listeners is not None else LobbyListeners()
        self.tasks: set[asyncio.Task[Any]] = set()
        self.closing = False
        self.liveness = NodeLiveness(self.node_id, settings.lease_ttl, settings.lease_renew,
                                     bus)
        self.delivery = Delivery(self)
        self.forwarding = Forwarding(self)
        bus.on_unheard = self.forwarding.unheard  # a forwarded request nobody heard
        self.takeover = Takeover(self)
        bus.on_resubscribed = self.takeover.bus_back  # node messages may have been lost
        self.creation = TableCreation(self)
        self.chat = LobbyChat(self)
        self.watches = SocketWatches(settings.socket_watch_max, self.tables,
                                     persistence.leases)
        # Players whose last socket here closed while Redis was away: their presence and
        # their table are told once it is back (store_health).
        self._left_away: set[str] = set()

    # --- tasks -----------------------------------------------------------------------------

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        """Run ``coro`` in the background; shutdown waits for it (settlements!)."""
        task = asyncio.ensure_future(coro)
        self.tasks.add(task)
        task.add_done_callback(self._task_done)
        return task

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self.tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("background task failed", exc_info=task.exception())

    async def drain(self, timeout: float) -> None:
        """Stop every table timer, then wait (up to ``timeout``) for in-flight settlements."""
        self.closing = True
        for table in self.tables.values():
            table.shutdown()
        self.creation.cancel_all()
        if self.tasks:
            _done, pending = await asyncio.wait(set(self.tasks), timeout=timeout)
            for task in pending:
                log.error("shutdown: a settlement did not finish in %.1fs", timeout)
                task.cancel()
        await self.flush()

    async def flush(self) -> None:
        await self.hub.flush()

    def online_players(self) -> int:
        """Authenticated players (computer players left out) with a socket on this node."""
        return sum(1 for player in self.hub.by_player if not player.startswith(BOT_PREFIX))

    def kick_flush(self) -> None:
        """Called from timer callbacks: make sure queued frames go out soon."""
        self.hub.flush_soon()

    # --- for the tables (delivery.py, creation.py, takeover.py do the work) ------------------

    def deliver_player(self, player: str, nodes: Iterable[str], out: Outgoing) -> None:
        self.delivery.deliver_player(player, nodes, out)

    def deliver_conns(self, conns: Iterable[tuple[str, str]], out: Outgoing) -> None:
        self.delivery.deliver_conns(conns, out)

    def deliver_chat(self, players: Mapping[str, list[str]], conns: Mapping[str, list[str]],
                     message: dict[str, Any]) -> None:
        self.delivery.deliver_chat(players, conns, message)

    def deliver_rating(self, player: str, nodes: set[str], event: dict[str, Any]) -> None:
        self.delivery.deliver_rating(player, nodes, event)

    def reply(self, actor: Actor, message: dict[str, Any]) -> None:
        """Answer the socket a command came from."""
        self.delivery.reply(actor, message)

    async def pair_limited(self, game_id: str, mode: TableMode, match_length: int,
                           players: tuple[RatedPlayer, RatedPlayer]) -> bool:
        return await self.creation.pair_limited(game_id, mode, match_length, players)

    def table_changed(self, table: Table) -> None:
        self.creation.table_changed(table)

    def forget_later(self, table: Table, delay: float | None = None) -> None:
        self.creation.forget_later(table, delay)

    def table_lost(self, table: Table) -> None:
        self.takeover.table_lost(table)

    # --- for matchmaking, tournaments and the computer players -------------------------------

    async def push_to_player(self, player: str, message: Mapping[str, Any]) -> bool:
        """Send ``message`` (a dict with a ``type``) to every socket of ``player``, on any
        node. Returns False when the player has no socket anywhere (nothing is kept)."""
        return await self.delivery.push_to_player(player, message)

    async def start_rated_game(
        self,
        first: str,
        second: str,
        *,
        match_length: int | None = None,
        names: tuple[str, str] | None = None,
        addresses: tuple[str, str] | None = None,
        mode: TableMode = TableMode.COMPETITIVE,
        announce: Callable[[str, RatingPlan], Awaitable[None]] | None = None,
        tournament_id: str | None = None,
        audience: Audience | None = None,
    ) -> str:
        """Seat ``first`` (side 0) and ``second`` (side 1) at a new Competitive table owned by
        this node and start play: a single game (Table42) when ``match_length`` is None, else a
        rated match to ``match_length`` points (FIBS). Both must hold no other seat.
        ``mode=TableMode.BOOSTED`` makes it a Boosted table instead (see
        :meth:`start_boosted_game`); ``mode=TableMode.TOURNAMENT`` with ``tournament_id`` a
        tournament table (never rated), ``audience`` who may see it (by default, as its
        ``mode`` has it: a private tournament gives its own). ``announce(table_id, plan)``
        is awaited once both seats are held and the rating decided (``plan``, as
        ``game_start`` will carry it: a game the pair limit refuses is unrated with
        ``pair_limit``), before anyone is seated, so what it sends arrives before ``seated``.

        ``names`` default to the player ids; ``addresses`` default to the players' latest
        connection addresses (same address -> unrated); a guest id makes the game unrated
        (``game_start`` says why). Returns the table id; both players
        receive ``seated`` and ``game_start`` events on every socket they have.
        Raises ProtocolError: ``same_player``, ``bad_field`` (match_length),
        ``already_seated`` (``field`` names the player's slot: ``first``/``second``).
        """
        return await self.creation.start_rated_game(
            first, second, match_length=match_length, names=names, addresses=addresses,
            mode=mode, announce=announce, tournament_id=tournament_id, audience=audience)

    async def start_boosted_game(
        self,
        first: str,
        second: str,
        *,
        names: tuple[str, str] | None = None,
        addresses: tuple[str, str] | None = None,
        announce: Callable[[str, RatingPlan], Awaitable[None]] | None = None,
    ) -> str:
        """Like :meth:`start_rated_game`, for one Boosted game (Boosted points, never Elo;
        guests welcome, they earn nothing)."""
        return await self.start_rated_game(
            first, second, names=names, addresses=addresses, mode=TableMode.BOOSTED,
            announce=announce,
        )

    async def cancel_tournament_table(self, table_id: str) -> bool:
        """See :meth:`server.lobby.forwarding.Forwarding.cancel_tournament_table`."""
        return await self.forwarding.cancel_tournament_table(table_id)

    def is_node_live(self, node: str) -> bool:
        return self.liveness.is_live(node)

    def is_node_fresh(self, node: str) -> bool:
        return self.liveness.is_fresh(node)

    # --- for the ownership loops (takeover.py does the work) --------------------------------

    async def restore_table(self, table_id: str, snapshot: dict[str, Any] | None,
                            events: list[dict[str, Any]]) -> Table | None:
        return await self.takeover.restore_table(table_id, snapshot, events)

    async def node_died(self, node: str, *, stopped: bool = False) -> None:
        await self.takeover.node_died(node, stopped=stopped)

    def node_back(self, node: str) -> None:
        self.liveness.back(node)

    async def hand_over(self) -> list[str]:
        return await self.takeover.hand_over()

    # --- sockets ---------------------------------------------------------------------------

    def actor_of(self, conn: Connection) -> Actor:
        actor = conn.actor  # made once per socket: it is the same for every message
        if actor is None:
            identity = conn.identity
            assert identity is not None
            actor = conn.actor = Actor(identity.player, identity.name, identity.is_guest,
                                       conn.address, self.node_id, conn.id,
                                       conn.session.lean)
        return actor

    async def on_connect(self, conn: Connection, identity: Identity, *,
                         first_here: bool | None = None) -> None:
        """A socket authenticated: presence, resume a seated game, deliver the inbox.
        ``first_here``: the caller bound the socket under its player already (whether it
        is the player's only socket on this node); None: bound here."""
        if first_here is None:
            first_here = self.hub.bind(conn) == 1
        player = identity.player
        try:
            if first_here:
                await self.persistence.presence_join(player, self.node_id, conn.address)
            else:
                await self.persistence.seen_from(player, conn.address)
            seat = await self.persistence.seat_of(player)
            if seat is not None:
                await self.forwarding.attach(self.actor_of(conn), seat)
            await self.delivery.deliver_inbox(conn, player)
        except (RedisError, OSError) as exc:
            log.warning("on_connect for %s: %s", player, exc)
        await self.flush()

    async def on_disconnect(self, conn: Connection) -> None:
        """A socket closed: stop its watching; if it was the player's last one here, tell the
        player's table (the grace period starts there)."""
        remaining = self.hub.remove(conn)
        player = conn.player
        for table_id in list(conn.watching):
            self.forwarding.unwatch(table_id, conn.id)
        if player is None or remaining > 0:
            return
        try:
            await self._left(player)
        except (RedisError, OSError) as exc:
            log.warning("on_disconnect for %s: %s (told once Redis is back)", player, exc)
            self._left_away.add(player)
        await self.flush()

    async def _left(self, player: str, *, detach: bool = True) -> None:
        """``player``'s last socket here closed: one socket less in its presence, and, with
        ``detach``, its table is told (the grace period starts there)."""
        await self.persistence.presence_leave(player, self.node_id)
        if self.closing or not detach:
            return
        seat = await self.persistence.seat_of(player)
        if seat is not None:
            await self.forwarding.detach(player, seat)

    async def _leaves_after_hold(self) -> None:
        """Redis is back: what :meth:`on_disconnect` could not do while it was away is done
        now (a player who has a socket here again only counts one socket less)."""
        for player in list(self._left_away):
            self._left_away.discard(player)
            try:
                await self._left(player, detach=not self.hub.by_player.get(player))
            except (RedisError, OSError) as exc:
                log.warning("on_disconnect for %s: %s (told once Redis is back)", player, exc)
                self._left_away.add(player)
        await self.flush()

    def store_health(self, up: bool) -> None:
        """This node's store health changed (:attr:`Persistence.redis_up`, the one place it
        is decided): every table here is held while Redis is away (timers stopped, ``held``
        sent) and resumed when it is back; then the sockets that closed meanwhile count as
        gone."""
        for table in list(self.tables.values()):
            try:
                if up:
                    table.resume()
                else:
                    table.hold()
            except Exception:
                log.exception("table %s: %s failed", table.id, "resume" if up else "hold")
        log.warning("Redis %s: %d tables %s", "back" if up else "away", len(self.tables),
                    "resumed" if up else "held")
        if up and self._left_away:
            self.spawn(self._leaves_after_hold())
        self.kick_flush()

    # --- messages from this node's sockets ---------------------------------------------------

    async def on_message(self, conn: Connection, msg: Message) -> None:
        """Handle one accepted message of an authenticated socket; errors become ``error``."""
        table_id = msg.table if isinstance(msg, TableMessage) else None
        try:
            await self._dispatch(conn, msg)
        except Exception as exc:
            self.hub.push(conn, Outgoing(error_reply(
                exc, msg.ref, table_id, doing=f"handling {msg.TYPE} from {conn.player}",
                metrics=self.metrics)))
        await self.hub.flush()

    async def _dispatch(self, conn: Connection, msg: Message) -> None:
        if isinstance(msg, Ping):
            self.hub.push(conn, PONG if msg.ref is None
                          else Outgoing({"type": "pong", "ref": msg.ref}))
            return
        if not self.persistence.redis_up:
            # Nothing a game needs could be stored now: refuse instead of losing it.
            raise store_away()
        route = self.forwarding.route
        match msg:
            case Chat():
                await route(self.actor_of(conn), self.chat.checked(conn, msg))
            case Report():
                await route(self.actor_of(conn), self.chat.checked_report(conn, msg))
            case Mute() | Unmute():
                await self.chat.mute(conn, msg)
            case Watch():
                await self.watches.make_room(conn, msg.table)
                await route(self.actor_of(conn), msg)
                self.watches.watched(conn, msg.table)  # only once the table took it
            case Unwatch():
                conn.watching.discard(msg.table)
                await route(self.actor_of(conn), msg)
            case TableMessage():
                await route(self.actor_of(conn), msg)
            case ListTables():
                await self.creation.list_tables(conn, msg)
            case CreateTable():
                await self.creation.create_table(self.actor_of(conn), msg)
            case AckEvents():
                assert conn.player is not None
                # Removed from the inbox; the socket remembers only the ids it was written
                # (Connection.delivered), never those a client names.
                await self.persistence.inbox_remove(conn.player, list(msg.events))
                self.hub.push(conn, Outgoing({"type": "ack", "ref": msg.ref}))
            case Hello():  # pragma: no cover - the socket handler takes it
                pass

    # --- messages from other nodes (server/protocol/node_messages.py) -----------------------

    async def on_node_messages(self, messages: list[NodeMessage]) -> None:
        """Messages from other nodes, decoded and checked by the bus, in order. The frames
        that a run of ``deliver``, ``push`` and ``chat`` writes to sockets here leave in one
        write per socket; a message that fails is logged and the next one handled."""
        hub = self.hub
        delivery = self.delivery
        i, end = 0, len(messages)
        while i < end:
            if type(messages[i]) not in _WRITES:
                await self._on_node_message(messages[i])
                i += 1
                continue
            hub.hold_writes()
            try:
                while i < end and type(message := messages[i]) in _WRITES:
                    i += 1
                    try:
                        if type(message) is ops.Deliver:
                            delivery.delivered(message)
                        elif type(message) is ops.Push:
                            delivery.pushed(message)
                        elif type(message) is ops.Chat:
                            delivery.chatted(message)
                    except Exception:
                        log.exception("bus: handling a %s message failed", type(message))
            finally:
                hub.release_writes()
        await self.flush()

    async def on_node_message(self, message: NodeMessage) -> None:
        """One message from another node (see :meth:`on_node_messages`)."""
        await self.on_node_messages([message])

    async def _on_node_message(self, message: NodeMessage) -> None:
        try:
            await self._dispatch_node_message(message)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("bus: handling a %s message failed", type(message))

    async def _dispatch_node_message(self, message: NodeMessage) -> None:
        match message:
            case ops.Cmd():
                await self.forwarding.command(message)
            case ops.Attach():
                await self.forwarding.attached(message)
            case ops.Detach():
                self.forwarding.detached(message)
            case ops.Unwatch():
                self.forwarding.unwatched(message)
            case ops.CancelTable():
                await self.forwarding.cancelled(message)
            case ops.Reattach():
                await self.takeover.reattach()
            case ops.Revoke():
                for digest in message.tokens:
                    self.hub.end_token(digest, message.reason)
            case ops.Muted():
                self.hub.set_muted(message.player, message.muted)
            case ops.ChatMute():
                self.hub.set_chat_muted(message.player, message.until)
            case ops.TakenOver():
                await self.takeover.taken_over_elsewhere(message)
            case ops.Released():
                if message.node != self.node_id:  # broadcasts come back to their sender too
                    for listener in self.listeners.released:
                        listener(message.node)
