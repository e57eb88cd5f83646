"""Node-to-node messages over Redis pub/sub: every node listens on its own channel.

A table lives on one node (its owner). A player's socket may be on another node; commands for
the table travel to the owner's channel, events for the player travel back to the node holding
the socket. Same-node traffic never touches Redis.

Sending is fire-and-forget and ordered per destination node: :meth:`NodeBus.send` only queues;
one publisher task drains the queue with pipelined ``PUBLISH`` calls, so a burst of events
costs one round trip. A message for a node that is gone is lost (pub/sub has no backlog);
clients recover with ``sync`` (versioned events are kept in Redis).

**Nobody heard it.** ``PUBLISH`` answers how many subscribers got the message (the reply
is read anyway). A message for a node that nobody heard (0: the node's listener is
reconnecting, after a Redis restart say, or the node is gone) is kept, with every later
message for that node behind it (order kept), and published again every
:data:`UNHEARD_RESEND` seconds (or sent over the local link once that is up) for at most
:data:`UNHEARD_FOR` seconds; past that it is given up. A message sent with a ``token`` (a
forwarded request, see ``server/lobby/forwarding.py``) is never dropped silently: when it is
given up, or when it was still queued behind a ``PUBLISH`` that failed (it never went out),
``on_unheard(token)`` is called, and the sender answers the request ``unavailable`` with
``retry_after``. A batch whose ``PUBLISH`` failed may or may not have gone out: its requests
are left to ``forward_timeout`` (answered now, one could be sent again and done twice).
On a Redis Cluster ``PUBLISH`` counts only the subscribers of the node it ran on, so there
the count is not trusted and nothing is waiting.

**Following a cluster.** On a Redis Cluster pub/sub goes through one node
(``server/store/redis_client.py``); when that node fails (killed, failed over) the bus moves
to a live node of the cluster's topology (``ClusterRedis.reseed``) without a restart: the
listener subscribes again there, and a batch whose ``PUBLISH`` failed is published again
there, with what was queued behind it, for up to ``unheard_for`` seconds (a message may then
arrive twice: events carry versions, and a request's answer is taken once). The listener
follows when the publisher moved (it looks after each message, and after each
:data:`FOLLOW_LISTEN_TIMEOUT` of silence). A node whose host is gone or cut off fails its
connections within ``PEER_TIMEOUT`` (``server/store/redis_client.py``: TCP keep-alive and
user timeout), the subscription's too. What was
published while the listener was away is lost, so once it listens again
:attr:`NodeBus.on_resubscribed` is told (the lobby attaches this node's seated players to
their tables again: each gets ``resume``, the table's full state).

Each node also refreshes ``{prefix}node:<id>:alive`` (expiring; a duty of the node's tick) so
others can tell a dead owner from a quiet one (the tournament driver asks
:meth:`NodeBus.is_alive`; table ownership goes by the heartbeat of
``server/lobby/ownership.py``, seen through ``liveness.py``). Messages are the typed structs of
``server/protocol/node_messages.py`` (msgpack maps with an ``op``), decoded there in one place;
the lobby dispatches them (``Lobby.on_node_messages``), a batch at a time: the messages one
read brought, in order.

Sibling workers of one ``--workers`` command (``link_peers``) talk over the local link
instead (``server/cluster/link.py``: Unix sockets, no Redis round trip), whenever it is up;
otherwise, and for every other node and every broadcast, Redis pub/sub as above.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from server.cluster.link import LocalLink
from server.protocol.node_messages import NodeMessage, decode, encode
from server.store.keys import Keys
from server.tick import Tick

log = logging.getLogger(__name__)

ALIVE_TTL = 15.0
ALIVE_REFRESH = 5.0
MAX_BATCH = 512
ALIVE = "bus-alive"
"""The name of the alive refresh on the node's tick."""
LISTEN_TIMEOUT = 30.0
"""Seconds the listener waits for a message before it asks again (no polling: the read
blocks; each ask lets redis-py check the connection's health)."""
FOLLOW_LISTEN_TIMEOUT = 5.0
"""The same on a Redis Cluster, where after each silence the listener checks that the
publisher did not move pub/sub off its node meanwhile (no command: a look at the client)."""
UNHEARD_RESEND = 0.25
"""Seconds between two publications of a message that nobody heard."""
UNHEARD_FOR = 3.0
"""Seconds a message nobody heard is published again before it is given up (the listener
of a node whose Redis restarted is back within a second)."""
UNHEARD_MAX = 10_000
"""Messages kept (nobody heard them) at most; past it the oldest is given up."""

