"""The lobby: tables owned by this node, routing to tables on other nodes, and player delivery.

Routing. Every table has one owner node, the holder of its lease (``{t:T}:lease`` in Redis,
see ``ownership.py``). A command from a socket on this node goes straight to the table when
this node owns it, otherwise it is sent to the owner's channel (``bus.py``) as
``{"op": "cmd", "actor": ..., "msg": ...}``. A request (with an ``id``) gets exactly one
answer: while the owner is dead and nobody has taken the table over yet it is answered here
with ``unavailable`` and ``retry_after``; one forwarded to an owner that dies before it answers
is answered so when the death is seen (a late answer from that owner is then dropped); a node
that no longer holds the table passes the command on to the new owner. The owner's replies
and events come back as ``{"op": "deliver", ...}`` to the node holding the socket. A seated
player's table knows on which nodes the player has sockets (``attach`` / ``detach`` ops, sent
when a player's first socket on a node opens and its last one closes), so events go only
where they are needed; on a single node all of this stays in-process.

Node ops: ``cmd`` (actor, msg, hops?), ``deliver`` (player or conns, frame), ``attach``
(actor), ``detach`` (player, node), ``unwatch`` (table, node, conn), ``push`` (player, frame),
``revoke`` (tokens, reason), ``reattach`` (a peer had taken this node for dead: attach its
sockets' seated players again), ``chat`` (players, conns, frame: a table's chat message, left
out for sockets whose player muted its author), ``cancel_table`` (table: its tournament was
cancelled); on the broadcast channel ``muted`` (player, muted: whom a player mutes now),
``chat_mute`` (player, until: an operator's mute), ``taken_over`` (table, node, players: a node
took a table over) and ``released`` (node: a draining node handed its tables over). A message
that does not fit its op is logged and dropped.

Ownership: a table made here gets its first lease (:meth:`Lobby._claim_new`); a table claimed
from a dead node is rebuilt or cleaned up by :meth:`Lobby.restore_table`; a dead node's seats,
watchers, forwarded requests and tickets are cleaned up by :meth:`Lobby.node_died`; a drain
gives every table away (:meth:`Lobby.hand_over`).

For matchmaking: :meth:`Lobby.start_rated_game` seats two players at a new Competitive table
(a single game or a match to n), :meth:`Lobby.start_boosted_game` at a new Boosted one, and
:meth:`Lobby.push_to_player` sends any message to a player wherever they are connected;
:attr:`Lobby.on_seated` is told whenever players sit down (their matchmaking tickets go).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from redis.exceptions import RedisError

from rating_plugin.store import RatingStore
from server.cluster.bus import NodeBus
from server.config import Settings
from server.lobby.refusals import error_reply
from server.lobby.table import Table, TableStatus
from server.matchmaking.policy import network_key
from server.metrics import Metrics
from server.net.connection import Connection, Hub
from server.protocol.chat import ChatRate, clean_text
from server.protocol.codec import Outgoing
from server.protocol.errors import (
    UNAVAILABLE_MESSAGE,
    ErrorCode,
    ProtocolError,
    error_message,
    retry_later,
)
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
    parse_message,
)
from server.ratelimit import RateLimiter
from server.rules import DiceSource
from server.store.accounts import BOT_PREFIX, GUEST_PREFIX, Identity, is_bot_id
from server.store.games import GameRecords
from server.store.persistence import FENCED_OUT, Persistence
from server.store.retry import REDIS_AWAY, Backoff, retry_redis
from server.tables.ratings import RatedPlayer, RatingPlan, counts_for_pair_limit, plan_rating

log = logging.getLogger(__name__)

OWNER_CACHE_MAX = 10_000
FORWARDED_MAX = 100_000
"""Requests forwarded to other nodes and not answered yet that one node tracks at most."""
MAX_HOPS = 2
"""Times a command is passed on between nodes after the first (to a table's new owner)."""
ANSWERED_MAX = 10_000
"""(socket, request id) pairs answered ``unavailable`` on the owner's behalf, remembered so a
late answer from that owner is dropped (one answer per request)."""
INBOX_EVENTS = frozenset({"rating", "boosted", "tournament_pairing", "tournament_table",
                           "tournament_result", "tournament_over"})
"""Events kept in a player's inbox until delivered once (they carry an ``event_id``): the
rating events and the tournament events."""


@dataclass(frozen=True, slots=True)
class Actor:
    """Who sent a command, and where to answer: a socket ``conn`` on node ``node``."""

    player: str
    name: str
    is_guest: bool
    address: str
    node: str
    conn: str
    lean: bool = False  # the socket reads change-only table events (protocol 2)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Actor:
        return cls(
            player=str(data["player"]), name=str(data["name"]),
            is_guest=bool(data["is_guest"]), address=str(data["address"]),
            node=str(data["node"]), conn=str(data["conn"]),
            lean=bool(data.get("lean", False)),
        )


def message_to_dict(msg: Message) -> dict[str, Any]:
    """A parsed message back in wire form (for forwarding to the owner node)."""
    out: dict[str, Any] = {"type": msg.TYPE}
    for name in msg.__struct_fields__:
        value = getattr(msg, name)
        if value is None:
            continue
        out["id" if name == "ref" else name] = str(value) if isinstance(value, str) else value
    return out


class Lobby:
    def __init__(
        self,
        settings: Settings,
        persistence: Persistence,
        bus: NodeBus,
        hub: Hub,
        ratings: RatingStore,
        dice_factory: Callable[[], DiceSource],
        metrics: Metrics | None = None,
    ) -> None:
        self.settings = settings
        self.metrics = metrics if metrics is not None else Metrics(enabled=False)
        # Table creation limits (hardening): a rate per player and per address, and open
        # tables per address on this node.
        on = settings.limits
        self._create_limit = RateLimiter(settings.table_create_rate if on else 0.0,
                                         settings.table_create_burst)
        self._open_by_address: dict[str, int] = {}
        self._creating = 0  # create_table requests past their checks, not yet a table
        self.persistence = persistence
        self.bus = bus
        self.hub = hub
        self.ratings = ratings
        self.records = GameRecords(persistence.redis, persistence.keys, settings)
        self.chat_rate = ChatRate(settings.chat_rate, settings.chat_window)
        self.node_id = settings.node_id
        self.tables: dict[str, Table] = {}
        self.dice_factory = dice_factory
        self._owners: dict[str, str] = {}
        # Tables that start_rated_game has announced but not yet seated: commands for them
        # wait for the seating instead of finding no table.
        self._starting: dict[str, asyncio.Event] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._timers: dict[str, asyncio.TimerHandle] = {}  # table id -> its forget timer
        self.closing = False
        # Called (in the background) with the players who just sat down at a table.
        self.on_seated: Callable[[list[str]], Coroutine[Any, Any, None]] | None = None
        # Peers (node id -> epoch seconds until which it counts as alive), kept by the
        # ownership loop; nodes seen dead (cleaned up once), and who is told of a death.
        self.peers: dict[str, float] = {}
        self.dead_nodes: set[str] = set()
        self.on_node_dead: list[Callable[[str], Awaitable[None]]] = []
        # Requests forwarded to another node that wait for its answer:
        # (conn id, request id) -> (owner node, table id, loop time sent).
        self._forwarded: dict[tuple[str, Any], tuple[str, str, float]] = {}
        self._answered: OrderedDict[tuple[str, Any], None] = OrderedDict()
        # A peer (the node id) handed tables over.
        self.on_released: Callable[[str], None] | None = None
        # Called with each game table this node rebuilt after a takeover (the computer
        # opponents resume a bot's seat).
        self.on_restored: Callable[[Table], None] | None = None
        # Called with the id of each table this node lost to another (fenced, handed over).
        self.on_table_lost: Callable[[str], None] | None = None
        persistence.on_stored = self._table_stored
        persistence.on_fenced = self._table_fenced
        persistence.on_store_lost = self.store_lost

    # --- tasks -----------------------------------------------------------------------------

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        """Run ``coro`` in the background; shutdown waits for it (settlements!)."""
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)
        return task

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("background task failed", exc_info=task.exception())

    async def drain(self, timeout: float) -> None:
        """Stop every table timer, then wait (up to ``timeout``) for in-flight settlements."""
        self.closing = True
        for table in self.tables.values():
            table.shutdown()
        for handle in self._timers.values():
            handle.cancel()
        self._timers.clear()
        if self._tasks:
            _done, pending = await asyncio.wait(set(self._tasks), timeout=timeout)
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

    # --- delivery ------------------------------------------------------------------------

    def deliver_player(self, player: str, nodes: Iterable[str], out: Outgoing) -> None:
        """Send ``out`` to every socket of ``player`` on ``nodes``."""
        for node in nodes:
            if node == self.node_id:
                self.hub.push_player(player, out)
            else:
                self.bus.send(node, {"op": "deliver", "player": player, "frame": out.obj,
                                     "lean": out.lean})

    def deliver_conns(self, conns: Iterable[tuple[str, str]], out: Outgoing) -> None:
        """Send ``out`` to the sockets ``(node, conn id)``; one bus message per other node."""
        remote: dict[str, list[str]] = {}
        for node, conn in conns:
            if node == self.node_id:
                self.hub.push_conn_id(conn, out)
            else:
                remote.setdefault(node, []).append(conn)
        for node, ids in remote.items():
            self.bus.send(node, {"op": "deliver", "conns": ids, "frame": out.obj,
                                 "lean": out.lean})

    def deliver_chat(self, players: Mapping[str, list[str]], conns: Mapping[str, list[str]],
                     message: dict[str, Any]) -> None:
        """Send a chat message to ``players`` and the sockets ``conns`` (each by node); each
        node leaves out the sockets whose player muted its author."""
        out = Outgoing(message)
        for node in {*players, *conns}:
            if node == self.node_id:
                self.hub.push_chat(players.get(node, ()), conns.get(node, ()), out)
            else:
                self.bus.send(node, {"op": "chat", "players": players.get(node, []),
                                     "conns": conns.get(node, []), "frame": message})

    def _without_muted(self, conn_id: str, message: dict[str, Any]) -> dict[str, Any]:
        """``message`` (a ``resume`` or ``watching`` with ``chat``) for the socket
        ``conn_id``: without the chat of players its player muted."""
        conn = self.hub.by_id.get(conn_id)
        chat = message.get("chat")
        if conn is None or not conn.muted or not isinstance(chat, list):
            return message
        return {**message, "chat": [m for m in chat if m.get("from") not in conn.muted]}

    def reply(self, actor: Actor, message: dict[str, Any]) -> None:
        """Answer the socket a command came from."""
        if actor.node == self.node_id:
            if message.get("type") == "sync":
                self.charge_sync(actor.conn, message)
            if "chat" in message:
                message = self._without_muted(actor.conn, message)
            self.hub.push_conn_id(actor.conn, Outgoing(message))
        else:
            self.bus.send(actor.node, {"op": "deliver", "conns": [actor.conn],
                                       "frame": message})

    def charge_sync(self, conn_id: str, answer: Mapping[str, Any]) -> None:
        """A ``sync`` answer costs the socket it goes to one message of its rate limit per
        ``sync_events_per_message`` events it carries (beyond the request itself), so
        replaying a long log is paid for like sending that many messages."""
        conn = self.hub.by_id.get(conn_id)
        events = answer.get("events")
        if conn is None or not isinstance(events, list) or not events:
            return
        conn.session.charge(len(events) / self.settings.sync_events_per_message,
                            asyncio.get_running_loop().time())

    def deliver_rating(self, player: str, nodes: set[str], event: dict[str, Any]) -> None:
        """Push a rating event (already in the player's inbox) where the player is; the node
        that writes it to a socket removes it from the inbox (delivered once)."""
        if nodes:
            for node in nodes:
                if node == self.node_id:
                    self.push_rating_here(player, event)
                else:
                    self.bus.send(node, {"op": "deliver", "player": player, "frame": event})
        else:
            # Not seated-and-connected as far as the table knows: try presence.
            self.spawn(self.push_to_player(player, event))

    def push_rating_here(self, player: str, event: dict[str, Any]) -> bool:
        """Write a rating event to the player's sockets on this node that do not have it
        yet; when one took it, remove it from the inbox (in the background)."""
        event_id = event.get("event_id")
        conns = self.hub.by_player.get(player)
        if not conns:
            return False
        out = Outgoing(event)
        written = False
        for conn in list(conns):
            if not isinstance(event_id, str):
                self.hub.push(conn, out)
                continue
            if event_id in conn.delivered or not conn.is_writable():
                continue
            conn.delivered.add(event_id)
            self.hub.push(conn, out)
            written = True
        if written and isinstance(event_id, str):
            self.metrics.rating_events.labels("live").inc()
            self.spawn(self._remove_from_inbox(player, [event_id]))
        return written

    async def _remove_from_inbox(self, player: str, ids: list[str]) -> None:
        # Redis away: tried again for about a minute, then left there.
        with contextlib.suppress(*REDIS_AWAY):
            await retry_redis(lambda: self.persistence.inbox_remove(player, ids),
                              Backoff(attempts=60))

    # --- matchmaking API ---------------------------------------------------------------------

    async def push_to_player(self, player: str, message: Mapping[str, Any]) -> bool:
        """Send ``message`` (a dict with a ``type``) to every socket of ``player``, on any
        node. Returns False when the player has no socket anywhere (nothing is kept)."""
        frame = dict(message)
        if frame.get("type") in INBOX_EVENTS:
            delivered = self.push_rating_here(player, frame)
        else:
            delivered = self.hub.push_player(player, Outgoing(frame))
        try:
            nodes, _ = await self.persistence.presence(player)
        except (RedisError, OSError):
            nodes = []
        for node in nodes:
            if node != self.node_id:
                self.bus.send(node, {"op": "push", "player": player, "frame": frame})
                delivered = True
        await self.flush()
        return delivered

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
    ) -> str:
        """Seat ``first`` (side 0) and ``second`` (side 1) at a new Competitive table owned by
        this node and start play: a single game (Table42) when ``match_length`` is None, else a
        rated match to ``match_length`` points (FIBS). Both must hold no other seat.
        ``mode=TableMode.BOOSTED`` makes it a Boosted table instead (see
        :meth:`start_boosted_game`); ``mode=TableMode.TOURNAMENT`` with ``tournament_id`` a
        tournament table (never rated). ``announce(table_id, plan)`` is awaited once both
        seats are held and the rating decided (``plan``, as ``game_start`` will carry it: a
        game the pair limit refuses is unrated with ``pair_limit``), before anyone is seated,
        so what it sends arrives before ``seated``.

        ``names`` default to the player ids; ``addresses`` default to the players' latest
        connection addresses (same address -> unrated); a guest id makes the game unrated
        (``game_start`` says why). Returns the table id; both players
        receive ``seated`` and ``game_start`` events on every socket they have.
        Raises ProtocolError: ``same_player``, ``bad_field`` (match_length),
        ``already_seated`` (``field`` names the player's slot: ``first``/``second``).
        """
        if first == second:
            raise ProtocolError(ErrorCode.SAME_PLAYER, "a player cannot play themselves",
                                field="second")
        if mode not in (TableMode.COMPETITIVE, TableMode.BOOSTED, TableMode.TOURNAMENT):
            raise ProtocolError(ErrorCode.BAD_FIELD,
                                "mode must be competitive, boosted or tournament", field="mode")
        if (mode is TableMode.TOURNAMENT) != (tournament_id is not None):
            raise ProtocolError(ErrorCode.BAD_FIELD,
                                "a tournament table (and only one) needs a tournament_id",
                                field="tournament_id")
        length = 0 if match_length is None else match_length
        if not 0 <= length <= self.settings.max_match_length or match_length == 0:
            raise ProtocolError(
                ErrorCode.BAD_FIELD,
                f"match_length must be None or 1..{self.settings.max_match_length}",
                field="match_length",
            )
        table_id = self._new_table_id()
        taken: list[str] = []
        for slot, player in (("first", first), ("second", second)):
            held = await self.persistence.take_seat(player, table_id)
            if held is not None:
                for p in taken:
                    await self.persistence.release_seat(p, table_id)
                raise ProtocolError(ErrorCode.ALREADY_SEATED,
                                    f"{player} already holds a seat at table {held}",
                                    field=slot)
            taken.append(player)
        seats: list[tuple[Actor, set[str]]] = []
        for i, player in enumerate((first, second)):
            nodes, address = await self.persistence.presence(player)
            if addresses is not None:
                address = addresses[i]
            name = names[i] if names is not None else player
            # A guest id can only come from a guest token; such a game is never rated.
            is_guest = player.startswith(GUEST_PREFIX)
            actor = Actor(player, name, is_guest, address or f"unknown-{player}", self.node_id,
                          "")
            seats.append((actor, set(nodes)))
        # The table is known here and in Redis before anyone hears of it: a player who syncs
        # the moment ``announce`` reaches them waits for the seating (see _started) instead of
        # being told there is no such table.
        ready = self._starting[table_id] = asyncio.Event()
        try:
            try:
                await self._claim_new(table_id)
                self._owners[table_id] = self.node_id
                first_seat, second_seat = (actor for actor, _ in seats)
                pair = (RatedPlayer(first_seat.player, first_seat.is_guest, first_seat.address,
                                    is_bot_id(first_seat.player)),
                        RatedPlayer(second_seat.player, second_seat.is_guest,
                                    second_seat.address, is_bot_id(second_seat.player)))
                limited = await self.pair_limited(table_id, mode, length, pair)
                plan = plan_rating(mode, length, pair, pair_limited=limited)
                if announce is not None:
                    await announce(table_id, plan)
            except BaseException:
                # Nobody will sit at this table: free both seats, so that neither player is
                # held "already seated" at a table that does not exist.
                self._owners.pop(table_id, None)
                for player in (first, second):
                    with contextlib.suppress(RedisError, OSError):
                        await self.persistence.release_seat(player, table_id)
                with contextlib.suppress(RedisError, OSError):
                    await self.persistence.release(table_id, done=True)
                raise
            table = self._new_table(table_id, mode, length, tournament_id)
            table.seat_pair(seats, pair_limited=limited)
        finally:
            del self._starting[table_id]
            ready.set()
        await self._publish_listing(table)
        await self.flush()
        return table_id

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
                await self._send_attach(self.actor_of(conn), seat)
            inbox = await self.persistence.inbox(player)
            # Every id read goes in ``ids``, also one a live push already wrote to this
            # socket: otherwise the count would fall short and the positional ``ack_inbox``
            # below could drop an entry written after the read (never delivered).
            ids: list[str] = []
            pushed = 0
            for event in inbox:
                event_id = event.get("event_id")
                if isinstance(event_id, str):
                    ids.append(event_id)
                    if event_id in conn.delivered:
                        continue
                    conn.delivered.add(event_id)
                    pushed += 1
                self.hub.push(conn, Outgoing(event))
            if inbox:
                await self.flush()
                if not conn.closed:
                    self.metrics.rating_events.labels("inbox").inc(pushed)
                    if len(ids) == len(inbox):
                        await self.persistence.inbox_remove(player, ids)
                    else:  # entries written before events had ids
                        await self.persistence.ack_inbox(player, len(inbox))
        except (RedisError, OSError) as exc:
            log.warning("on_connect for %s: %s", player, exc)
        await self.flush()

    async def on_disconnect(self, conn: Connection) -> None:
        """A socket closed: stop its watching; if it was the player's last one here, tell the
        player's table (the grace period starts there)."""
        remaining = self.hub.remove(conn)
        player = conn.player
        for table_id in list(conn.watching):
            await self._route_unwatch(table_id, conn.id)
        if player is None or remaining > 0:
            return
        try:
            await self.persistence.presence_leave(player, self.node_id)
            if self.closing:
                return
            seat = await self.persistence.seat_of(player)
            if seat is None:
                return
            table = self.tables.get(seat)
            if table is not None:
                table.detach(player, self.node_id)
            else:
                owner = await self._owner(seat)
                if owner is not None and owner != self.node_id:
                    self.bus.send(owner, {"op": "detach", "table": seat, "player": player,
                                          "node": self.node_id})
        except (RedisError, OSError) as exc:
            log.warning("on_disconnect for %s: %s", player, exc)
        await self.flush()

    async def _send_attach(self, actor: Actor, table_id: str) -> None:
        table = await self._started(table_id)
        if table is not None:
            if not table.attach(actor):
                await self.persistence.release_seat(actor.player, table_id)
            return
        try:
            owner = await self._owner_to_ask(table_id)
        except ProtocolError as exc:
            if exc.code == ErrorCode.NO_SUCH_TABLE:
                # The table is gone (it ended without us, or it was cleaned up after its
                # node): free the seat.
                await self.persistence.release_seat(actor.player, table_id)
            # Else its owner died and the table waits for another node to take it over:
            # the seat stays, and the new owner attaches the player (``taken_over``).
            return
        self.bus.send(owner, {"op": "attach", "table": table_id, "actor": actor.to_dict()})

    async def _route_unwatch(self, table_id: str, conn_id: str) -> None:
        table = self.tables.get(table_id)
        if table is not None:
            table.unwatch(self.node_id, conn_id)
            return
        owner = self._owners.get(table_id)
        if owner is not None and owner != self.node_id:
            self.bus.send(owner, {"op": "unwatch", "table": table_id, "node": self.node_id,
                                  "conn": conn_id})

    # --- messages from this node's sockets ---------------------------------------------------

    async def on_message(self, conn: Connection, msg: Message) -> None:
        """Handle one accepted message of an authenticated socket; errors become ``error``."""
        table_id = msg.table if isinstance(msg, TableMessage) else None
        try:
            if isinstance(msg, Ping):
                self.hub.push(conn, Outgoing({"type": "pong", "ref": msg.ref}))
            elif not self.persistence.redis_up:
                # Nothing a game needs could be stored now: refuse instead of losing it.
                raise ProtocolError(ErrorCode.UNAVAILABLE, UNAVAILABLE_MESSAGE)
            elif isinstance(msg, Chat):
                await self._route(self.actor_of(conn), self._chat_checked(conn, msg))
            elif isinstance(msg, Report):
                self._chat_rate(conn)
                await self._route(self.actor_of(conn), msg)
            elif isinstance(msg, Mute | Unmute):
                await self._mute(conn, msg)
            elif isinstance(msg, TableMessage):
                actor = self.actor_of(conn)
                if isinstance(msg, Watch):
                    conn.watching.add(msg.table)
                elif isinstance(msg, Unwatch):
                    conn.watching.discard(msg.table)
                await self._route(actor, msg)
            elif isinstance(msg, ListTables):
                await self._list_tables(conn, msg)
            elif isinstance(msg, CreateTable):
                await self._create_table(self.actor_of(conn), msg)
            elif isinstance(msg, AckEvents):
                assert conn.player is not None
                await self.persistence.inbox_remove(conn.player, list(msg.events))
                conn.delivered.update(msg.events)
                self.hub.push(conn, Outgoing({"type": "ack", "ref": msg.ref}))
            elif isinstance(msg, Hello):  # pragma: no cover - the socket handler takes it
                pass
        except Exception as exc:
            self.hub.push(conn, Outgoing(error_reply(
                exc, msg.ref, table_id, doing=f"handling {msg.TYPE} from {conn.player}",
                metrics=self.metrics)))
        await self.hub.flush()

    # --- chat (the table's part is server/lobby/chat.py) ------------------------------------

    def _chat_rate(self, conn: Connection) -> None:
        assert conn.player is not None
        wait = self.chat_rate.allow(conn.player, time.monotonic())
        if wait is not None:
            settings = self.settings
            exc = ProtocolError(ErrorCode.CHAT_RATE_LIMITED,
                                f"at most {settings.chat_rate} chat messages per "
                                f"{settings.chat_window:g} seconds")
            raise retry_later(exc, wait)

    def _chat_checked(self, conn: Connection, msg: Chat) -> Chat:
        """``msg`` with its text cleaned, once the text, the operator mute and the rate
        allow it (PROTOCOL.md §16); else ProtocolError."""
        text = clean_text(msg.text)
        limit = self.settings.chat_max_length
        if not 1 <= len(text) <= limit:
            raise ProtocolError(ErrorCode.BAD_FIELD,
                                f"field 'text' must have 1..{limit} characters once cleaned",
                                field="text")
        until = conn.chat_muted_until
        if until > time.time():
            exc = ProtocolError(ErrorCode.CHAT_MUTED, "an operator muted your chat")
            exc.until = until
            raise exc
        self._chat_rate(conn)
        return msg if text == msg.text else Chat(table=msg.table, text=text, ref=msg.ref)

    async def _mute(self, conn: Connection, msg: Mute | Unmute) -> None:
        """Mute or unmute a player for ``conn``'s player, on all their sockets everywhere."""
        player = conn.player
        assert player is not None
        if msg.player == player:
            raise ProtocolError(ErrorCode.BAD_FIELD, "you cannot mute yourself", field="player")
        if isinstance(msg, Mute):
            muted = await self.records.mute(player, msg.player)
            if muted is None:
                raise ProtocolError(ErrorCode.BAD_FIELD,
                                    f"at most {self.settings.chat_mute_max} muted players",
                                    field="player")
        else:
            muted = await self.records.unmute(player, msg.player)
        self.hub.set_muted(player, muted)
        self.bus.broadcast({"op": "muted", "player": player, "muted": muted})
        self.hub.push(conn, Outgoing({"type": "ack", "ref": msg.ref}))

    async def _started(self, table_id: str) -> Table | None:
        """The table ``table_id`` of this node, once seated if it is being started now."""
        ready = self._starting.get(table_id)
        if ready is not None:
            await ready.wait()
        return self.tables.get(table_id)

    async def _route(self, actor: Actor, msg: TableMessage) -> None:
        table = await self._started(msg.table)
        if table is not None:
            await table.handle(actor, msg)
            return
        owner = await self._owner_to_ask(msg.table)
        self._forward(owner, actor, message_to_dict(msg), msg.ref, msg.table)

    def _forward(self, owner: str, actor: Actor, msg: dict[str, Any], ref: Any,
                 table_id: str) -> None:
        """Send a command to ``owner``; a request with an id is remembered until its answer
        comes back (if the owner dies first, :meth:`sweep_forwarded` answers it)."""
        if ref is not None and actor.node == self.node_id:
            if len(self._forwarded) >= FORWARDED_MAX:
                self._forwarded.pop(next(iter(self._forwarded)))
            self._forwarded[(actor.conn, ref)] = (owner, table_id,
                                                  asyncio.get_running_loop().time())
        self.bus.send(owner, {"op": "cmd", "actor": actor.to_dict(), "msg": msg})

    async def _owner_to_ask(self, table_id: str) -> str:
        """The live node that owns ``table_id`` (not this one). Raises ``no_such_table``
        when there is no such table (or it finished and its node is gone), ``unavailable``
        (with ``retry_after``) while its owner is dead and no node has taken it over yet."""
        owner = self._owners.get(table_id)
        if owner is not None and owner != self.node_id and self.is_node_live(owner):
            return owner
        lease = await self.persistence.lease(table_id)
        if lease is None:
            raise ProtocolError(ErrorCode.NO_SUCH_TABLE, f"no table {table_id}", field="table")
        if lease.node != self.node_id and self.is_node_live(lease.node) \
                and (lease.done or not lease.free):
            self._remember_owner(table_id, lease.node)
            return lease.node
        if lease.done:
            raise ProtocolError(ErrorCode.NO_SUCH_TABLE, f"no table {table_id}", field="table")
        raise self.takeover_pending(table_id)

    def takeover_pending(self, table_id: str) -> ProtocolError:
        """The error for a request to a table whose owner is gone and that another node
        will take over: retry after about the documented takeover time."""
        return retry_later(ProtocolError(
            ErrorCode.UNAVAILABLE,
            f"table {table_id}: its server is gone; another takes it over, retry"),
            self.settings.lease_ttl + self.settings.takeover_scan)

    def is_node_live(self, node: str) -> bool:
        """Whether ``node`` counts as alive (this node always does; an unknown one does
        until the ownership loop has heard of it, so a new node is not shunned)."""
        if node == self.node_id:
            return True
        if node in self.dead_nodes:
            return False
        until = self.peers.get(node)
        return until is None or until > time.time()

    def is_node_fresh(self, node: str) -> bool:
        """Whether ``node`` renewed its heartbeat within the last two renewal periods: a
        node that missed one is not trusted to hand a player a game (it may be dying)."""
        if node == self.node_id:
            return True
        if node in self.dead_nodes:
            return False
        until = self.peers.get(node)
        if until is None:
            return True
        heard = until - self.settings.lease_ttl
        return heard + 2 * self.settings.lease_renew > time.time()

    def answered_by_owner(self, conn_id: str, frame: Mapping[str, Any]) -> bool:
        """An answer from another node for one of this node's sockets: False when that
        request was answered already (``unavailable``, the owner was thought dead), so this
        late second answer is dropped."""
        ref = frame.get("ref")
        if ref is None:
            return True
        key = (conn_id, ref)
        try:
            hash(key)
        except TypeError:
            return True
        if self._forwarded.pop(key, None) is not None:
            return True
        return key not in self._answered

    def sweep_forwarded(self, *, node: str | None = None, table: str | None = None,
                        retry_after: float | None = None) -> int:
        """Answer ``unavailable`` every forwarded request that will get no answer: its owner
        is dead (or is ``node``), the table was taken over (``table``), or it waited past
        ``forward_timeout``. Returns how many were answered."""
        now = asyncio.get_running_loop().time()
        timeout = self.settings.forward_timeout
        wait = self.settings.lease_ttl + self.settings.takeover_scan \
            if retry_after is None else retry_after
        answered = 0
        for key, (owner, table_id, sent) in list(self._forwarded.items()):
            if not (owner == node or table_id == table or not self.is_node_live(owner)
                    or now - sent > timeout):
                continue
            del self._forwarded[key]
            self._answered[key] = None
            if len(self._answered) > ANSWERED_MAX:
                self._answered.popitem(last=False)
            conn_id, ref = key
            err = retry_later(ProtocolError(
                ErrorCode.UNAVAILABLE, f"table {table_id}: no answer from its server, retry"),
                wait)
            self.hub.push_conn_id(conn_id, Outgoing(error_message(err, ref, table_id)))
            answered += 1
        if answered:
            self.hub.flush_soon()
        return answered

    async def _owner(self, table_id: str) -> str | None:
        owner = self._owners.get(table_id)
        if owner is not None:
            return owner
        owner = await self.persistence.owner_of(table_id)
        if owner is not None:
            self._remember_owner(table_id, owner)
        return owner

    def _remember_owner(self, table_id: str, owner: str) -> None:
        """Bounded: past OWNER_CACHE_MAX entries the oldest goes (it is read again)."""
        owners = self._owners
        owners.pop(table_id, None)
        owners[table_id] = owner
        while len(owners) > OWNER_CACHE_MAX:
            del owners[next(iter(owners))]

    async def pair_limited(self, game_id: str, mode: TableMode, match_length: int,
                           players: tuple[RatedPlayer, RatedPlayer]) -> bool:
        """Count a game about to start against its pair's limit (settings ``pair_limit`` in
        ``pair_window``), if it would be rated: True when the limit refuses it a rating.
        One script in the rating store, idempotent by ``game_id`` (the table id: a match
        counts once). Raises ``unavailable`` when Redis is away (the game does not start)."""
        limit = self.settings.pair_limit
        if limit <= 0 or not counts_for_pair_limit(mode, match_length, players):
            return False
        try:
            reservation = await self.ratings.reserve_pair_game(
                game_id, players[0].player, players[1].player, at=time.time(), limit=limit,
                window=self.settings.pair_window)
        except (RedisError, OSError) as exc:
            raise ProtocolError(ErrorCode.UNAVAILABLE, "Redis is unavailable") from exc
        if not reservation.rated:
            log.info("table %s: %s and %s played %d rated games in the pair window: unrated",
                     game_id, players[0].player, players[1].player, reservation.games)
        return not reservation.rated

    async def cancel_tournament_table(self, table_id: str) -> bool:
        """Close a table whose tournament was cancelled, wherever it lives: here at once; on
        its live owner by a ``cancel_table`` op. True when the table is over for good (closed
        here, finished, or gone); False while it may still be playing elsewhere (the op was
        sent, or its dead owner's table is not taken over yet): ask again later."""
        table = await self._started(table_id)
        if table is not None:
            table.cancel_tournament()
            self.kick_flush()
            return True
        lease = await self.persistence.lease(table_id)
        if lease is None or lease.done:
            return True
        if lease.node != self.node_id and self.is_node_live(lease.node):
            self.bus.send(lease.node, {"op": "cancel_table", "table": table_id})
        return False

    async def _list_tables(self, conn: Connection, msg: ListTables) -> None:
        mode = None if msg.mode is None else str(msg.mode)
        limit = self.settings.list_limit
        total, page = await self.persistence.table_page(mode, msg.offset, limit)
        self.hub.push(conn, Outgoing({
            "type": "tables", "ref": msg.ref, "tables": page, "total": total,
            "offset": msg.offset,
        }))

    def _new_table_id(self) -> str:
        return secrets.token_urlsafe(9)

    def _new_table(
        self, table_id: str, mode: TableMode, match_length: int, tournament_id: str | None
    ) -> Table:
        table = Table(
            self, table_id=table_id, mode=mode, match_length=match_length,
            tournament_id=tournament_id, dice_factory=self.dice_factory,
        )
        self.tables[table_id] = table
        self._remember_owner(table_id, self.node_id)
        self.metrics.tables.set(len(self.tables))
        return table

    async def _create_table(self, actor: Actor, msg: CreateTable) -> None:
        settings = self.settings
        if msg.match_length > settings.max_match_length:
            raise ProtocolError(
                ErrorCode.BAD_FIELD,
                f"field 'match_length' must be in 0..{settings.max_match_length}",
                field="match_length",
            )
        if msg.mode is TableMode.TOURNAMENT and is_bot_id(actor.player):
            raise ProtocolError(ErrorCode.BOT_NOT_ALLOWED,
                                "computer players do not play in tournaments", field="mode")
        if msg.mode is TableMode.TOURNAMENT and msg.tournament_id is None:
            raise ProtocolError(ErrorCode.MISSING_FIELD,
                                "field 'tournament_id' is required for a tournament table",
                                field="tournament_id")
        if msg.mode is TableMode.TOURNAMENT:
            # A tournament's tables are opened by its bracket (or its runner) for the two
            # players of a match; a player opening one would play a game the tournament
            # never scheduled.
            raise ProtocolError(ErrorCode.BAD_FIELD,
                                "tournament tables are opened by the tournament, not by "
                                "players", field="mode")
        open_here = sum(1 for t in self.tables.values() if t.status is TableStatus.OPEN)
        if open_here + self._creating >= settings.max_open_tables:
            raise ProtocolError(ErrorCode.TOO_MANY_TABLES, "too many open tables; join one")
        self._check_create_limits(actor)
        # Places in both caps are taken before the first await: concurrent requests count
        # each other. The address's place becomes the table's (creator_address) or is given
        # back below.
        address = network_key(actor.address)
        self._open_by_address[address] = self._open_by_address.get(address, 0) + 1
        self._creating += 1
        try:
            table_id = self._new_table_id()
            held = await self.persistence.take_seat(actor.player, table_id)
            if held is not None:
                raise ProtocolError(ErrorCode.ALREADY_SEATED,
                                    f"you already hold a seat at table {held}", field="table")
            try:
                await self._claim_new(table_id)
            except BaseException:
                with contextlib.suppress(RedisError, OSError):
                    await self.persistence.release_seat(actor.player, table_id)
                raise
        except BaseException:
            self._give_back_open(address)
            raise
        finally:
            self._creating -= 1
        table = self._new_table(table_id, msg.mode, msg.match_length, None)
        table.creator_address = address
        # Seated first, so the summary names its player; the reply still goes out before
        # the seated event (that waits until it is stored).
        table.seat_creator(actor)
        self.reply(actor, {"type": "table_created", "ref": msg.ref, "table": table_id,
                           "summary": table.summary()})
        if self.on_seated is not None:
            self.spawn(self.on_seated([actor.player]))
        await self._publish_listing(table)

    def _check_create_limits(self, actor: Actor) -> None:
        """Tables one player and one address may create (a rate), and keep open at once."""
        if not self.settings.limits:
            return
        address = network_key(actor.address)
        if self._open_by_address.get(address, 0) >= \
                self.settings.max_open_tables_per_address:
            self.metrics.refused("open_tables_per_address")
            raise retry_later(ProtocolError(
                ErrorCode.RATE_LIMITED,
                f"at most {self.settings.max_open_tables_per_address} open tables per address"),
                self.settings.decision_time)
        now = asyncio.get_running_loop().time()
        for key, limit in (("p:" + actor.player, "table_create_per_player"),
                           ("a:" + address, "table_create_per_address")):
            wait = self._create_limit.take(key, now)
            if wait > 0:
                self.metrics.refused(limit)
                raise retry_later(ProtocolError(
                    ErrorCode.RATE_LIMITED, "creating tables too fast; retry later"), wait)

    def table_opened_elsewhere(self, table: Table) -> None:
        """An open table started play or closed: it no longer counts for its address."""
        address = table.creator_address
        if address is None:
            return
        table.creator_address = None
        self._give_back_open(address)

    def _give_back_open(self, address: str) -> None:
        left = self._open_by_address.get(address, 0) - 1
        if left > 0:
            self._open_by_address[address] = left
        else:
            self._open_by_address.pop(address, None)

    # --- listing -----------------------------------------------------------------------------

    async def _publish_listing(self, table: Table) -> None:
        if not table.is_listed:
            return
        if table.status in (TableStatus.OPEN, TableStatus.PLAYING):
            if await self._holds_lease(table.id) and table.status in (TableStatus.OPEN,
                                                                       TableStatus.PLAYING):
                await self.persistence.list_table(table.id, table.summary())
        elif self.persistence.epochs.get(table.id) != FENCED_OUT:
            # Unlisted even once its lease is given up (done); never by a node that was
            # told another owns the table now (it might be live there).
            await self.persistence.unlist_table(table.id, str(table.mode))

    async def _holds_lease(self, table_id: str) -> bool:
        """Whether this node still holds ``table_id``'s owner lease under the epoch it writes
        with: the lobby index is not fenced by a script (another slot), so a node that was
        paused past its lease checks before it lists (one read per status change)."""
        epoch = self.persistence.epochs.get(table_id)
        if epoch is None or epoch == FENCED_OUT:
            return False
        lease = await self.persistence.lease(table_id)
        return (lease is not None and lease.node == self.node_id and lease.epoch == epoch
                and not lease.done and not lease.free)

    def table_changed(self, table: Table) -> None:
        """The table's status changed: update the lobby index (in the background); when play
        starts, tell :attr:`on_seated` who sat down."""
        if table.status is not TableStatus.OPEN:
            self.table_opened_elsewhere(table)
        if table.is_listed:
            self.spawn(self._publish_listing(table))
        if table.status is TableStatus.PLAYING and self.on_seated is not None:
            self.spawn(self.on_seated(table.seated_players()))

    def forget_later(self, table: Table, delay: float | None = None) -> None:
        """Drop a finished table from memory after ``finished_linger`` (sync still works from
        Redis for others; the owner key expires with the log)."""
        wait = self.settings.finished_linger if delay is None else delay
        loop = asyncio.get_running_loop()
        if wait <= 0:
            loop.call_soon(self._forget, table)
            return
        # A bound method and an argument, no closure: a closure naming its own timer would
        # make a reference cycle that keeps the whole table (its game, its history) alive
        # until the garbage collector's next full pass.
        previous = self._timers.pop(table.id, None)
        if previous is not None:
            previous.cancel()
        self._timers[table.id] = loop.call_later(wait, self._forget, table)

    def _forget(self, table: Table) -> None:
        self._timers.pop(table.id, None)
        self.table_opened_elsewhere(table)
        if self.tables.get(table.id) is table:
            del self.tables[table.id]
            self._owners.pop(table.id, None)
            self.metrics.tables.set(len(self.tables))
            # Finished or closed: its lease is done (never claimed again).
            self.spawn(self._release_done(table.id))

    async def _release_done(self, table_id: str) -> None:
        async def release() -> None:
            await self.persistence.flush()
            await self.persistence.release(table_id, done=True)

        # Redis away: tried for a while; else the lease just expires.
        with contextlib.suppress(*REDIS_AWAY):
            await retry_redis(release, Backoff(attempts=30))

    # --- ownership (server/lobby/ownership.py runs the loops) -----------------------------

    async def _claim_new(self, table_id: str) -> None:
        """Take the first owner lease of a table made here; its writes are fenced with it."""
        epoch, _ = await self.persistence.claim(table_id, self.node_id, new=True)
        if not epoch:
            raise ProtocolError(ErrorCode.INTERNAL, "table id taken; retry")
        self.persistence.adopt(table_id, epoch)

    def _table_stored(self, table_id: str, version: int) -> None:
        """The flush stored the table's events up to ``version``: it may announce them."""
        table = self.tables.get(table_id)
        if table is not None:
            table.stored(version)

    def _table_fenced(self, table_id: str) -> None:
        """A write of the table was refused: another node owns it now, or the store lost the
        table's lease with everything else (emptied, replaced). The store is checked first:
        lost, every table ends with ``store_lost`` (:meth:`store_lost`); else the table stops
        and is forgotten here (its seats belong to the table, which lives on at its new
        owner)."""
        if table_id in self.tables:
            self.spawn(self._fenced_or_lost(table_id))

    async def _fenced_or_lost(self, table_id: str) -> None:
        persistence = self.persistence
        _up, lost = await persistence.check_store()
        if lost:
            persistence.store_lost()  # it calls store_lost below; the monitor claims anew
        table = self.tables.get(table_id)
        if table is not None:
            table.fenced()  # it calls table_lost

    def store_lost(self) -> None:
        """The store was emptied or replaced (``Persistence.check_store``): every table of
        this node ends with ``table_closed`` (reason ``store_lost``, no result, no rating
        change), told at once to its players and watchers; then every authenticated socket
        here is closed with 4001 (reason "store lost"): their tokens and accounts are gone,
        so nothing is accepted from them. Each node does this on its own when it notices."""
        tables = list(self.tables.values())
        for table in tables:
            table.end_store_lost()
            self.table_lost(table)
        self._owners.clear()
        self.kick_flush()
        closed = self.hub.end_all_tokens("store lost")
        log.error("store lost: %d tables ended, %d sockets closed", len(tables), closed)

    def table_lost(self, table: Table) -> None:
        """``table`` is not this node's any more (lease lost, or handed over): forget it
        without releasing anything in Redis; it stops (timers, announcements) and answers
        the requests it held."""
        table.let_go()
        handle = self._timers.pop(table.id, None)
        if handle is not None:
            handle.cancel()
        self.table_opened_elsewhere(table)
        if self.tables.get(table.id) is table:
            del self.tables[table.id]
            self._owners.pop(table.id, None)
            self.metrics.tables.set(len(self.tables))
        self.sweep_forwarded(table=table.id, retry_after=1.0)
        if self.on_table_lost is not None:
            self.on_table_lost(table.id)

    async def restore_table(self, table_id: str, snapshot: dict[str, Any] | None,
                            events: list[dict[str, Any]]) -> Table | None:
        """This node just claimed ``table_id`` (an owner died or handed it over): rebuild it
        from its stored log and carry on, or, for a table with no game to carry on (open,
        closed, or no way to rebuild it), clean it up: seats released, unlisted, its lease
        done. Returns the live table, or None when it was cleaned up."""
        summary = dict((snapshot or {}).get("summary") or {})
        status = str(summary.get("status") or "")
        players = [str(p) for p in summary.get("players") or () if p]
        table: Table | None = None
        if status in ("playing", "finished") and events:
            try:
                table = await Table.restore(self, table_id, snapshot, events, time.time())
            except ValueError:
                # A log that does not replay (another version's format, a log trimmed in
                # the middle of a game): cleaned up below, so its players are free to play
                # again instead of holding seats at a table nobody can run.
                log.exception("table %s: its log does not replay; the game is lost", table_id)
        if table is not None:
            if self.closing:
                # This node began to drain while it rebuilt the table: hand it on (hand_over
                # has gone past the tables it had).
                table.let_go()
                await self.persistence.release(table_id, done=False)
                self.bus.broadcast({"op": "released", "node": self.node_id})
                return None
            self.tables[table_id] = table
            self._remember_owner(table_id, self.node_id)
            self.metrics.tables.set(len(self.tables))
            log.info("table %s taken over at version %s", table_id, table.version)
            if self.on_restored is not None and table.status is TableStatus.PLAYING:
                try:
                    self.on_restored(table)
                except Exception:
                    log.exception("table %s: resuming after the takeover failed", table_id)
            if table.status in (TableStatus.OPEN, TableStatus.PLAYING):
                await self._publish_listing(table)
            self.bus.broadcast({"op": "taken_over", "table": table_id, "node": self.node_id,
                                "players": table.seated_players()})
            await self._taken_over(table_id, self.node_id, table.seated_players())
            return table
        if status == "playing":
            log.warning("table %s: game in progress lost with its node (no log to rebuild "
                        "it from, or a log that does not replay)", table_id)
        for player in players:
            await self.persistence.release_seat(player, table_id)
        await self.persistence.unlist_table(table_id, str(summary.get("mode") or "") or None)
        await self.persistence.release(table_id, done=True)
        self.bus.broadcast({"op": "taken_over", "table": table_id, "node": self.node_id,
                            "players": []})
        await self._taken_over(table_id, self.node_id, [])
        return None

    async def _taken_over(self, table_id: str, node: str, players: list[str]) -> None:
        """``node`` took ``table_id`` over: route there from now on, answer the requests that
        waited for the old owner (``unavailable``: retry now), and attach this node's
        sockets of its seated players (they get ``resume``)."""
        self._remember_owner(table_id, node)
        if node != self.node_id:
            table = self.tables.get(table_id)
            if table is not None:  # this node thought it owned it: it does not
                self._table_fenced(table_id)
        self.sweep_forwarded(table=table_id, retry_after=1.0)
        for player in players:
            conns = self.hub.by_player.get(player)
            if conns:
                await self._send_attach(self.actor_of(next(iter(conns))), table_id)

    async def node_died(self, node: str) -> None:
        """``node`` stopped saying it is alive: its sockets are gone. Its players leave the
        seats of this node's tables (their grace period starts), its watchers go, requests
        waiting for its answer are answered, and :attr:`on_node_dead` is told (matchmaking
        drops the tickets queued through it)."""
        if node == self.node_id or node in self.dead_nodes:
            return
        self.dead_nodes.add(node)
        log.warning("node %s is gone: cleaning up after it", node)
        for table in list(self.tables.values()):
            for key in [k for k in table.watchers if k[0] == node]:
                table.unwatch(*key)
            for player in table.seated_players():
                table.detach(player, node)
        self.sweep_forwarded(node=node)
        for callback in self.on_node_dead:
            try:
                await callback(node)
            except (RedisError, OSError) as exc:
                log.warning("cleaning up after node %s: %s", node, exc)
        await self.flush()

    def node_back(self, node: str) -> None:
        """A node seen dead says it is alive again (restarted under the same id, or it was
        only paused: a long GC, Redis away for longer than a lease). Its players were taken
        off the seats here as gone: it is asked to attach its sockets' seated players again
        (they get ``resume``), so nobody playing through it forfeits by disconnection."""
        if node in self.dead_nodes:
            self.dead_nodes.discard(node)
            self.bus.send(node, {"op": "reattach"})

    async def reattach(self) -> None:
        """Attach every seated player with a socket here to its table again (a peer saw
        this node dead and took its players off their seats)."""
        for player, conns in list(self.hub.by_player.items()):
            if not conns:
                continue
            seat = await self.persistence.seat_of(player)
            if seat is not None:
                await self._send_attach(self.actor_of(next(iter(conns))), seat)

    async def hand_over(self) -> list[str]:
        """Drain (SIGTERM with live peers): stop every table here, store what is buffered,
        and give each lease back so a peer claims the table at once; peers are told. The
        tables are forgotten here (their commands go to the new owners). Returns the ids
        handed over."""
        self.closing = True
        for table in self.tables.values():
            table.shutdown()
        if self._tasks:  # settlements in flight finish first (they write under the lease)
            await asyncio.wait(set(self._tasks), timeout=self.settings.shutdown_timeout)
        await self.persistence.flush(everything=True)
        handed: list[str] = []
        while self.tables:
            table = next(iter(self.tables.values()))
            # Stopped here first: nothing of it is written or announced by this node any more
            # (a settlement or a command still in flight is refused, not written late).
            over = table.status is TableStatus.CLOSED or table.wound_up
            table.let_go(finished=over)
            self.table_lost(table)
            try:
                if await self.persistence.release(table.id, done=over) and not over:
                    handed.append(table.id)
            except (RedisError, OSError) as exc:
                log.warning("drain: table %s not handed over (%s); its lease will expire",
                            table.id, exc)
        if handed:
            self.bus.broadcast({"op": "released", "node": self.node_id})
        log.info("drain: %d tables handed over to peers", len(handed))
        return handed

    # --- messages from other nodes ---------------------------------------------------------

    async def on_node_message(self, payload: dict[str, Any]) -> None:
        """One message from another node (see the module docstring for the ops). A message
        that is not what its op needs (a bug or a stranger on the bus) is logged and dropped."""
        op = payload.get("op")
        try:
            await self._node_op(op, payload)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            log.warning("bus: malformed %r message dropped: %r", op, exc)
        await self.flush()

    async def _node_op(self, op: Any, payload: dict[str, Any]) -> None:
        if op == "deliver":
            frame = payload.get("frame")
            if not isinstance(frame, dict):
                return
            lean = payload.get("lean")
            out = Outgoing(frame, lean if isinstance(lean, dict) else None)
            player = payload.get("player")
            if isinstance(player, str) and frame.get("type") in INBOX_EVENTS:
                self.push_rating_here(player, frame)
            elif isinstance(player, str):
                self.hub.push_player(player, out)
            for conn_id in payload.get("conns") or ():
                if self.answered_by_owner(str(conn_id), frame):
                    if frame.get("type") == "sync":
                        self.charge_sync(str(conn_id), frame)
                    if "chat" in frame:
                        out = Outgoing(self._without_muted(str(conn_id), frame))
                    self.hub.push_conn_id(str(conn_id), out)
        elif op == "chat":
            frame = payload["frame"]
            if not isinstance(frame, dict):
                raise TypeError("chat needs a frame")
            self.hub.push_chat([str(p) for p in payload.get("players") or ()],
                               [str(c) for c in payload.get("conns") or ()], Outgoing(frame))
        elif op == "muted":
            self.hub.set_muted(str(payload["player"]), [str(p) for p in payload["muted"]])
        elif op == "chat_mute":
            self.hub.set_chat_muted(str(payload["player"]), float(payload["until"]))
        elif op == "push":
            frame = payload.get("frame")
            player = payload.get("player")
            if isinstance(frame, dict) and isinstance(player, str):
                if frame.get("type") in INBOX_EVENTS:
                    self.push_rating_here(player, frame)
                else:
                    self.hub.push_player(player, Outgoing(frame))
        elif op == "revoke":
            digests = payload.get("tokens")
            if isinstance(digests, list):
                reason = str(payload.get("reason") or "revoked")
                for digest in digests:
                    self.hub.end_token(str(digest), reason)
        elif op == "cmd":
            await self._remote_command(payload)
        elif op == "cancel_table":
            table = await self._started(str(payload["table"]))
            if table is not None:  # not here (any more): the caller asks again later
                table.cancel_tournament()
        elif op == "reattach":
            await self.reattach()
        elif op == "attach":
            table = await self._started(str(payload.get("table")))
            if table is not None:
                table.attach(Actor.from_dict(payload["actor"]))
        elif op == "detach":
            table = self.tables.get(str(payload.get("table")))
            if table is not None:
                table.detach(str(payload.get("player")), str(payload.get("node")))
        elif op == "unwatch":
            table = self.tables.get(str(payload.get("table")))
            if table is not None:
                table.unwatch(str(payload.get("node")), str(payload.get("conn")))
        elif op == "taken_over":
            node = payload["node"]
            if not isinstance(node, str) or not isinstance(payload["table"], str):
                raise TypeError("taken_over needs a table and a node")
            if node != self.node_id:  # broadcasts come back to their sender too
                await self._taken_over(payload["table"], node,
                                       [str(p) for p in payload.get("players") or ()])
        elif op == "released":
            node = payload.get("node")
            if not isinstance(node, str):
                raise TypeError("released needs a node")
            if node != self.node_id and self.on_released is not None:
                self.on_released(node)
        else:
            raise ValueError(f"unknown op {op!r}")

    async def _remote_command(self, payload: dict[str, Any]) -> None:
        actor = Actor.from_dict(payload["actor"])
        msg: Message | None = None
        try:
            msg = parse_message(payload.get("msg"))
            if not isinstance(msg, TableMessage):
                raise ProtocolError(ErrorCode.UNKNOWN_TYPE, "not a table command")
            table = await self._started(msg.table)
            if table is None:
                # Not here (any more): handed over or taken over, the new owner answers.
                hops = int(payload.get("hops") or 0)
                owner = await self._owner_to_ask(msg.table)
                if hops >= MAX_HOPS:  # owners disagree for a moment: let the client retry
                    raise self.takeover_pending(msg.table)
                self.bus.send(owner, {"op": "cmd", "actor": actor.to_dict(),
                                      "msg": message_to_dict(msg), "hops": hops + 1})
                return
            await table.handle(actor, msg)
        except Exception as exc:
            self.reply(actor, error_reply(
                exc, None if msg is None else msg.ref,
                msg.table if isinstance(msg, TableMessage) else None,
                doing=f"handling a command from node {actor.node}", metrics=self.metrics))

