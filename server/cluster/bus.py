"""Node-to-node messages over Redis pub/sub: every node listens on its own channel.

A table lives on one node (its owner). A player's socket may be on another node; commands for
the table travel to the owner's channel, events for the player travel back to the node holding
the socket. Same-node traffic never touches Redis.

Sending is fire-and-forget and ordered per destination node: :meth:`NodeBus.send` only queues;
one publisher task drains the queue with pipelined ``PUBLISH`` calls, so a burst of events
costs one round trip. A message for a node that is gone is simply lost (pub/sub has no
backlog); clients recover with ``sync`` (versioned events are kept in Redis).

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
from collections.abc import Awaitable, Callable
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

Handler = Callable[[list[NodeMessage]], Awaitable[None]]
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
                 link_dir: str = "") -> None:
        """``tick``: the node's tick, which refreshes the alive key (one of its own if not
        given). ``link_peers`` (the sibling workers' ids) and ``link_dir``: the local link
        to them (off when either is empty)."""
        self._redis = redis
        self.tick = tick if tick is not None else Tick()
        # On a cluster, pub/sub and PUBLISH use a plain client of one node
        # (server/store/redis_client.py).
        self._pubsub_redis: aioredis.Redis = getattr(redis, "seed", redis)
        self._alive_ttl_ms = int(alive_ttl * 1000)
        self._alive_refresh = alive_refresh
        self._keys = keys
        self.node_id = node_id
        self._handler: Handler | None = None
        self._queue: deque[tuple[str, bytes]] = deque()
        self._wake = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._pubsub: Any = None
        self._stopping = False
        self.link: LocalLink | None = None
        if link_dir and any(peer != node_id for peer in link_peers):
            self.link = LocalLink(node_id, link_peers, link_dir, self._received_local)
        self._local: deque[NodeMessage] = deque()
        self._local_wake = asyncio.Event()

    async def start(self, handler: Handler) -> None:
        self._handler = handler
        self._pubsub = self._pubsub_redis.pubsub(ignore_subscribe_messages=True)
        # Its own channel, and the one every node hears (ended tokens).
        await self._pubsub.subscribe(self._keys.node_channel(self.node_id),
                                     self._keys.broadcast_channel)
        await self._redis.set(self._keys.node_alive(self.node_id), "1", px=self._alive_ttl_ms)
        self._tasks = [
            asyncio.create_task(self._listen(), name="bus-listen"),
            asyncio.create_task(self._publish_loop(), name="bus-publish"),
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
        with contextlib.suppress(RedisError, OSError):
            await self._redis.delete(self._keys.node_alive(self.node_id))

    def send(self, node: str, message: NodeMessage) -> None:
        """Queue ``message`` for ``node`` (never this node; callers deliver locally): over
        the local link when ``node`` is a sibling worker with the link up, else Redis."""
        data = encode(message)
        link = self.link
        if link is not None and link.send(node, data):
            return
        self._queue.append((self._keys.node_channel(node), data))
        self._wake.set()

    def broadcast(self, message: NodeMessage) -> None:
        """Queue ``message`` for every node (this one hears it too)."""
        self._queue.append((self._keys.broadcast_channel, encode(message)))
        self._wake.set()

    async def is_alive(self, node: str) -> bool:
        if node == self.node_id:
            return True
        return bool(await self._redis.exists(self._keys.node_alive(node)))

    async def _drain(self) -> None:
        while self._queue:
            batch = [self._queue.popleft() for _ in range(min(MAX_BATCH, len(self._queue)))]
            async with self._pubsub_redis.pipeline(transaction=False) as pipe:
                for channel, data in batch:
                    pipe.publish(channel, data)
                await pipe.execute()

    async def _publish_loop(self) -> None:
        while not self._stopping:
            await self._wake.wait()
            self._wake.clear()
            try:
                await self._drain()
            except (RedisError, OSError) as exc:
                log.warning("bus: publish failed, %d messages dropped: %s", len(self._queue), exc)
                self._queue.clear()

    async def _listen(self) -> None:
        assert self._pubsub is not None and self._handler is not None
        while True:
            try:
                message = await self._pubsub.get_message(
                    ignore_subscribe_messages=True, timeout=LISTEN_TIMEOUT
                )
            except (RedisError, OSError) as exc:
                log.warning("bus: listen failed, retrying: %s", exc)
                await asyncio.sleep(0.5)
                continue
            if message is None or message.get("type") != "message":
                continue
            payload = _decode(message.get("data"))
            if payload is not None:
                await self._handle([payload])

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
