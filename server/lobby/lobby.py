"""The lobby: the node's tables, and each command handed to the collaborator whose job it is.

:class:`Lobby` is composition and dispatch. It builds the node's parts once, each given only
the ports (``ports.py``) and parts it uses, never the lobby, and spends about one line per
command; the work is done by

* :class:`~server.lobby.registry.TableRegistry` (``registry.py``): the one writer of which
  tables are here and who owns the others;
* :class:`~server.lobby.delivery.Delivery` (``delivery.py``): replies, table events, chat
  and inbox events to sockets here (the outbox) or on other nodes (the bus);
* :class:`~server.lobby.forwarding.Forwarding` (``forwarding.py``) and
  :class:`~server.lobby.requests.ForwardedRequests` (``requests.py``): commands to the node
  that owns their table, one answer per request, where a seated player's sockets are;
* :class:`~server.lobby.takeover.Takeover` (``takeover.py``): tables gained from dead or
  draining nodes and lost to others, dead nodes, the drain, a lost store (the loops that
  decide when are ``ownership.py``'s);
* :class:`~server.lobby.creation.TableCreation` (``creation.py``): opening tables (by a
  player, by matchmaking, by a tournament) and the creation limits;
  :class:`~server.lobby.lifecycle.TableLife` (``lifecycle.py``): what follows a table's
  status change, end or loss; :class:`~server.lobby.listing.Listing`: the lobby index;
* :class:`~server.lobby.chat.LobbyChat` (``chat.py``) and
  :class:`~server.lobby.mutes.ChatMutes` (``mutes.py``): a socket's chat checks and mutes.

Each :class:`~server.lobby.table.Table` is given a :class:`~server.lobby.table_deps.TableDeps`
(the ports and stores it uses) and its host (``TableLife``).

Messages from this node's sockets come in through :meth:`Lobby.on_message` (with the
socket's :class:`Actor`, made by ``server/net``), messages from other nodes (the typed
structs of ``server/protocol/node_messages.py``) through :meth:`Lobby.on_node_messages`;
each is one short dispatch.

Parts built after the lobby hear of its events through the :class:`LobbyListeners` given at
construction (``listeners.py``).

For matchmaking: ``Lobby.start_rated_game`` (:meth:`TableCreation.start_rated_game`) seats
two players at a new Competitive table (a single game or a match to n; with
``mode=TableMode.BOOSTED`` a Boosted one), and :meth:`Lobby.push_to_player` sends any message
to a player wherever they are connected.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Mapping
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
from server.lobby.lifecycle import TableLife
from server.lobby.listeners import LobbyListeners
from server.lobby.listing import Listing
from server.lobby.mutes import ChatMutes
from server.lobby.pair_limit import PairLimit
from server.lobby.ports import Clock, Outbox
from server.lobby.refusals import error_reply, store_away
from server.lobby.registry import TableRegistry
from server.lobby.requests import ForwardedRequests
from server.lobby.summons import Summons
from server.lobby.table import Table
from server.lobby.table_deps import TableDeps
from server.lobby.takeover import Takeover
from server.lobby.tasks import Tasks
from server.lobby.watches import SocketWatches
from server.metrics import Metrics
from server.protocol import node_messages as ops
from server.protocol.codec import Outgoing
from server.protocol.ids import BOT_PREFIX
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
    Unmute,
    Unwatch,
    Watch,
)
from server.protocol.node_messages import Actor, NodeMessage
from server.rules import DiceSource
from server.store.games import GameRecords
from server.store.persistence import Persistence
from server.store.record_budget import RecordBudget
from server.tables.model import TableStatus

__all__ = ["Actor", "Lobby", "LobbyListeners", "store_away"]

log = logging.getLogger(__name__)

_WRITES = (ops.Deliver, ops.Push, ops.Chat)
"""Node messages whose handling only writes to sockets here (no ``await``)."""

PONG = Outgoing({"type": "pong", "ref": None})
"""The answer to a ``ping`` without ``id`` (the clients' silence watch, PROTOCOL.md §1): one
message for every socket, each format encoded once."""


class Lobby:
    """The tables of one node and the commands for them. See the module docstring.

    ``outbox``: the sockets on this node (``server/net``'s hub); ``clock``: where time is
    read and the tables' timers run."""

    def __init__(
        self,
        settings: Settings,
        persistence: Persistence,
        bus: NodeBus,
        outbox: Outbox,
        ratings: RatingStore,
        dice_factory: Callable[[], DiceSource],
        clock: Clock,
        metrics: Metrics | None = None,
        listeners: LobbyListeners | None = None,
    ) -> None:
        self.settings = settings
        self.metrics = metrics = metrics if metrics is not None else Metrics(enabled=False)
        self.persistence = persistence
        self.bus = bus
        self.outbox = outbox
        self.clock = clock
        self.ratings = ratings
        self.records = GameRecords(persistence.redis, persistence.keys, settings,
                                   now=clock.now)
        self.record_budget = RecordBudget(persistence.redis, persistence.keys, settings)
        self.node_id = settings.node_id
        self.listeners = listeners = listeners if listeners is not None else LobbyListeners()
        self.tasks = tasks = Tasks()
        self.registry = registry = TableRegistry(self.node_id, metrics)
        self.liveness = peers = NodeLiveness(self.node_id, settings.lease_ttl,
                                             settings.lease_renew, bus, now=clock.now)
        self.mutes = mutes = ChatMutes()
        self.requests = requests = ForwardedRequests(settings, outbox, clock, peers)
        bus.on_unheard = requests.unheard  # a forwarded request nobody heard
        self.delivery = delivery = Delivery(
            settings, outbox, bus, persistence=persistence, tasks=tasks, metrics=metrics,
            mutes=mutes, requests=requests)
        pair_limit = PairLimit(settings, ratings, clock)
        self.summons = summons = Summons(settings, bus, clock)
        self.table_deps = deps = TableDeps(
            settings=settings, persistence=persistence, delivery=delivery, clock=clock,
            tasks=tasks, metrics=metrics, records=self.records,
            record_budget=self.record_budget, ratings=ratings, pair_limit=pair_limit,
            peers=peers, dice_factory=dice_factory, summons=summons)
        self.listing = listing = Listing(persistence, registry, settings.list_limit)
        self.life = life = TableLife(
            settings, registry=registry, listing=listing, requests=requests,
            persistence=persistence, clock=clock, tasks=tasks, listeners=listeners)
        self.forwarding = forwarding = Forwarding(
            settings, registry=registry, bus=bus, persistence=persistence, peers=peers,
            requests=requests, delivery=delivery, metrics=metrics, summons=summons)
        self.takeover = Takeover(
            deps, registry=registry, life=life, listing=listing, forwarding=forwarding,
            requests=requests, outbox=outbox, bus=bus, peers=peers, tasks=tasks,
            listeners=listeners)
        bus.on_resubscribed = self.takeover.bus_back  # node messages may have been lost
        self.creation = TableCreation(deps, registry=registry, life=life, listing=listing,
                                      pair_limit=pair_limit)
        # Seat two players at a new rated (or Boosted, or tournament) table and start play.
        self.start_rated_game = self.creation.start_rated_game
        self.chat = LobbyChat(settings, records=self.records, mutes=mutes, outbox=outbox,
                              bus=bus, clock=clock, metrics=metrics)
        self.watches = SocketWatches(settings.socket_watch_max, registry,
                                     persistence.leases, outbox, clock)
        # Players whose last socket here closed while Redis was away: their presence and
        # their table are told once it is back (store_health).
        self._left_away: set[str] = set()

    @property
    def tables(self) -> Mapping[str, Table]:
        """The tables served here, by id (read only: the registry writes it)."""
        return self.registry.tables

    @property
    def closing(self) -> bool:
        """The node is stopping or draining: no table is taken on any more."""
        return self.registry.closing

    @closing.setter
    def closing(self, value: bool) -> None:
        self.registry.closing = value

    def spawn(self, coro: Any) -> None:
        """Run ``coro`` in the background; shutdown waits for it (settlements!)."""
        self.tasks.spawn(coro)

    async def drain(self, timeout: float) -> None:
        """Stop every table timer, then wait (up to ``timeout``) for in-flight settlements."""
        self.closing = True
        for table in self.tables.values():
            table.shutdown()
        self.life.cancel_all()
        for task in await self.tasks.wait(timeout):
            log.error("shutdown: a settlement did not finish in %.1fs", timeout)
            task.cancel()

    def online_players(self) -> int:
        """Authenticated players (computer players left out) with a socket on this node."""
        return sum(1 for player in self.outbox.players() if not player.startswith(BOT_PREFIX))

    # --- for matchmaking, tournaments and the computer players -------------------------------

    async def push_to_player(self, player: str, message: Mapping[str, Any]) -> bool:
        """Send ``message`` (a dict with a ``type``) to every socket of ``player``, on any
        node. Returns False when the player has no socket anywhere (nothing is kept)."""
        return await self.delivery.push_to_player(player, message)


    async def cancel_tournament_table(self, table_id: str) -> bool:
        """See :meth:`server.lobby.forwarding.Forwarding.cancel_tournament_table`."""
        return await self.forwarding.cancel_tournament_table(table_id)

    def table_status(self, table_id: str) -> TableStatus | None:
        """The status of ``table_id`` when it is served here, else None."""
        table = self.registry.tables.get(table_id)
        return None if table is None else table.status

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

    async def chat_state(self, player: str) -> frozenset[str]:
        """Read ``player``'s chat mutes as their socket opens here; the players they muted
        (an outage reads as none)."""
        try:
            muted, until = await self.records.chat_state(player)
        except (RedisError, OSError) as exc:
            log.warning("chat state of %s not read: %s", player, exc)
            muted, until = [], 0.0
        self.mutes.load(player, muted, until)
        return self.mutes.muted_by(player)

    async def on_connect(self, actor: Actor, *, first_here: bool) -> None:
        """A socket authenticated (``first_here``: its player's only socket on this node):
        presence, resume a seated game, deliver the inbox."""
        player = actor.player
        try:
            if first_here:
                await self.persistence.presence_join(player, self.node_id, actor.address)
            else:
                await self.persistence.seen_from(player, actor.address)
            seat = await self.persistence.seat_of(player)
            if seat is not None:
                await self.forwarding.attach(actor, seat)
            await self.delivery.deliver_inbox(actor.conn, player)
        except (RedisError, OSError) as exc:
            log.warning("on_connect for %s: %s", player, exc)

    async def on_disconnect(self, conn_id: str, player: str | None, *, remaining: int,
                            watched: Iterable[str]) -> None:
        """A socket closed (``server/net`` forgot it already: ``remaining`` sockets of its
        player are left here, ``watched`` the tables it watched): stop its watching; if it
        was the player's last one here, tell the player's table (the grace period starts
        there)."""
        self.watches.forget(conn_id)
        self.delivery.forget_arrived(conn_id)
        for table_id in list(watched):
            self.forwarding.unwatch(table_id, conn_id)
        if player is None or remaining > 0:
            return
        self.mutes.forget(player)
        try:
            await self._left(player)
        except (RedisError, OSError) as exc:
            log.warning("on_disconnect for %s: %s (told once Redis is back)", player, exc)
            self._left_away.add(player)

    # --- sockets handed between sibling workers (server/net/socket_moves.py) -------------

    def may_hand_over(self, conn_id: str, to: str) -> bool:
        """Whether this node's socket ``conn_id`` may go to its sibling ``to``: it watches
        only tables ``to`` owns and no request of it waits for another node's answer.
        Nothing moves while the node stops. (A socket summoned to watch while its player
        is seated anywhere stays too: :meth:`has_seat`, asked by the hand-over.)"""
        if self.closing:
            return False
        owner = self.registry.owner
        if any(owner(table_id) != to for table_id in self.outbox.watching(conn_id)):
            return False
        return not self.requests.waiting_elsewhere(conn_id, to)

    async def has_seat(self, player: str) -> bool:
        """Whether ``player`` is seated at a table anywhere (an outage reads as seated)."""
        try:
            return await self.persistence.seat_of(player) is not None
        except (RedisError, OSError):
            return True

    def may_arrive(self, player: str, table_id: str, *, seated: bool) -> bool:
        """Whether a sibling's socket of ``player``, summoned for ``table_id`` (to play
        there, ``seated``), may come here: a seated player's table is still here, with the
        player at it (else the socket would leave its seat behind)."""
        if self.closing:
            return False
        if not seated:
            return True
        table = self.registry.get(table_id)
        return table is not None and table.machine.side_of(player) is not None

    def summon_again(self, node: str, conn_id: str) -> None:
        """A socket of sibling ``node`` was refused here (the link is not up yet, say): it
        may be summoned again at its next command."""
        self.summons.forget(node, conn_id)

    def handed_over(self, conn_id: str) -> None:
        """This node's socket ``conn_id`` went to a sibling: its requests waiting for that
        sibling's answer are answered there."""
        self.requests.forget_conn(conn_id)

    def socket_arriving(self, old: Actor, new: Actor, table_id: str, watching: list[str], *,
                        last_there: bool) -> None:
        """A sibling's socket ``old`` is about to be ``new`` here: what is addressed to the
        old place is written here; the player's seat at ``table_id`` (when it is here)
        counts this node, without ``resume`` (the socket has every event), and no longer the
        old one when it was the player's ``last_there``; the tables here that it watches
        know it by its new id."""
        self.delivery.arrived[(old.node, old.conn)] = new.conn
        table = self.registry.get(table_id)
        if table is not None:
            table.arrive(old, new, last_there=last_there)
        for watched in watching:
            table = self.registry.get(watched)
            if table is not None:
                table.rewatch(old, new)

    async def socket_arrived(self, actor: Actor, *, first_here: bool) -> None:
        """A socket handed over from a sibling is here: its player's presence here and
        chat mutes (as :meth:`on_connect`, without resuming a game or delivering the
        inbox: the socket had them where it was)."""
        try:
            if first_here:
                await self.persistence.presence_join(actor.player, self.node_id,
                                                     actor.address)
        except (RedisError, OSError) as exc:
            log.warning("a socket of %s handed over here: presence not written: %s",
                        actor.player, exc)
        await self.chat_state(actor.player)

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
                await self._left(player, detach=not self.outbox.sockets_of(player))
            except (RedisError, OSError) as exc:
                log.warning("on_disconnect for %s: %s (told once Redis is back)", player, exc)
                self._left_away.add(player)

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

    # --- messages from this node's sockets ---------------------------------------------------

    async def on_message(self, actor: Actor, msg: Message) -> None:
        """Handle one accepted message of an authenticated socket; errors become ``error``."""
        table_id = msg.table if isinstance(msg, TableMessage) else None
        try:
            await self._dispatch(actor, msg)
        except Exception as exc:
            self.outbox.push_conn_id(actor.conn, Outgoing(error_reply(
                exc, msg.ref, table_id, doing=f"handling {msg.TYPE} from {actor.player}",
                metrics=self.metrics)))

    async def _dispatch(self, actor: Actor, msg: Message) -> None:
        outbox = self.outbox
        if isinstance(msg, Ping):
            outbox.push_conn_id(actor.conn, PONG if msg.ref is None
                                else Outgoing({"type": "pong", "ref": msg.ref}))
            return
        if not self.persistence.redis_up:
            # Nothing a game needs could be stored now: refuse instead of losing it.
            raise store_away()
        route = self.forwarding.route
        match msg:
            case Chat():
                await route(actor, self.chat.checked(actor, msg))
            case Report():
                await route(actor, self.chat.checked_report(actor, msg))
            case Mute() | Unmute():
                await self.chat.mute(actor, msg)
            case Watch():
                await self.watches.make_room(actor.conn, msg.table)
                await route(actor, msg)
                self.watches.watched(actor.conn, msg.table)  # only once the table took it
            case Unwatch():
                self.watches.unwatched(actor.conn, msg.table)
                await route(actor, msg)
            case TableMessage():
                await route(actor, msg)
            case ListTables():
                outbox.push_conn_id(actor.conn, Outgoing(await self.listing.page(msg)))
            case CreateTable():
                await self.creation.create_table(actor, msg)
            case AckEvents():
                # Removed from the inbox; the socket remembers only the ids it was written
                # (server/net keeps them), never those a client names.
                await self.persistence.inbox_remove(actor.player, list(msg.events))
                outbox.push_conn_id(actor.conn, Outgoing({"type": "ack", "ref": msg.ref}))
            case Hello():  # pragma: no cover - the socket handler takes it
                pass

    # --- messages from other nodes (server/protocol/node_messages.py) -----------------------

    async def on_node_messages(self, messages: list[NodeMessage]) -> None:
        """Messages from other nodes, decoded and checked by the bus, in order. The frames
        that a run of ``deliver``, ``push`` and ``chat`` writes to sockets here leave in one
        write per socket; a message that fails is logged and the next one handled."""
        outbox = self.outbox
        delivery = self.delivery
        i, end = 0, len(messages)
        while i < end:
            if type(messages[i]) not in _WRITES:
                await self._on_node_message(messages[i])
                i += 1
                continue
            outbox.begin_gather()
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
                outbox.end_gather()

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
                    self.outbox.end_token(digest, message.reason)
            case ops.Muted():
                if self.outbox.sockets_of(message.player):
                    self.mutes.set_muted(message.player, message.muted)
            case ops.ChatMute():
                if self.outbox.sockets_of(message.player):
                    self.mutes.set_chat_muted(message.player, message.until)
            case ops.TakenOver():
                await self.takeover.taken_over_elsewhere(message)
            case ops.Summon() | ops.MoveAsk() | ops.MoveReady() | ops.MoveCancel():
                for mover in self.listeners.socket_moves:
                    await mover(message)
            case ops.Released():
                if message.node != self.node_id:  # broadcasts come back to their sender too
                    for listener in self.listeners.released:
                        listener(message.node)