Handler = Callable[[list[NodeMessage]], Awaitable[None]]
Unheard = Callable[[Any], None]
"""Told the ``token`` of a message given up without being heard (or never sent: queued
behind a failed publish)."""
_Item = tuple[str, bytes, Any]
"""A queued message: its channel, its bytes, its token (None for most)."""
"""Handles a batch of messages from other nodes, in order (each failure its own)."""


def _decode(data: Any) -> NodeMessage | None:
    """A node message. Anything else (not msgpack, an unknown op, a field missing or of the
    wrong type: a bug in a peer, a stranger publishing on the channel) is logged and
    dropped: None."""
    if not isinstance(data, bytes):
        log.warning("bus: a message that is not bytes dropped: %.200r", data)
        return None
    try:
        return decode(data)
    except ValueError as exc:
        log.warning("bus: malformed message dropped (%d bytes): %s", len(data), exc)
        return None


class NodeBus:
    """Publish to other nodes' channels; deliver this node's channel to ``handler``."""

    def __init__(self, redis: aioredis.Redis, keys: Keys, node_id: str, *,
                 alive_ttl: float = ALIVE_TTL, alive_refresh: float = ALIVE_REFRESH,
                 tick: Tick | None = None, link_peers: tuple[str, ...] = (),
                 link_dir: str = "", unheard_for: float = UNHEARD_FOR,
                 unheard_resend: float = UNHEARD_RESEND) -> None:
        """``tick``: the node's tick, which refreshes the alive key (one of its own if not
        given). ``link_peers`` (the sibling workers' ids) and ``link_dir``: the local link
        to them (off when either is empty). ``unheard_for`` / ``unheard_resend``: how long
        and how often a message nobody heard is published again (see the module)."""
        self._redis = redis
        self.tick = tick if tick is not None else Tick()
        # On a cluster, pub/sub and PUBLISH use a plain client of one node, moved to another
        # when it fails (server/store/redis_client.py).
        self._follows = hasattr(redis, "reseed")
        self._reseeding = asyncio.Lock()
        self._alive_ttl_ms = int(alive_ttl * 1000)
        self._alive_refresh = alive_refresh
        self._keys = keys
        self.node_id = node_id
        self._handler: Handler | None = None
        self._queue: deque[_Item] = deque()
        # PUBLISH counts are those of the whole deployment (not a cluster's one node).
        self._counts_trusted = not hasattr(redis, "seed")
        self._unheard_for = unheard_for
        self._unheard_resend = unheard_resend
        # Messages nobody heard, per channel, in order: (item, loop time first unheard);
        # the node each channel is for.
        self._unheard: dict[str, deque[tuple[_Item, float]]] = {}
        self._unheard_node: dict[str, str] = {}
        self._unheard_count = 0
        self._unheard_wake = asyncio.Event()
        self.on_unheard: Unheard | None = None
        """Set by the owner of the tokens (the lobby's forwarding)."""
        self.on_resubscribed: Callable[[], None] | None = None
        """Told when the listener subscribed again through another node of a cluster (what
        was published meanwhile is lost): set by the lobby."""
        self._wake = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._pubsub: Any = None
        self._listening_on: aioredis.Redis | None = None  # the node client it subscribed on
        self._stopping = False
        self.link: LocalLink | None = None
        if link_dir and any(peer != node_id for peer in link_peers):
            self.link = LocalLink(node_id, link_peers, link_dir, self._received_local)
        self._local: deque[NodeMessage] = deque()
        self._local_wake = asyncio.Event()

    @property
    def _pubsub_redis(self) -> aioredis.Redis:
        redis: aioredis.Redis = getattr(self._redis, "seed", self._redis)
        return redis

    @property
    def _channels(self) -> tuple[str, str]:
        """Its own channel, and the one every node hears (ended tokens)."""
        return self._keys.node_channel(self.node_id), self._keys.broadcast_channel

    async def start(self, handler: Handler) -> None:
        self._handler = handler
        self._listening_on = self._pubsub_redis
        self._pubsub = self._listening_on.pubsub(ignore_subscribe_messages=True)
        await self._pubsub.subscribe(*self._channels)
        await self._redis.set(self._keys.node_alive(self.node_id), "1", px=self._alive_ttl_ms)
        self._tasks = [
            asyncio.create_task(self._listen(), name="bus-listen"),
            asyncio.create_task(self._publish_loop(), name="bus-publish"),
            asyncio.create_task(self._resend_loop(), name="bus-resend"),
        ]
        if self.link is not None:
            self._tasks.append(asyncio.create_task(self._dispatch_local(), name="bus-local"))
            await self.link.start()
        self.tick.add(ALIVE, self._alive_refresh, self._refresh_alive, logger=log,
                      what="bus: alive refresh")

    async def stop(self) -> None:
        """Send what is queued, stop listening, and say this node is gone."""
        self._stopping = True
        self._wake.set()
        with contextlib.suppress(RedisError, OSError):
            await self._drain()
        if self.link is not None:
            await self.link.stop()
        for channel in list(self._unheard):
            self._give_up(channel, list(self._forget_unheard(channel)), "the node stops")
        await self.tick.remove(ALIVE)
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if self._pubsub is not None:
            with contextlib.suppress(RedisError, OSError):
                await self._pubsub.unsubscribe()
            with contextlib.suppress(RedisError, OSError):
                await self._pubsub.aclose()
        if self._follows:
            with contextlib.suppress(RedisError, OSError):
                await self._redis.close_pubsub()  # type: ignore[attr-defined]
        with contextlib.suppress(RedisError, OSError):
            await self._redis.delete(self._keys.node_alive(self.node_id))

    def send(self, node: str, message: NodeMessage, token: Any = None) -> None:
        """Queue ``message`` for ``node`` (never this node; callers deliver locally): over
        the local link when ``node`` is a sibling worker with the link up, else Redis.
        ``token`` (hashable, not None): passed to :attr:`on_unheard` if the message is given
        up unheard or never sent (see the module)."""
        data = encode(message)
        channel = self._keys.node_channel(node)
        if self._unheard and channel in self._unheard:  # behind those nobody heard yet: in order
            self._keep_unheard(channel, (channel, data, token), asyncio.get_running_loop().time())
            return
        link = self.link
        if link is not None and link.send(node, data):
            return
        self._queue.append((channel, data, token))
        self._wake.set()

    def broadcast(self, message: NodeMessage) -> None:
        """Queue ``message`` for every node (this one hears it too)."""
        self._queue.append((self._keys.broadcast_channel, encode(message), None))
        self._wake.set()

    @property
    def unheard_waiting(self) -> int:
        """Messages nobody heard, kept to be published again."""
        return self._unheard_count

    async def is_alive(self, node: str) -> bool:
        if node == self.node_id:
            return True
        return bool(await self._redis.exists(self._keys.node_alive(node)))

    async def _publish(self, batch: list[_Item]) -> list[int]:
        """PUBLISH each message of ``batch``, one round trip; how many heard each. A failed
        publish raises and tells nobody: the batch may have gone out, so a forwarded request
        in it is left to ``forward_timeout`` (answering it ``unavailable`` now could have it
        sent again and done twice)."""
        async with self._pubsub_redis.pipeline(transaction=False) as pipe:
            for channel, data, _token in batch:
                pipe.publish(channel, data)
            counts: list[int] = await pipe.execute()
        return counts

    async def _drain(self) -> None:
        while self._queue:
            batch = [self._queue.popleft() for _ in range(min(MAX_BATCH, len(self._queue)))]
            try:
                counts = await self._publish(batch)
            except (RedisError, OSError):
                if self._follows:  # published again through another node (see the module)
                    self._queue.extendleft(reversed(batch))
                raise
            if self._counts_trusted and 0 in counts:
                self._hold_unheard(batch, counts)

    async def _publish_loop(self) -> None:
        loop = asyncio.get_running_loop()
        failing_since: float | None = None
        while not self._stopping:
            await self._wake.wait()
            self._wake.clear()
            seed = self._pubsub_redis
            try:
                await self._drain()
                failing_since = None
            except (RedisError, OSError) as exc:
                now = loop.time()
                if failing_since is None:
                    failing_since = now
                if self._follows and now - failing_since < self._unheard_for:
                    log.warning("bus: publish failed (%s): publishing again through a live "
                                "node", exc)
                    await self._reseed(seed)
                    await asyncio.sleep(self._unheard_resend)
                    self._wake.set()
                    continue
                failing_since = None
                log.warning("bus: publish failed, %d messages dropped: %s", len(self._queue), exc)
                self._tell_unheard(self._queue)
                self._queue.clear()

    async def _reseed(self, failed: aioredis.Redis | None) -> None:
        """Move a cluster's pub/sub off ``failed`` (the node client that failed), unless the
        listener or the publisher moved it already."""
        async with self._reseeding:
            if self._pubsub_redis is failed:
                await self._redis.reseed()  # type: ignore[attr-defined]

    def _tell_unheard(self, items: Iterable[_Item]) -> None:
        unheard = self.on_unheard
        if unheard is None:
            return
        for _channel, _data, token in items:
            if token is not None:
                try:
                    unheard(token)
                except Exception:
                    log.exception("bus: answering a message nobody heard failed")

    def _hold_unheard(self, batch: list[_Item], counts: list[int]) -> None:
        """Hold the messages of ``batch`` for a node that nobody heard, to publish them
        again; a later one for a node kept already waits behind (order kept)."""
        now = asyncio.get_running_loop().time()
        broadcast = self._keys.broadcast_channel
        for item, count in zip(batch, counts, strict=True):
            channel = item[0]
            if count or channel == broadcast:
                continue
            self._keep_unheard(channel, item, now)
        self._unheard_wake.set()

    def _keep_unheard(self, channel: str, item: _Item, now: float) -> None:
        if self._unheard_count >= UNHEARD_MAX:
            self._give_up(channel, [(item, now)], "too many messages kept")
            return
        waiting = self._unheard.get(channel)
        if waiting is None:
            waiting = self._unheard[channel] = deque()
            node = self._unheard_node[channel] = channel[len(self._keys.node_channel("")):]
            log.info("bus: a message for node %s heard by nobody (its listener is away?): "
                     "kept and published again for up to %g s", node, self._unheard_for)
        waiting.append((item, now))
        self._unheard_count += 1

    def _forget_unheard(self, channel: str) -> deque[tuple[_Item, float]]:
        del self._unheard_node[channel]
        waiting = self._unheard.pop(channel)
        self._unheard_count -= len(waiting)
        return waiting

    def _give_up(self, channel: str, items: list[tuple[_Item, float]], why: str) -> None:
        log.warning("bus: %d messages for %s heard by nobody, given up (%s)", len(items),
                    channel, why)
        self._tell_unheard(item for item, _since in items)

    async def _resend_loop(self) -> None:
        """Publish again, every ``unheard_resend`` seconds, what nobody heard (or send it
        over the local link once that is up); give up what waited past ``unheard_for``."""
        loop = asyncio.get_running_loop()
        while True:
            await self._unheard_wake.wait()
            await asyncio.sleep(self._unheard_resend)
            self._unheard_wake.clear()
            for channel in list(self._unheard):
                if channel in self._unheard:
                    await self._resend(channel, loop.time())
            if self._unheard:
                self._unheard_wake.set()

    async def _resend(self, channel: str, now: float) -> None:
        waiting = self._unheard[channel]
        node = self._unheard_node[channel]
        link = self.link
        if link is not None and link.is_up(node):
            for (_channel, data, _token), _since in self._forget_unheard(channel):
                link.send(node, data)
            return
        if now - waiting[0][1] > self._unheard_for:
            self._give_up(channel, list(self._forget_unheard(channel)),
                          f"not heard for {self._unheard_for:g} s")
            return
        items = list(waiting)
        try:
            counts = await self._publish([item for item, _since in items])
        except (RedisError, OSError) as exc:
            # The batch's tokens are told (_publish); those sent meanwhile too.
            rest = list(self._forget_unheard(channel))[len(items):]
            self._tell_unheard(item for item, _since in rest)
            log.warning("bus: publishing again failed, %d messages dropped: %s",
                        len(items) + len(rest), exc)
            return
        # Those sent meanwhile (send() appends to the same deque) stay behind.
        later = list(waiting)[len(items):]
        still = [entry for entry, count in zip(items, counts, strict=True) if count == 0]
        waiting.clear()
        waiting.extend(still)
        waiting.extend(later)
        self._unheard_count -= len(items) - len(still)
        if not waiting:
            self._forget_unheard(channel)

    async def _listen(self) -> None:
        assert self._pubsub is not None and self._handler is not None
        follows = self._follows
        timeout = FOLLOW_LISTEN_TIMEOUT if follows else LISTEN_TIMEOUT
        while True:
            if follows and self._listening_on is not self._pubsub_redis:
                # The publisher moved pub/sub off the node listened on (it failed there).
                await self._resubscribe("the publisher moved off that node")
                continue
            try:
                message = await self._pubsub.get_message(
                    ignore_subscribe_messages=True, timeout=timeout
                )
            except (RedisError, OSError) as exc:
                if follows:
                    await self._resubscribe(repr(exc))
                    continue
                log.warning("bus: listen failed, retrying: %s", exc)
                await asyncio.sleep(0.5)
                continue
            if message is None or message.get("type") != "message":
                continue
            payload = _decode(message.get("data"))
            if payload is not None:
                await self._handle([payload])

    async def _resubscribe(self, why: str) -> None:
        """The listener of a cluster's pub/sub failed (``why``): subscribe again through a
        live node (tried again, a little later each time, until one takes it), then tell
        :attr:`on_resubscribed`."""
        log.warning("bus: listen failed (%s): subscribing again through a live node", why)
        delay = self._unheard_resend
        failed = self._listening_on
        while True:
            await self._reseed(failed)
            failed = self._pubsub_redis
            pubsub: Any = self._pubsub_redis.pubsub(ignore_subscribe_messages=True)
            try:
                await pubsub.subscribe(*self._channels)
                break
            except (RedisError, OSError) as again:
                log.info("bus: subscribing again failed: %s", again)
                with contextlib.suppress(RedisError, OSError):
                    await pubsub.aclose()
                await asyncio.sleep(delay)
                delay = min(2.0, delay * 2)
        old, self._pubsub, self._listening_on = self._pubsub, pubsub, failed
        with contextlib.suppress(RedisError, OSError):
            await old.aclose()
        kwargs = self._pubsub_redis.connection_pool.connection_kwargs
        log.warning("bus: listening again through %s:%s", kwargs.get("host"),
                    kwargs.get("port"))
        if self.on_resubscribed is not None:
            try:
                self.on_resubscribed()
            except Exception:
                log.exception("bus: catching up after subscribing again failed")

    async def _handle(self, batch: list[NodeMessage]) -> None:
        assert self._handler is not None
        try:
            await self._handler(batch)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("bus: handling node messages failed")

    def _received_local(self, messages: list[NodeMessage]) -> None:
        self._local.extend(messages)
        self._local_wake.set()

    async def _dispatch_local(self) -> None:
        """The messages the local link brought, a batch (all there is) at a time."""
        local = self._local
        while True:
            await self._local_wake.wait()
            self._local_wake.clear()
            while local:
                batch = list(local)
                local.clear()
                await self._handle(batch)

    async def _refresh_alive(self) -> None:
        await self._redis.set(self._keys.node_alive(self.node_id), "1", px=self._alive_ttl_ms)
